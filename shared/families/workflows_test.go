package families_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/workflow"
)

// TestEveryTransition tries every (from, to) pair of each state machine
// against the service, which must allow exactly the table's moves.
func TestEveryTransition(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	ctx := context.Background()
	org := e.Org("A")
	co := apitest.Company(t0)
	cl := apitest.ClientOf(co, t0)
	e.Put(org, co, cl)
	if _, err := party.NewStore(e.DB).SetKYC(ctx, org, cl.ID, party.KYCApproved, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	matters, entries, invoices := matter.NewStore(e.DB), timeentry.NewStore(e.DB), billing.NewStore(e.DB)
	for _, from := range matter.Transitions.States() {
		for _, to := range matter.Transitions.States() {
			m := apitest.Matter(cl, from, t0)
			e.Put(org, m)
			_, err := matters.SetStatus(ctx, org, m.ID, to, time.Now())
			if allowed := slices.Contains(matter.Transitions[from], to); allowed != (err == nil) {
				t.Errorf("matter %s → %s: allowed %v, got %v", from, to, allowed, err)
			}
			if err != nil && !errors.Is(err, workflow.ErrRefused) {
				t.Errorf("matter %s → %s: %v is not a refusal", from, to, err)
			}
		}
	}
	m := apitest.Matter(cl, matter.Active, t0)
	e.Put(org, m)
	for _, from := range timeentry.Transitions.States() {
		for _, to := range timeentry.Transitions.States() {
			te := &timeentry.TimeEntry{ID: fmt.Sprintf("%s-%s", from, to), MatterID: m.ID, ClientID: cl.ID, UserID: cl.ID, Date: "2025-03-01",
				DurationMinutes: 60, HourlyRate: 100, Currency: "DKK", Status: from, CreatedAt: apitest.Stamp(t0), UpdatedAt: apitest.Stamp(t0)}
			e.Put(org, te)
			_, err := entries.SetStatus(ctx, org, te.ID, to, time.Now())
			// invoiced moves only through an invoice, never by a status change.
			allowed := slices.Contains(timeentry.Transitions[from], to) && from != timeentry.Invoiced && to != timeentry.Invoiced
			if allowed != (err == nil) {
				t.Errorf("time entry %s → %s: allowed %v, got %v", from, to, allowed, err)
			}
		}
	}
	for _, from := range billing.Transitions.States() {
		for _, to := range billing.Transitions.States() {
			v := &billing.Invoice{ID: fmt.Sprintf("inv-%s-%s", from, to), Number: fmt.Sprintf("T-%s-%s", from, to), MatterID: m.ID, ClientID: cl.ID,
				Status: from, IssueDate: "2025-03-01", DueDate: "2025-03-31", Currency: "DKK", Total: 100,
				Lines: []billing.Line{{Description: "x", Amount: 100}}, CreatedAt: apitest.Stamp(t0), UpdatedAt: apitest.Stamp(t0)}
			e.Put(org, v)
			_, err := invoices.SetStatus(ctx, org, v.ID, to, time.Now())
			if allowed := slices.Contains(billing.Transitions[from], to); allowed != (err == nil) {
				t.Errorf("invoice %s → %s: allowed %v, got %v", from, to, allowed, err)
			}
		}
	}
	// Spot checks of the rules the tables encode.
	if slices.Contains(billing.Transitions[billing.Paid], billing.Draft) {
		t.Fatal("a paid invoice may go back to draft")
	}
}

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
		types = append(types, attrS(ev, "type"))
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

func TestInvoiceAndDocumentReads(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	co, pe := apitest.Company(t0), apitest.Person(t0)
	c1, c2 := apitest.ClientOf(co, t0), apitest.ClientOf(pe, t0)
	m1, m2 := apitest.Matter(c1, matter.Active, t0), apitest.Matter(c2, matter.Active, t0)
	e.Put(org, co, pe, c1, c2, m1, m2)
	var all []*billing.Invoice
	for i := range 12 {
		m := []*struct{ id, client string }{{m1.ID, c1.ID}, {m2.ID, c2.ID}}[i%2]
		v := &billing.Invoice{ID: fmt.Sprintf("%08d-0000-4000-8000-000000000001", i), Number: fmt.Sprintf("INV-%d", i), MatterID: m.id, ClientID: m.client,
			Status: billing.Statuses[i%len(billing.Statuses)], IssueDate: t0.AddDate(0, 0, i*7).Format(time.DateOnly), DueDate: t0.AddDate(0, 0, i*7+30).Format(time.DateOnly),
			Currency: "DKK", Total: int64(1000 * (i + 1)), Lines: []billing.Line{{Description: "a", Amount: int64(1000 * (i + 1))}},
			CreatedAt: apitest.Stamp(t0), UpdatedAt: apitest.Stamp(t0)}
		all = append(all, v)
		e.Put(org, v)
	}
	pick := func(keep func(*billing.Invoice) bool) []string {
		var out []string
		for _, v := range all {
			if keep(v) {
				out = append(out, v.ID)
			}
		}
		return out
	}
	day := func(i int) string { return t0.AddDate(0, 0, i).Format(time.DateOnly) }
	for q, want := range map[string][]string{
		"":                   pick(func(*billing.Invoice) bool { return true }),
		"matter_id=" + m1.ID: pick(func(v *billing.Invoice) bool { return v.MatterID == m1.ID }),
		"client_id=" + c2.ID: pick(func(v *billing.Invoice) bool { return v.ClientID == c2.ID }),
		"status=paid":        pick(func(v *billing.Invoice) bool { return v.Status == billing.Paid }),
		"issue_date_from=" + day(14) + "&issue_date_to=" + day(35): pick(func(v *billing.Invoice) bool { return v.IssueDate >= day(14) && v.IssueDate <= day(35) }),
		"client_id=" + c1.ID + "&status=sent":                      pick(func(v *billing.Invoice) bool { return v.ClientID == c1.ID && v.Status == billing.Sent }),
	} {
		got := collect(t, e, "/api/v1/invoices?per_page=3&"+q, key)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%q: got %v, want %v", q, got, want)
		}
	}
	list := e.Get("/api/v1/invoices", key)
	if _, ok := list.Data()[0]["lines"]; ok {
		t.Fatal("the list carries lines")
	}
	one := e.Get("/api/v1/invoices/"+all[0].ID, key).Body["data"].(map[string]any)
	if lines, _ := one["lines"].([]any); len(lines) != 1 || one["total"] != 1000.0 || one["currency"] != "DKK" {
		t.Fatalf("single read %v", one)
	}
	for _, bad := range []string{"status=unpaid", "issue_date_from=2025-02-30", "issue_date_from=2025-03-02&issue_date_to=2025-03-01", "matter_id=x"} {
		if r := e.Get("/api/v1/invoices?"+bad, key); r.Status != 422 {
			t.Errorf("%s: %d", bad, r.Status)
		}
	}

	docs := document.NewStore(e.DB)
	for i := range 6 {
		m := []string{m1.ID, m2.ID}[i%2]
		if _, err := docs.Create(context.Background(), org, document.NewDocument{MatterID: m, Name: fmt.Sprintf("Bilag %d", i), Filename: fmt.Sprintf("b%d.pdf", i),
			MimeType: "application/pdf", SizeBytes: int64(i), Folder: []string{"Kontrakter", "Notater", "Kontrakter"}[i%3]}, t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for q, n := range map[string]int{"": 6, "matter_id=" + m1.ID: 3, "folder=Kontrakter": 4, "folder=Kontrakter&matter_id=" + m2.ID: 2,
		"updated_since=" + apitest.Stamp(t0.Add(4*time.Hour)): 2, "folder=Ukendt": 0} {
		if got := collect(t, e, "/api/v1/documents?per_page=2&"+q, key); len(got) != n {
			t.Errorf("documents %q: %d, want %d", q, len(got), n)
		}
	}
	// Metadata only: no field could carry bytes, a URL or a preview.
	allowed := []string{"id", "matter_id", "name", "filename", "mime_type", "size_bytes", "folder", "signing_flow_id", "signed_at", "created_at", "updated_at"}
	for _, d := range e.Get("/api/v1/documents", key).Data() {
		for k, v := range d {
			if !slices.Contains(allowed, k) {
				t.Fatalf("document field %s", k)
			}
			if s, ok := v.(string); ok && (strings.Contains(s, "://") || len(s) > 300) {
				t.Fatalf("document field %s looks like content or a link: %q", k, s)
			}
		}
		mustStatus(t, e.Get("/api/v1/documents/"+d["id"].(string), key), 200)
	}
}
