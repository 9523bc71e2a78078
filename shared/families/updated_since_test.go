package families_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/timeentry"
)

// TestUpdatedSinceOnTimeEntriesAndInvoices: organisations at once, each
// logging entries, moving them through the application's workflow and
// invoicing some, and then catching up with updated_since. Each list
// returns exactly what changed at or after the mark (by last change when
// updated_since picks the key, by date when another filter does), alone
// and with every other filter, across pages; another organisation's
// changes never show; a malformed mark is a 422 on updated_since.
func TestUpdatedSinceOnTimeEntriesAndInvoices(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	for o := range 4 {
		t.Run(fmt.Sprintf("org%d", o), func(t *testing.T) {
			t.Parallel()
			catchUp(t, e, fmt.Sprintf("org%d", o))
		})
	}
}

func catchUp(t *testing.T, e *apitest.Env, name string) {
	ctx := context.Background()
	org := e.Org(name)
	key := e.Key(org)
	cl := e.Engagement(org, party.KYCApproved, t0)
	m1, m2 := apitest.Matter(cl, matter.Active, t0), apitest.Matter(cl, matter.Active, t0)
	m2.MatterNumber = m1.MatterNumber + "-2"
	e.Put(org, m1, m2)
	// Eight entries logged on the first of March at t0 + i minutes, each on
	// a later day, half of them on each matter; all approved.
	var entries []*timeentry.TimeEntry
	for i := range 8 {
		m := m1
		if i%2 == 1 {
			m = m2
		}
		en := apitest.Entry(m, timeentry.Approved, i, t0.AddDate(0, 0, i).Add(time.Duration(i)*time.Minute))
		en.CreatedAt, en.UpdatedAt = apitest.Stamp(t0.Add(time.Duration(i)*time.Minute)), apitest.Stamp(t0.Add(time.Duration(i)*time.Minute))
		entries = append(entries, en)
		e.Put(org, en)
	}
	mark := t0.Add(time.Hour)
	// After the mark, in this order: entry 6 written off, entry 1 sent
	// back to submitted, entries 0 and 4 invoiced on one invoice (which is
	// then paid), entry 3 on another (left as sent).
	te, inv := timeentry.NewStore(e.DB), billing.NewStore(e.DB)
	at := func(min int) time.Time { return mark.Add(time.Duration(min) * time.Minute) }
	if _, err := te.SetStatus(ctx, org, entries[6].ID, timeentry.WrittenOff, at(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := te.SetStatus(ctx, org, entries[1].ID, timeentry.Submitted, at(2)); err != nil {
		t.Fatal(err)
	}
	a, err := inv.Create(ctx, org, billing.NewInvoice{MatterID: m1.ID, IssueDate: "2025-03-20", Status: billing.Sent,
		Lines: []billing.Line{{Description: "a", Amount: 100000, TimeEntryID: entries[0].ID}, {Description: "b", Amount: 100000, TimeEntryID: entries[4].ID}}}, at(3))
	if err != nil {
		t.Fatal(err)
	}
	b, err := inv.Create(ctx, org, billing.NewInvoice{MatterID: m2.ID, IssueDate: "2025-03-10", Status: billing.Sent,
		Lines: []billing.Line{{Description: "c", Amount: 100000, TimeEntryID: entries[3].ID}}}, at(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inv.SetStatus(ctx, org, a.ID, billing.Paid, at(5)); err != nil {
		t.Fatal(err)
	}
	// An invoice issued before the mark, unchanged since: in no catch-up.
	old, err := inv.Create(ctx, org, billing.NewInvoice{MatterID: m1.ID, IssueDate: "2025-03-01", Lines: []billing.Line{{Description: "d", Amount: 5}}}, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	id := func(is ...int) []string {
		var out []string
		for _, i := range is {
			out = append(out, entries[i].ID)
		}
		return out
	}
	since := "updated_since=" + apitest.Stamp(mark)
	cases := []struct {
		path string
		want []string
	}{
		// By last change: written off, submitted, then the three invoiced
		// in the order of their invoices (0 and 4 at one instant: by id).
		{"/api/v1/time-entries?" + since, id(6, 1, 0, 4, 3)},
		{"/api/v1/time-entries?" + since + "&status=invoiced", id(0, 4, 3)},
		{"/api/v1/time-entries?" + since + "&date_from=2025-03-03&date_to=2025-03-05", id(4, 3)},
		{"/api/v1/time-entries?updated_since=" + apitest.Stamp(at(3)), id(0, 4, 3)}, // inclusive
		{"/api/v1/time-entries?updated_since=2030-01-01", nil},
		// With a key filter: by entry date, updated_since narrows.
		{"/api/v1/time-entries?" + since + "&matter_id=" + m1.ID, id(0, 4, 6)},
		{"/api/v1/time-entries?" + since + "&client_id=" + cl.ID + "&status=invoiced", id(0, 3, 4)},
		{"/api/v1/time-entries?" + since + "&user_id=" + cl.ID, id(0, 1, 3, 4, 6)},
		{"/api/v1/time-entries?status=approved", id(2, 5, 7)},
		{"/api/v1/invoices?" + since, []string{b.ID, a.ID}},
		{"/api/v1/invoices?" + since + "&status=paid", []string{a.ID}},
		{"/api/v1/invoices?" + since + "&issue_date_from=2025-03-15", []string{a.ID}},
		{"/api/v1/invoices?" + since + "&matter_id=" + m2.ID, []string{b.ID}},
		{"/api/v1/invoices?" + since + "&client_id=" + cl.ID, []string{b.ID, a.ID}}, // by issue date
		{"/api/v1/invoices?updated_since=" + apitest.Stamp(at(5)), []string{a.ID}},
		{"/api/v1/invoices?issue_date_from=2025-01-01", []string{old.ID, b.ID, a.ID}}, // by issue date
	}
	for _, c := range cases {
		for _, per := range []int{1, 2, 50} {
			got := collect(t, e, c.path+fmt.Sprintf("&per_page=%d", per), key)
			if !slices.Equal(got, c.want) && (len(got) > 0 || len(c.want) > 0) {
				t.Errorf("%s per_page=%d: got %v\nwant %v", c.path, per, got, c.want)
			}
		}
	}
	for _, path := range []string{"/api/v1/time-entries", "/api/v1/invoices"} {
		for _, bad := range []string{"updated_since=2025-03-01T10:00:00+02:00", "updated_since=yesterday", "updated_since=2025-02-30"} {
			r := e.Get(path+"?"+bad, key)
			apitest.MustStatus(t, r, 422)
			if f := r.Body["field"]; f != "updated_since" {
				t.Errorf("%s?%s: 422 on %q, want updated_since", path, bad, f)
			}
		}
	}
}
