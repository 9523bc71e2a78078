package timeentry_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/timeentry"
)

// TestTimeEntryFilters: every filter of GET /time-entries, alone and
// combined, at two page sizes, against the records written; a bad value
// is a 422 naming its parameter; another organisation's matter is an
// empty page.
func TestTimeEntryFilters(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	co1, co2 := apitest.Company(t0), apitest.Company(t0)
	c1, c2 := apitest.ClientOf(co1, t0), apitest.ClientOf(co2, t0)
	m1, m2, m3 := apitest.Matter(c1, "active", t0), apitest.Matter(c1, "dormant", t0), apitest.Matter(c2, "active", t0)
	e.Put(org, co1, co2, c1, c2, m1, m2, m3)
	users := []string{"a1111111-1111-4111-8111-111111111111", "b2222222-2222-4222-8222-222222222222"}
	var all []*timeentry.TimeEntry
	for i := range 30 {
		m := []*struct{ id, client string }{{m1.ID, c1.ID}, {m2.ID, c1.ID}, {m3.ID, c2.ID}}[i%3]
		te := &timeentry.TimeEntry{ID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), MatterID: m.id, ClientID: m.client,
			UserID: users[i%2], Date: t0.AddDate(0, 0, i).Format(time.DateOnly), DurationMinutes: 30, HourlyRate: 1000,
			Currency: "DKK", Status: timeentry.Statuses[i%5], CreatedAt: apitest.Stamp(t0), UpdatedAt: apitest.Stamp(t0)}
		all = append(all, te)
		e.Put(org, te)
	}
	want := func(keep func(*timeentry.TimeEntry) bool) []string {
		var out []string
		for _, te := range all {
			if keep(te) {
				out = append(out, te.ID)
			}
		}
		return out
	}
	day := func(i int) string { return t0.AddDate(0, 0, i).Format(time.DateOnly) }
	cases := []struct {
		query string
		want  []string
	}{
		{"", want(func(*timeentry.TimeEntry) bool { return true })},
		{"matter_id=" + m1.ID, want(func(te *timeentry.TimeEntry) bool { return te.MatterID == m1.ID })},
		{"client_id=" + c1.ID, want(func(te *timeentry.TimeEntry) bool { return te.ClientID == c1.ID })},
		{"user_id=" + users[1], want(func(te *timeentry.TimeEntry) bool { return te.UserID == users[1] })},
		{"status=approved", want(func(te *timeentry.TimeEntry) bool { return te.Status == "approved" })},
		{"date_from=" + day(5) + "&date_to=" + day(9), want(func(te *timeentry.TimeEntry) bool { return te.Date >= day(5) && te.Date <= day(9) })},
		{"date_from=" + day(28), want(func(te *timeentry.TimeEntry) bool { return te.Date >= day(28) })},
		{"date_to=" + day(1), want(func(te *timeentry.TimeEntry) bool { return te.Date <= day(1) })},
		{"matter_id=" + m1.ID + "&date_from=" + day(3) + "&date_to=" + day(12), want(func(te *timeentry.TimeEntry) bool {
			return te.MatterID == m1.ID && te.Date >= day(3) && te.Date <= day(12)
		})},
		{"client_id=" + c1.ID + "&user_id=" + users[0] + "&status=draft", want(func(te *timeentry.TimeEntry) bool {
			return te.ClientID == c1.ID && te.UserID == users[0] && te.Status == "draft"
		})},
		{"matter_id=" + m2.ID + "&client_id=" + c2.ID, nil}, // contradictory filters: empty
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			for _, per := range []int{2, 100} {
				got := e.For(t).Collect(fmt.Sprintf("/api/v1/time-entries?per_page=%d&%s", per, c.query), key)
				if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
					t.Fatalf("per_page=%d: got %v\nwant %v", per, got, c.want)
				}
			}
		})
	}
	for _, bad := range []struct{ query, field string }{
		{"date_from=2025-02-30", "date_from"}, {"date_to=yesterday", "date_to"},
		{"date_from=2025-03-10&date_to=2025-03-01", "date_to"}, {"status=billed", "status"},
		{"matter_id=nope", "matter_id"}, {"user_id=1", "user_id"}, {"client_id=x", "client_id"},
	} {
		r := e.Get("/api/v1/time-entries?"+bad.query, key)
		if r.Status != 422 || r.Body["field"] != bad.field {
			t.Errorf("%s: %d %s", bad.query, r.Status, r.Raw)
		}
	}
	// Another organisation's matter: an empty page.
	other := e.Key(e.Org("B"))
	if r := e.Get("/api/v1/time-entries?matter_id="+m1.ID, other); r.Status != 200 || len(r.Data()) != 0 {
		t.Fatalf("foreign matter: %d %d", r.Status, len(r.Data()))
	}
}
