package timeentry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/workflow"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

func TestAmountRoundsHalfUpToWholeØre(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ minutes, rate, want int64 }{
		{60, 100000, 100000},
		{90, 185000, 277500},
		{1, 30, 1},         // 0.5 øre rounds up
		{1, 29, 0},         // 0.48 øre rounds down
		{1, 89, 1},         // 1.48
		{1, 90, 2},         // 1.5
		{7, 100001, 11667}, // 11666.78
		{1440, 0, 0},
		{1440, 10_000_000, 240_000_000},
	} {
		if got := timeentry.Amount(c.minutes, c.rate); got != c.want {
			t.Errorf("Amount(%d min, %d/h) = %d, want %d", c.minutes, c.rate, got, c.want)
		}
	}
}

// TestManualMoves: the approval flow may make every move of the table but
// the ones into and out of invoiced, which belong to invoices.
func TestManualMoves(t *testing.T) {
	t.Parallel()
	allowed := map[[2]timeentry.Status]bool{
		{timeentry.Draft, timeentry.Submitted}: true, {timeentry.Draft, timeentry.WrittenOff}: true,
		{timeentry.Submitted, timeentry.Draft}: true, {timeentry.Submitted, timeentry.Approved}: true, {timeentry.Submitted, timeentry.WrittenOff}: true,
		{timeentry.Approved, timeentry.Submitted}: true, {timeentry.Approved, timeentry.WrittenOff}: true,
	}
	for _, from := range timeentry.Statuses {
		for _, to := range timeentry.Statuses {
			err := timeentry.CheckManual(from, to)
			if (err == nil) != allowed[[2]timeentry.Status{from, to}] || (err != nil && !errors.Is(err, workflow.ErrRefused)) {
				t.Errorf("%s → %s: %v", from, to, err)
			}
		}
	}
	// The table itself lets invoices move time both ways.
	if timeentry.Transitions.Check("time entry", timeentry.Approved, timeentry.Invoiced) != nil ||
		timeentry.Transitions.Check("time entry", timeentry.Invoiced, timeentry.Approved) != nil {
		t.Fatal("the table does not let an invoice bill and release time")
	}
}

func TestBillAndRelease(t *testing.T) {
	t.Parallel()
	for _, st := range timeentry.Statuses {
		te := timeentry.TimeEntry{ID: "e", Status: st, UpdatedAt: "2025-03-01T09:00:00.000000Z"}
		err := te.Bill("inv-1", t0.Add(time.Hour))
		if st != timeentry.Approved {
			if !errors.Is(err, workflow.ErrRefused) || te.Status != st || te.InvoiceID != "" {
				t.Errorf("billing %s time: %v, now %s", st, err, te.Status)
			}
			continue
		}
		if err != nil || te.Status != timeentry.Invoiced || te.InvoiceID != "inv-1" || te.UpdatedAt <= "2025-03-01T09:00:00.000000Z" {
			t.Fatalf("billing approved time: %v %+v", err, te)
		}
		if te.Release("inv-2", t0) || te.Status != timeentry.Invoiced {
			t.Fatal("another invoice released the entry")
		}
		if !te.Release("inv-1", t0.Add(2*time.Hour)) || te.Status != timeentry.Approved || te.InvoiceID != "" {
			t.Fatalf("release: %+v", te)
		}
		if te.Release("inv-1", t0) {
			t.Fatal("released twice")
		}
	}
}

func TestCreateRefusesBadBodies(t *testing.T) {
	t.Parallel()
	const m = `"matter_id":"0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10","date":"2025-03-01"`
	s := timeentry.NewStore(nil)
	apitest.RefusesBodies(t, s.Create, t0, []apitest.BodyCase{
		{Body: `{"date":"2025-03-01","duration_minutes":30}`, Field: "matter_id", Says: "required"},
		{Body: `{` + m + `}`, Field: "duration_minutes", Says: "required"},
		{Body: `{` + m + `,"duration_minutes":0}`, Field: "duration_minutes", Says: ""},
		{Body: `{` + m + `,"duration_minutes":1441}`, Field: "duration_minutes", Says: "1440 is a day"},
		{Body: `{` + m + `,"duration_minutes":1.5}`, Field: "duration_minutes", Says: ""},
		{Body: `{"matter_id":"0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10","date":"1899-12-31","duration_minutes":30}`, Field: "date", Says: "between 1900-01-01 and 2100-12-31"},
		{Body: `{"matter_id":"0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10","date":"2025-02-30","duration_minutes":30}`, Field: "date", Says: ""},
		{Body: `{` + m + `,"duration_minutes":30,"status":"approved"}`, Field: "status", Says: "opens at draft"},
		{Body: `{` + m + `,"duration_minutes":30,"amount":5}`, Field: "amount", Says: "derived on every save"},
		{Body: `{` + m + `,"duration_minutes":30,"client_id":"0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10"}`, Field: "client_id", Says: "taken from the matter"},
		{Body: `{` + m + `,"duration_minutes":30,"user_id":"me"}`, Field: "user_id", Says: "UUID"},
	}...)
}

// TestTimeGoesOnOpenMattersWithARate: the refusals the matter decides,
// read from the table.
func TestTimeGoesOnOpenMattersWithARate(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	cl := e.Engagement(org, party.KYCPending, t0)
	s := timeentry.NewStore(e.DB)
	for _, c := range []struct {
		status      matter.Status
		rate        bool
		field, says string
	}{
		{matter.Closed, true, "matter_id", "is closed; time can be logged on active and dormant matters only"},
		{matter.Archived, true, "matter_id", "is archived"},
		{matter.Active, false, "hourly_rate", "has no hourly_rate"},
		{matter.Dormant, false, "hourly_rate", "has no hourly_rate"},
	} {
		m := apitest.Matter(cl, c.status, t0)
		if !c.rate {
			m.HourlyRate = nil
		}
		e.Put(org, m)
		body := fmt.Sprintf(`{"matter_id":%q,"date":"2025-03-01","duration_minutes":30}`, m.ID)
		_, _, err := s.Create(context.Background(), &idempotency.Create{Org: org, Body: []byte(body), Now: t0})
		apitest.WantInvalid(t, err, c.field, c.says)
	}
	_, _, err := s.Create(context.Background(), &idempotency.Create{Org: org, Now: t0,
		Body: []byte(`{"matter_id":"0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10","date":"2025-03-01","duration_minutes":30}`)})
	apitest.WantInvalid(t, err, "matter_id", "no matter with id")
}

// TestConcurrentApprovalsApproveOnce: approvers racing on one submitted
// entry; one approval lands, the others are refused, the entry's index
// entry moves once.
func TestConcurrentApprovalsApproveOnce(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	m := apitest.Matter(e.Engagement(org, party.KYCPending, t0), matter.Active, t0)
	te := apitest.Entry(m, timeentry.Submitted, 1, t0)
	e.Put(org, m, te)
	s := timeentry.NewStore(e.DB)
	won := len(apitest.Race(t, 6, func(int) error {
		_, err := s.SetStatus(context.Background(), org, te.ID, timeentry.Approved, time.Now())
		return err
	}, func(err error) bool { return errors.Is(err, workflow.ErrRefused) }))
	got, err := s.Get(context.Background(), org, m.ID, te.ID)
	if won != 1 || err != nil || got.Status != timeentry.Approved || got.Amount != 100000 {
		t.Fatalf("%d approvals won; entry %+v %v", won, got, err)
	}
	if _, err := s.SetStatus(context.Background(), org, te.ID, timeentry.Invoiced, time.Now()); !errors.Is(err, workflow.ErrRefused) {
		t.Fatalf("invoiced by hand: %v", err)
	}
	if _, err := s.SetStatus(context.Background(), org, "nope", timeentry.Draft, time.Now()); !errors.Is(err, timeentry.ErrNotFound) {
		t.Fatalf("unknown entry: %v", err)
	}
}
