package timeentry_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/timeentry"
)

// TestEveryTransitionOnTheTable tries every (from, to) pair of the time
// entry's state machine against the store on DynamoDB Local, which must
// allow exactly the table's moves but those into and out of invoiced,
// which only an invoice makes.
func TestEveryTransitionOnTheTable(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	cl := e.Engagement(org, party.KYCApproved, t0)
	m := apitest.Matter(cl, matter.Active, t0)
	e.Put(org, m)
	entries := timeentry.NewStore(e.DB)
	for _, from := range timeentry.Transitions.States() {
		for _, to := range timeentry.Transitions.States() {
			t.Run(string(from)+" → "+string(to), func(t *testing.T) {
				te := &timeentry.TimeEntry{ID: fmt.Sprintf("%s-%s", from, to), MatterID: m.ID, ClientID: cl.ID, UserID: cl.ID, Date: "2025-03-01",
					DurationMinutes: 60, HourlyRate: 100, Currency: "DKK", Status: from, CreatedAt: apitest.Stamp(t0), UpdatedAt: apitest.Stamp(t0)}
				e.For(t).Put(org, te)
				_, err := entries.SetStatus(t.Context(), org, te.ID, to, time.Now())
				// invoiced moves only through an invoice, never by a status change.
				allowed := slices.Contains(timeentry.Transitions[from], to) && from != timeentry.Invoiced && to != timeentry.Invoiced
				if allowed != (err == nil) {
					t.Errorf("time entry %s → %s: allowed %v, got %v", from, to, allowed, err)
				}
			})
		}
	}
}
