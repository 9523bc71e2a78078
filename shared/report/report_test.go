package report

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/timeentry"
)

func TestAgeBucket(t *testing.T) {
	t.Parallel()
	for days, want := range map[int]string{-400: "current", -1: "current", 0: "current", 1: "1-30", 30: "1-30", 31: "31-60",
		60: "31-60", 61: "61-90", 90: "61-90", 91: "90+", 4000: "90+"} {
		if got := AgingBuckets[AgeBucket(days)]; got != want {
			t.Errorf("%d days past due: %s, want %s", days, got, want)
		}
	}
}

// TestParametersAreCheckedBeforeAnyRead: every refusal of a report's
// parameters comes before the store (the Store has none).
func TestParametersAreCheckedBeforeAnyRead(t *testing.T) {
	t.Parallel()
	s := NewStore(nil)
	now := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct{ typ, query, field, says string }{
		{"time-summary", "", "date_from", "date_from is required"},
		{"time-summary", "date_from=2025-01-01", "date_to", "date_to is required"},
		{"time-summary", "date_from=2025-01-01&date_to=2026-01-02", "date_to", "at most 366 days"},
		{"time-summary", "date_from=2025-02-30&date_to=2025-03-01", "date_from", ""},
		{"time-summary", "date_from=2025-03-02&date_to=2025-03-01", "date_to", ""},
		{"receivables-aging", "as_of=yesterday", "as_of", ""},
	} {
		q, _ := url.ParseQuery(c.query)
		_, err := s.run(context.Background(), "org", c.typ, q, now)
		he := httpapi.AnswerOf(err)
		if err == nil || he.Status != 422 || he.Field != c.field || !strings.Contains(he.Message, c.says) {
			t.Errorf("%s?%s: %v, want a 422 on %s", c.typ, c.query, err, c.field)
		}
	}
}

func TestTotalsAndGroups(t *testing.T) {
	t.Parallel()
	by := map[string]*Totals{}
	for _, e := range []timeentry.TimeEntry{
		{UserID: "b", DurationMinutes: 30, Amount: 500},
		{UserID: "a", DurationMinutes: 60, Amount: 1000},
		{UserID: "b", DurationMinutes: 15, Amount: 250},
	} {
		bump(by, e.UserID, e)
	}
	g := groups(by)
	if len(g) != 2 || g[0].Key != "a" || g[1].Key != "b" || g[1].Entries != 2 || g[1].Minutes != 45 || g[1].Amount != 750 {
		t.Fatalf("groups %+v", g)
	}
	if len(groups(map[string]*Totals{})) != 0 || groups(nil) == nil {
		t.Fatal("no groups must be an empty list, not null")
	}
}
