package party_test

import (
	"context"
	"slices"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/store"
)

// TestPendingCompanies finds the companies whose enrichment is pending, of
// one organisation (its Query) and of all (the Scan), and no other: done,
// failed or never enriched companies are left out, as are another
// organisation's on the Query.
func TestPendingCompanies(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{Bare: true})
	a, b := e.Org("A"), e.Org("B")
	put := func(org, id string, en *party.Enrichment) {
		c := party.Company{ID: id, Name: "Company " + id, Enrichment: en, CreatedAt: store.FormatTime(now), UpdatedAt: store.FormatTime(now)}
		c.SetKeys(org)
		item, err := store.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.DB.Put(context.Background(), item); err != nil {
			t.Fatal(err)
		}
	}
	put(a, "a-pending", &party.Enrichment{Status: party.EnrichmentPending})
	put(a, "a-done", &party.Enrichment{Status: party.EnrichmentDone})
	put(a, "a-failed", &party.Enrichment{Status: party.EnrichmentFailed})
	put(a, "a-none", nil)
	put(b, "b-pending", &party.Enrichment{Status: party.EnrichmentPending})
	found := func(org string) []string {
		var got []string
		err := party.PendingCompanies(context.Background(), e.DB, org, func(org string, c party.Company) error {
			if org == a || org == b {
				got = append(got, c.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("pending companies of %q: %v", org, err)
		}
		slices.Sort(got)
		return got
	}
	if got := found(a); !slices.Equal(got, []string{"a-pending"}) {
		t.Errorf("organisation A's pending companies: %v, want [a-pending]", got)
	}
	if got := found(""); !slices.Equal(got, []string{"a-pending", "b-pending"}) {
		t.Errorf("every organisation's pending companies: %v, want [a-pending b-pending]", got)
	}
}
