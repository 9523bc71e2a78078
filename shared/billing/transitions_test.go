package billing_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
)

// TestEveryTransitionOnTheTable tries every (from, to) pair of the
// invoice's state machine against the store on DynamoDB Local, which must
// allow exactly the table's moves.
func TestEveryTransitionOnTheTable(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	cl := e.Engagement(org, party.KYCApproved, t0)
	m := apitest.Matter(cl, matter.Active, t0)
	e.Put(org, m)
	invoices := billing.NewStore(e.DB)
	for _, from := range billing.Transitions.States() {
		for _, to := range billing.Transitions.States() {
			t.Run(string(from)+" → "+string(to), func(t *testing.T) {
				v := &billing.Invoice{ID: fmt.Sprintf("inv-%s-%s", from, to), Number: fmt.Sprintf("T-%s-%s", from, to), MatterID: m.ID, ClientID: cl.ID,
					Status: from, IssueDate: "2025-03-01", DueDate: "2025-03-31", Currency: "DKK", Total: 100,
					Lines: []billing.Line{{Description: "x", Amount: 100}}, CreatedAt: apitest.Stamp(t0), UpdatedAt: apitest.Stamp(t0)}
				e.For(t).Put(org, v)
				_, err := invoices.SetStatus(t.Context(), org, v.ID, to, time.Now())
				if allowed := slices.Contains(billing.Transitions[from], to); allowed != (err == nil) {
					t.Errorf("invoice %s → %s: allowed %v, got %v", from, to, allowed, err)
				}
			})
		}
	}
	// Spot checks of the rules the table encodes.
	if slices.Contains(billing.Transitions[billing.Paid], billing.Draft) {
		t.Fatal("a paid invoice may go back to draft")
	}
}
