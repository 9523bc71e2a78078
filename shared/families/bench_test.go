package families_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store"
)

// bench measures requests over real HTTP and loopback DynamoDB (req(i)
// is the i-th) and reports p50 and p99 besides the mean. b.Loop runs the
// caller's set-up (seeding up to 100,000 items) once, not once per probe.
func bench(b *testing.B, req func(i int) *http.Request, want int) {
	var durations []time.Duration
	b.ReportAllocs()
	cpu, n := time.Duration(0), 0
	for i := 0; b.Loop(); i++ {
		before := cpuNow()
		r := req(i)
		start := time.Now()
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Fatalf("status %d", resp.StatusCode)
		}
		durations = append(durations, time.Since(start))
		cpu += cpuNow() - before
		n++
	}
	b.StopTimer()
	reportPercentiles(b, durations)
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/op") // this process: client and API, not the store
}

// benchGet measures GET path.
func benchGet(b *testing.B, e *apitest.Env, path, key string) {
	req, _ := http.NewRequest("GET", e.Server.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	bench(b, func(int) *http.Request { return req }, 200)
}

func BenchmarkListMatters100(b *testing.B) {
	e := apitest.New(b, apitest.Options{RateLimit: 1 << 30})
	org := e.Org("bench")
	if _, err := seed.Run(context.Background(), e.DB, org, seed.Options{Matters: 1000}); err != nil {
		b.Fatal(err)
	}
	benchGet(b, e, "/api/v1/matters?per_page=100", e.Key(org))
}

func BenchmarkGetMatter(b *testing.B) {
	e := apitest.New(b, apitest.Options{RateLimit: 1 << 30})
	org := e.Org("bench")
	if _, err := seed.Run(context.Background(), e.DB, org, seed.Options{Matters: 100}); err != nil {
		b.Fatal(err)
	}
	key := e.Key(org)
	r := e.Get("/api/v1/matters?per_page=1", key)
	benchGet(b, e, "/api/v1/matters/"+r.Data()[0]["id"].(string), key)
}

// benchPost measures creates; body(i) and key(i) vary per iteration.
func benchPost(b *testing.B, e *apitest.Env, path, key string, idem func(int) string, body func(int) string, want int) {
	bench(b, func(i int) *http.Request {
		req, _ := http.NewRequest("POST", e.Server.URL+path, strings.NewReader(body(i)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Idempotency-Key", idem(i))
		return req
	}, want)
}

func BenchmarkCreatePerson(b *testing.B) {
	e := apitest.New(b, apitest.Options{RateLimit: 1 << 30})
	key := e.Key(e.Org("bench"))
	benchPost(b, e, "/api/v1/people", key, func(i int) string { return fmt.Sprintf("p-%d", i) },
		func(i int) string { return fmt.Sprintf(`{"name":"Anne Holm","email":"anne%d@example.dk"}`, i) }, 201)
}

func BenchmarkReplayPerson(b *testing.B) {
	e := apitest.New(b, apitest.Options{RateLimit: 1 << 30})
	key := e.Key(e.Org("bench"))
	body := `{"name":"Anne Holm","email":"anne@example.dk"}`
	mustStatusB(b, e.Post("/api/v1/people", key, "same", body), 201)
	benchPost(b, e, "/api/v1/people", key, func(int) string { return "same" }, func(int) string { return body }, 200)
}

func mustStatusB(b *testing.B, r apitest.Response, want int) {
	if r.Status != want {
		b.Fatalf("status %d: %s", r.Status, r.Raw)
	}
}

// BenchmarkTimeEntryPage measures GET /time-entries?matter_id&date_from&date_to
// (one month, per_page=50) as the organisation's entries grow from 1,000 to
// 100,000: the Query reads the matter's index partition over the range, so
// the page costs the same (items-read is DynamoDB's ScannedCount, what it
// bills). The 100,000 entries are seeded in about 35 s.
func BenchmarkTimeEntryPage(b *testing.B) {
	for _, entries := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("entries=%d", entries), func(b *testing.B) {
			e := apitest.New(b, apitest.Options{RateLimit: 1 << 30})
			org := e.Org("bench")
			now := time.Date(2025, 6, 30, 12, 0, 0, 0, time.UTC)
			if _, err := seed.Run(context.Background(), e.DB, org, seed.Options{Matters: entries / 100, EntriesPerMatter: 100, Now: now,
				Rand: rand.New(rand.NewPCG(7, 7))}); err != nil {
				b.Fatal(err)
			}
			key := e.Key(org)
			m := e.Get("/api/v1/matters?per_page=1", key).Data()[0]["id"].(string)
			q := store.ListQuery{Index: "GSI2", PK: store.Collection(org, "TE", "MATTER", m), SKFrom: "2025-03-01", SKTo: "2025-03-31~", Limit: 50}
			page, err := e.DB.Query(context.Background(), q)
			if err != nil {
				b.Fatal(err)
			}
			benchGet(b, e, "/api/v1/time-entries?matter_id="+m+"&date_from=2025-03-01&date_to=2025-03-31", key)
			b.ReportMetric(float64(len(page.Items)), "items/page") // after benchGet: ResetTimer drops metrics
			b.ReportMetric(float64(page.Read), "items-read")
		})
	}
}

// reportPercentiles adds p50 and p99 of the measured durations.
func reportPercentiles(b *testing.B, durations []time.Duration) {
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds())/1000, "p99-ms")
}
