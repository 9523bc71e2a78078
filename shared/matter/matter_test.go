package matter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/workflow"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// TestTheWorkflowIsTheSpecs restates docs/workflows.md's matter table move
// by move: the table in the code may not drift from it unnoticed.
func TestTheWorkflowIsTheSpecs(t *testing.T) {
	t.Parallel()
	allowed := map[[2]matter.Status]bool{
		{matter.Active, matter.Dormant}: true, {matter.Active, matter.Closed}: true,
		{matter.Dormant, matter.Active}: true, {matter.Dormant, matter.Closed}: true,
		{matter.Closed, matter.Active}: true, {matter.Closed, matter.Archived}: true,
	}
	for _, from := range matter.Statuses {
		for _, to := range matter.Statuses {
			err := matter.Transitions.Check("matter", from, to)
			if (err == nil) != allowed[[2]matter.Status{from, to}] {
				t.Errorf("%s → %s: %v", from, to, err)
			}
		}
	}
	for st, open := range map[matter.Status]bool{matter.Active: true, matter.Dormant: true, matter.Closed: false, matter.Archived: false, "": false} {
		if st.Open() != open {
			t.Errorf("%q.Open() = %v", st, !open)
		}
	}
}

// TestCreateRefusesBadBodies: every refusal happens before the store is
// touched (the Store has none), names its field and says why.
func TestCreateRefusesBadBodies(t *testing.T) {
	t.Parallel()
	const client = `"client_id":"0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10"`
	s := matter.NewStore(nil)
	apitest.RefusesBodies(t, s.Create, t0, []apitest.BodyCase{
		{Body: `{}`, Field: "client_id", Says: "required"},
		{Body: `{"client_id":"nope"}`, Field: "client_id", Says: "UUID"},
		{Body: `{` + client + `,"status":"closed"}`, Field: "status", Says: "imported as dormant or active"},
		{Body: `{` + client + `,"status":"archived"}`, Field: "status", Says: "imported as dormant or active"},
		{Body: `{` + client + `,"status":"open"}`, Field: "status", Says: "must be one of active, dormant, closed, archived"},
		{Body: `{` + client + `,"matter_number":"-1"}`, Field: "matter_number", Says: "starting with a letter or digit"},
		{Body: `{` + client + `,"currency":"EUR"}`, Field: "currency", Says: "DKK"},
		{Body: `{` + client + `,"id":"x"}`, Field: "id", Says: "assigned by the service"},
		{Body: `{` + client + `,"closed_at":"2025-01-01T00:00:00Z"}`, Field: "closed_at", Says: "assigned by the service"},
		{Body: `{` + client + `,"colour":"red"}`, Field: "colour", Says: "unknown field"},
		{Body: `{` + client + `,"hourly_rate":-1}`, Field: "hourly_rate", Says: ""},
	}...)
}

// TestActivatingChecksKYC: a matter becomes active only while its client's
// KYC is approved and unexpired, decided by the transaction's condition.
func TestActivatingChecksKYC(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	now := time.Now()
	for _, c := range []struct {
		name    string
		kyc     party.KYCStatus
		expires time.Time
		ok      bool
	}{
		{"approved", party.KYCApproved, time.Time{}, true},
		{"approved until tomorrow", party.KYCApproved, now.Add(24 * time.Hour), true},
		{"approval expired", party.KYCApproved, now.Add(-time.Hour), false},
		{"pending", party.KYCPending, time.Time{}, false},
		{"in progress", party.KYCInProgress, time.Time{}, false},
		{"rejected", party.KYCRejected, time.Time{}, false},
	} {
		co := apitest.Company(t0)
		cl := apitest.ClientOf(co, t0)
		cl.KYCStatus = c.kyc
		if !c.expires.IsZero() {
			cl.KYCExpiresAt = store.FormatTime(c.expires)
		}
		m := apitest.Matter(cl, matter.Dormant, t0)
		e.Put(org, co, cl, m)
		got, err := matter.NewStore(e.DB).SetStatus(context.Background(), org, m.ID, matter.Active, now)
		switch {
		case c.ok && (err != nil || got.Status != matter.Active):
			t.Errorf("%s: %v %v", c.name, got.Status, err)
		case !c.ok && !errors.Is(err, workflow.ErrRefused):
			t.Errorf("%s: activated (%v), want a refusal", c.name, err)
		}
	}
}

// TestConcurrentClosesCloseOnce: operators closing one matter at once; one
// close wins, the others are refused (closed → closed), one event.
func TestConcurrentClosesCloseOnce(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	m := apitest.Matter(e.Engagement(org, party.KYCApproved, t0), matter.Active, t0) // approved: it may be reopened
	e.Put(org, m)
	s := matter.NewStore(e.DB)
	won := len(apitest.Race(t, 8, func(int) error {
		_, err := s.SetStatus(context.Background(), org, m.ID, matter.Closed, time.Now())
		return err
	}, refused))
	if got, _ := s.Get(context.Background(), org, m.ID); won != 1 || got.Status != matter.Closed || got.ClosedAt == "" {
		t.Fatalf("%d closes won; matter %s closed at %q", won, got.Status, got.ClosedAt)
	}
	if n := len(e.Items(org)["event"]); n != 1 {
		t.Fatalf("%d events, want one matter.closed", n)
	}
	// Reopening clears closed_at; an unknown matter is not found.
	if got, err := s.SetStatus(context.Background(), org, m.ID, matter.Active, time.Now()); err != nil || got.ClosedAt != "" {
		t.Fatalf("reopen: %+v %v", got, err)
	}
	if _, err := s.SetStatus(context.Background(), org, "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10", matter.Closed, time.Now()); !errors.Is(err, matter.ErrNotFound) {
		t.Fatalf("unknown matter: %v", err)
	}
}

func refused(err error) bool { return errors.Is(err, workflow.ErrRefused) }
