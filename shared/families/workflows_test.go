package families_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/workflow"
)

func TestWorkflowsRaiseEventsAndMoveTime(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	ctx := context.Background()
	org := e.Org("A")
	key := e.Key(org)
	co := apitest.Company(t0)
	cl := apitest.ClientOf(co, t0)
	m := apitest.Matter(cl, matter.Active, t0)
	e.Put(org, co, cl, m)
	var ids []string
	for i, st := range []timeentry.Status{timeentry.Approved, timeentry.Approved, timeentry.Draft} {
		te := &timeentry.TimeEntry{ID: fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i), MatterID: m.ID, ClientID: cl.ID, UserID: cl.ID,
			Date: "2025-03-01", DurationMinutes: 30, HourlyRate: 100000, Currency: "DKK", Status: st, CreatedAt: apitest.Stamp(t0), UpdatedAt: apitest.Stamp(t0)}
		e.Put(org, te)
		ids = append(ids, te.ID)
	}
	invoices := billing.NewStore(e.DB)
	// Unapproved time cannot be invoiced; nothing is written.
	_, err := invoices.Create(ctx, org, billing.NewInvoice{MatterID: m.ID, IssueDate: "2025-03-31", Lines: []billing.Line{{Description: "draft time", Amount: 50000, TimeEntryID: ids[2]}}}, time.Now())
	if !errors.Is(err, workflow.ErrRefused) || len(e.Items(org)["invoice"]) != 0 {
		t.Fatalf("invoice on draft time: %v", err)
	}
	v, err := invoices.Create(ctx, org, billing.NewInvoice{MatterID: m.ID, IssueDate: "2025-03-31", Status: billing.Sent, Lines: []billing.Line{
		{Description: "Rådgivning", Amount: 50000, TimeEntryID: ids[0]}, {Description: "Rådgivning", Amount: 50000, TimeEntryID: ids[1]},
		{Description: "Retsafgift", Amount: 75000}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if v.Total != 175000 || v.Number != "INV-1" || v.DueDate != "2025-04-30" || v.ClientID != cl.ID {
		t.Fatalf("invoice %+v", v)
	}
	te := e.Get("/api/v1/time-entries?status=invoiced", key)
	if len(te.Data()) != 2 || te.Data()[0]["invoice_id"] != v.ID {
		t.Fatalf("invoiced entries: %s", te.Raw)
	}
	if _, err := invoices.SetStatus(ctx, org, v.ID, billing.Paid, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := invoices.SetStatus(ctx, org, v.ID, billing.Draft, time.Now()); !errors.Is(err, workflow.ErrRefused) {
		t.Fatalf("paid → draft: %v", err)
	}
	// A cancelled invoice gives its time back as approved.
	v2, err := invoices.Create(ctx, org, billing.NewInvoice{MatterID: m.ID, IssueDate: "2025-04-01", Lines: []billing.Line{{Description: "x", Amount: 1}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := invoices.SetStatus(ctx, org, v2.ID, billing.Cancelled, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := matter.NewStore(e.DB).SetStatus(ctx, org, m.ID, matter.Closed, time.Now()); err != nil {
		t.Fatal(err)
	}
	docs := document.NewStore(e.DB)
	d, err := docs.Create(ctx, org, document.NewDocument{MatterID: m.ID, Name: "Forlig", Filename: "forlig.pdf", MimeType: "application/pdf", SizeBytes: 1234, Folder: "Kontrakter"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f, err := docs.Seal(ctx, org, d.ID, time.Now())
	if err != nil || f.Status != "sealed" {
		t.Fatalf("seal: %v %v", f, err)
	}
	if _, err := docs.Seal(ctx, org, d.ID, time.Now()); !errors.Is(err, document.ErrSealed) {
		t.Fatalf("sealing twice: %v", err)
	}
	var types []string
	for _, ev := range e.Items(org)["event"] {
		types = append(types, apitest.AttrS(ev, "type"))
	}
	sort.Strings(types)
	// The spec's and the additions (docs/api.md's table): the entry's moves
	// through the invoice, the invoices' creates and moves, the document.
	want := []string{"document.created", "document.signed", "invoice.created", "invoice.issued", "invoice.paid", "invoice.updated", "matter.closed",
		"time_entry.updated", "time_entry.updated"}
	if !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
}
