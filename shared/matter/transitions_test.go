package matter_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/workflow"
)

// TestEveryTransitionOnTheTable tries every (from, to) pair of the
// matter's state machine against the store on DynamoDB Local, which must
// allow exactly the table's moves and refuse the others as refusals.
func TestEveryTransitionOnTheTable(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	cl := e.Engagement(org, party.KYCApproved, t0)
	matters := matter.NewStore(e.DB)
	for _, from := range matter.Transitions.States() {
		for _, to := range matter.Transitions.States() {
			t.Run(string(from)+" → "+string(to), func(t *testing.T) {
				m := apitest.Matter(cl, from, t0)
				e.For(t).Put(org, m)
				_, err := matters.SetStatus(t.Context(), org, m.ID, to, time.Now())
				if allowed := slices.Contains(matter.Transitions[from], to); allowed != (err == nil) {
					t.Errorf("matter %s → %s: allowed %v, got %v", from, to, allowed, err)
				}
				if err != nil && !errors.Is(err, workflow.ErrRefused) {
					t.Errorf("matter %s → %s: %v is not a refusal", from, to, err)
				}
			})
		}
	}
}
