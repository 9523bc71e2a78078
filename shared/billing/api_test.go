package billing_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/matter"
)

// TestInvoiceReads: every filter of GET /invoices, alone and combined,
// across pages of three, against the invoices written; the list carries
// no lines, a single read does; a bad filter is a 422.
func TestInvoiceReads(t *testing.T) {
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
		t.Run("?"+q, func(t *testing.T) {
			got := e.For(t).Collect("/api/v1/invoices?per_page=3&"+q, key)
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%q: got %v, want %v", q, got, want)
			}
		})
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
		t.Run("?"+bad, func(t *testing.T) {
			if r := e.For(t).Get("/api/v1/invoices?"+bad, key); r.Status != 422 {
				t.Errorf("%s: %d", bad, r.Status)
			}
		})
	}
}
