package party_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/party/engagement"
	"github.com/practice-api/practice-api/shared/store"
)

var now = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// kycCases are engagements whose KYC does or does not allow an active matter.
var kycCases = []struct {
	name    string
	status  party.KYCStatus
	expires string
	inOrder bool
}{
	{"approved, no expiry", party.KYCApproved, "", true},
	{"approved until tomorrow", party.KYCApproved, store.FormatTime(now.Add(24 * time.Hour)), true},
	{"approved until a microsecond from now", party.KYCApproved, store.FormatTime(now.Add(time.Microsecond)), true},
	{"approval expires now", party.KYCApproved, store.FormatTime(now), false},
	{"approval expired", party.KYCApproved, store.FormatTime(now.Add(-time.Hour)), false},
	{"pending", party.KYCPending, "", false},
	{"in progress", party.KYCInProgress, "", false},
	{"rejected", party.KYCRejected, "", false},
	{"rejected, with a future expiry", party.KYCRejected, store.FormatTime(now.Add(time.Hour)), false},
}

func TestKYCInOrder(t *testing.T) {
	t.Parallel()
	for _, c := range kycCases {
		cl := party.Client{KYCStatus: c.status, KYCExpiresAt: c.expires}
		if cl.KYCInOrder(now) != c.inOrder {
			t.Errorf("%s: in order %v", c.name, !c.inOrder)
		}
	}
}

// TestKYCConditionAgreesWithKYCInOrder: the condition a transaction checks
// (DynamoDB decides it) says what the Go rule says, case by case, with
// the cases checked at once.
func TestKYCConditionAgreesWithKYCInOrder(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	var wg sync.WaitGroup
	for _, c := range kycCases {
		co := apitest.Company(now)
		cl := apitest.ClientOf(co, now)
		cl.KYCStatus, cl.KYCExpiresAt = c.status, c.expires
		e.Put(org, co, cl)
		wg.Go(func() {
			pk, sk := engagement.Key(org, cl.ID)
			tx := e.DB.Tx()
			tx.CheckWhen(pk, sk, engagement.KYCInOrderCondition(now))
			err := tx.Commit(context.Background())
			if (err == nil) != c.inOrder {
				t.Errorf("%s: the condition says %v, want in order %v", c.name, err, c.inOrder)
			}
		})
	}
	wg.Wait()
}

func TestSetKYC(t *testing.T) {
	t.Parallel()
	if _, err := party.NewStore(nil).SetKYC(context.Background(), "org", "c", "approve", time.Time{}, now); err == nil ||
		!strings.Contains(err.Error(), "known: pending, in_progress, approved, rejected") {
		t.Fatalf("unknown status: %v", err)
	}
}

func TestSetKYCOnTheTable(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	cl := e.Engagement(org, party.KYCPending, now)
	s := party.NewStore(e.DB)
	got, err := s.SetKYC(context.Background(), org, cl.ID, party.KYCApproved, now.Add(time.Hour), now)
	if err != nil || !got.KYCInOrder(now) || got.KYCInOrder(now.Add(time.Hour)) {
		t.Fatalf("approve until an hour from now: %+v %v", got, err)
	}
	// A status without expiry clears the earlier one.
	if got, err = s.SetKYC(context.Background(), org, cl.ID, party.KYCApproved, time.Time{}, now); err != nil || got.KYCExpiresAt != "" {
		t.Fatalf("approve for good: %+v %v", got, err)
	}
	if _, err := s.SetKYC(context.Background(), org, "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10", party.KYCApproved, time.Time{}, now); err == nil {
		t.Fatal("an unknown client's KYC was set")
	}
}

func TestNormalForms(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{" Anne@Example.DK ": "anne@example.dk", "a@b.dk": "a@b.dk"} {
		if got := party.NormalizeEmail(in); got != want {
			t.Errorf("NormalizeEmail(%q) = %q", in, got)
		}
	}
	for in, want := range map[string]string{"12 34 56 78": "12345678", "DK-1234.5678": "12345678", "": "", "abc": "", "١٢": ""} {
		if got := party.DigitsOnly(in); got != want {
			t.Errorf("DigitsOnly(%q) = %q", in, got)
		}
	}
}

func TestCreatesRefuseBadBodies(t *testing.T) {
	t.Parallel()
	s := party.NewStore(nil)
	const uuid = `"0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10"`
	apitest.RefusesBodies(t, s.CreatePerson, now,
		apitest.BodyCase{Body: `{"email":"a@b.dk"}`, Field: "name", Says: "required"},
		apitest.BodyCase{Body: `{"name":"Anne","email":"Anne <a@b.dk>"}`, Field: "email", Says: "plain address"},
		apitest.BodyCase{Body: `{"name":"Anne","email":"a@b.dk","id":"x"}`, Field: "id", Says: "assigned by the service"})
	apitest.RefusesBodies(t, s.CreateCompany, now,
		apitest.BodyCase{Body: `{"name":"Nordlys ApS","cvr":"1234567"}`, Field: "cvr", Says: "8 digits"},
		apitest.BodyCase{Body: `{"name":"Nordlys ApS","cvr":"12345678","enrichment":{}}`, Field: "enrichment", Says: "fetches the register snapshot"},
		apitest.BodyCase{Body: `{"cvr":"12345678"}`, Field: "name", Says: "required"})
	apitest.RefusesBodies(t, s.CreateClient, now,
		apitest.BodyCase{Body: `{}`, Field: "company_id", Says: "exactly one of company_id and person_id"},
		apitest.BodyCase{Body: `{"company_id":` + uuid + `,"person_id":` + uuid + `}`, Field: "company_id", Says: "not both"},
		apitest.BodyCase{Body: `{"company_id":` + uuid + `,"kyc_status":"approved"}`, Field: "kyc_status", Says: "opens at pending"},
		apitest.BodyCase{Body: `{"person_id":` + uuid + `,"type":"person"}`, Field: "type", Says: "derived from the party"},
		apitest.BodyCase{Body: `{"person_id":"p-1"}`, Field: "person_id", Says: "UUID"})
}
