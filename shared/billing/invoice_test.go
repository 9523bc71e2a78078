package billing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/workflow"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// TestWhatEachStatusMeans: receivable, creatable, and the event a move
// into it raises, state by state as docs/workflows.md says.
func TestWhatEachStatusMeans(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		st              billing.Status
		open, creatable bool
		event           outbox.Type
		successors      int
	}{
		{billing.Draft, false, true, outbox.InvoiceUpdated, 3},
		{billing.Approved, false, true, outbox.InvoiceUpdated, 3},
		{billing.Sent, true, true, outbox.InvoiceIssued, 4},
		{billing.PartiallyPaid, true, false, outbox.InvoiceUpdated, 3},
		{billing.Overdue, true, false, outbox.InvoiceUpdated, 3},
		{billing.Paid, false, false, outbox.InvoicePaid, 1},
		{billing.Cancelled, false, false, outbox.InvoiceUpdated, 0},
		{billing.Credited, false, false, outbox.InvoiceUpdated, 0},
	} {
		ev := c.st.Event()
		if c.st.Open() != c.open || c.st.Creatable() != c.creatable || ev != c.event {
			t.Errorf("%s: open %v, creatable %v, event %q", c.st, c.st.Open(), c.st.Creatable(), ev)
		}
		if n := len(billing.Transitions[c.st]); n != c.successors {
			t.Errorf("%s has %d successors, want %d", c.st, n, c.successors)
		}
	}
	if len(billing.Transitions) != len(billing.Statuses) {
		t.Fatal("a status is missing from the table")
	}
	for _, back := range []billing.Status{billing.Draft, billing.Approved} {
		for _, from := range []billing.Status{billing.Sent, billing.Paid, billing.Overdue} {
			if billing.Transitions.Check("invoice", from, back) == nil {
				t.Errorf("a %s invoice may go back to %s", from, back)
			}
		}
	}
}

// TestCreateRefusesBadInput: the checks made before the store is read.
func TestCreateRefusesBadInput(t *testing.T) {
	t.Parallel()
	s := billing.NewStore(nil)
	line := []billing.Line{{Description: "Rådgivning", Amount: 100}}
	many := make([]billing.Line, billing.MaxLines+1)
	for _, c := range []struct {
		in   billing.NewInvoice
		says string
	}{
		{billing.NewInvoice{IssueDate: "2025-03-01", Lines: line, Status: billing.Paid}, "created as draft, approved or sent, not paid"},
		{billing.NewInvoice{IssueDate: "2025-03-01", Lines: line, Status: "bogus"}, "not bogus"},
		{billing.NewInvoice{IssueDate: "01-03-2025", Lines: line}, "is not YYYY-MM-DD"},
		{billing.NewInvoice{IssueDate: "2025-03-01"}, "needs 1 to 200 lines"},
		{billing.NewInvoice{IssueDate: "2025-03-01", Lines: many}, "needs 1 to 200 lines"},
		{billing.NewInvoice{IssueDate: "2025-03-01", Lines: []billing.Line{{Amount: 1}}}, "line 1 has no description"},
		{billing.NewInvoice{IssueDate: "2025-03-01", Lines: []billing.Line{line[0], {Description: strings.Repeat("ø", billing.MaxLineDescription+1)}}}, "line 2: a description is at most 500"},
	} {
		if _, err := s.Create(context.Background(), "org", c.in, t0); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want …%s…", c.in.Status, err, c.says)
		}
	}
}

type fixture struct {
	e       *apitest.Env
	org     string
	m       *matter.Matter
	entries []*timeentry.TimeEntry
}

func newFixture(t *testing.T, statuses ...timeentry.Status) *fixture {
	e := apitest.New(t, apitest.Options{})
	f := &fixture{e: e, org: e.Org("A")}
	f.m = apitest.Matter(e.Engagement(f.org, party.KYCPending, t0), matter.Active, t0)
	e.Put(f.org, f.m)
	for i, st := range statuses {
		te := apitest.Entry(f.m, st, i, t0)
		e.Put(f.org, te)
		f.entries = append(f.entries, te)
	}
	return f
}

func (f *fixture) entry(t *testing.T, i int) timeentry.TimeEntry {
	t.Helper()
	te, err := timeentry.NewStore(f.e.DB).Get(context.Background(), f.org, f.m.ID, f.entries[i].ID)
	if err != nil {
		t.Fatal(err)
	}
	return te
}

// TestInvoicesBillOnlyApprovedTime, line by line: nothing is written for a
// refused invoice, and a cancelled invoice gives its time back.
func TestInvoicesBillOnlyApprovedTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, timeentry.Approved, timeentry.Draft, timeentry.WrittenOff)
	s := billing.NewStore(f.e.DB)
	for i, says := range map[int]string{1: "time entry " + f.entries[1].ID + " is draft", 2: "is written_off"} {
		_, err := s.Create(context.Background(), f.org, billing.NewInvoice{MatterID: f.m.ID, IssueDate: "2025-03-31",
			Lines: []billing.Line{{Description: "a", Amount: 1, TimeEntryID: f.entries[0].ID}, {Description: "b", Amount: 1, TimeEntryID: f.entries[i].ID}}}, t0)
		if !errors.Is(err, workflow.ErrRefused) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), says) {
			t.Errorf("line on %s time: %v", f.entries[i].Status, err)
		}
	}
	_, err := s.Create(context.Background(), f.org, billing.NewInvoice{MatterID: f.m.ID, IssueDate: "2025-03-31",
		Lines: []billing.Line{{Description: "a", Amount: 100}, {Description: "credit", Amount: -200}}}, t0)
	if err == nil || !strings.Contains(err.Error(), "cannot be negative") {
		t.Errorf("negative total: %v", err)
	}
	if n := len(f.e.Items(f.org)["invoice"]); n != 0 || f.entry(t, 0).Status != timeentry.Approved {
		t.Fatalf("refused invoices wrote %d invoices, entry %s", n, f.entry(t, 0).Status)
	}
	v, err := s.Create(context.Background(), f.org, billing.NewInvoice{MatterID: f.m.ID, IssueDate: "2025-03-31", Status: billing.Sent,
		Lines: []billing.Line{{Description: "a", Amount: 100000, TimeEntryID: f.entries[0].ID}}}, t0)
	if err != nil || v.SentAt == "" || f.entry(t, 0).Status != timeentry.Invoiced || f.entry(t, 0).InvoiceID != v.ID {
		t.Fatalf("invoice: %+v %v; entry %+v", v, err, f.entry(t, 0))
	}
	// Sent cannot be cancelled (a credit note withdraws it); a draft can.
	if _, err := s.SetStatus(context.Background(), f.org, v.ID, billing.Cancelled, t0); !errors.Is(err, workflow.ErrRefused) {
		t.Fatalf("cancel a sent invoice: %v", err)
	}
	if _, err := s.SetStatus(context.Background(), f.org, v.ID, billing.Credited, t0); err != nil {
		t.Fatal(err)
	}
	if f.entry(t, 0).Status != timeentry.Invoiced {
		t.Fatal("a credit note gave the time back: it stays billed by the credited invoice")
	}
}

// TestConcurrentInvoicesBillAnEntryOnce: invoices racing for the same
// approved time; one bills it, the others are refused and write nothing.
func TestConcurrentInvoicesBillAnEntryOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, timeentry.Approved)
	s := billing.NewStore(f.e.DB)
	invs := make([]billing.Invoice, 6)
	var won []billing.Invoice
	for _, i := range apitest.Race(t, len(invs), func(i int) (err error) {
		invs[i], err = s.Create(context.Background(), f.org, billing.NewInvoice{MatterID: f.m.ID, IssueDate: "2025-03-31",
			Lines: []billing.Line{{Description: "a", Amount: 100000, TimeEntryID: f.entries[0].ID}}}, time.Now())
		return err
	}, func(err error) bool { return errors.Is(err, workflow.ErrRefused) }) {
		won = append(won, invs[i])
	}
	if len(won) != 1 || len(f.e.Items(f.org)["invoice"]) != 1 || f.entry(t, 0).InvoiceID != won[0].ID {
		t.Fatalf("%d invoices won, %d stored; entry billed by %s", len(won), len(f.e.Items(f.org)["invoice"]), f.entry(t, 0).InvoiceID)
	}
	// Cancelling the winner gives the time back, once.
	if _, err := s.SetStatus(context.Background(), f.org, won[0].ID, billing.Cancelled, time.Now()); err != nil {
		t.Fatal(err)
	}
	if te := f.entry(t, 0); te.Status != timeentry.Approved || te.InvoiceID != "" {
		t.Fatalf("after cancel: %+v", te)
	}
}
