package families_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
)

// Every operation answers the edge's errors (401, 503, 413, 429) as the
// OpenAPI document describes them: apitest checks each exchange against it.
func TestEveryOperationAnswersTheEdgeErrors(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 2})
	org := e.Org("A")
	wildcard := regexp.MustCompile(`\{[a-z]+\}`)
	for _, rt := range routes.Table {
		if rt.Public {
			continue
		}
		types := []string{"wip"}
		if rt.Name == "reports.get" {
			types = append(types, "time-summary", "receivables-aging", "no-such-report")
		}
		for _, typ := range types {
			path := routes.Prefix + wildcard.ReplaceAllString(strings.Replace(rt.Path, "{type}", typ, 1), "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10")
			edgeErrors(t, e, org, rt, path)
		}
	}
}

// edgeErrors tries one operation at one path: no key, a store outage, an
// oversized body, and one request over the limit.
func edgeErrors(t *testing.T, e *apitest.Env, org string, rt routes.Route, path string) {
	t.Run(path, func(t *testing.T) {
		e := e.For(t)
		if r := e.Do(rt.Method, path, "", nil); r.Status != 401 {
			t.Fatalf("no key: %d %s", r.Status, r.Raw)
		}
		key := e.Key(org) // a client of its own: its own count
		e.Faults.Arm(apitest.FailBefore, 1)
		r := e.Do(rt.Method, path, key, nil)
		if !e.Faults.Disarm() || r.Status != 503 || r.Header.Get("Retry-After") == "" {
			t.Fatalf("store down: %d %v %s", r.Status, r.Header, r.Raw)
		}
		big := `{"name":"` + strings.Repeat("x", httpapi.DefaultMaxBodyBytes) + `"}`
		if r := e.Do(rt.Method, path, key, strings.NewReader(big)); r.Status != 413 {
			t.Fatalf("body over 1 MiB: %d %s", r.Status, r.Raw)
		}
		// The limit of 2, whatever the answers, then one over it. The
		// window is the clock's minute: when a new one begins between
		// these requests (a fresh clone's run met 08:54:00 there), the
		// count starts again, so the sequence is tried once more.
		var over apitest.Response
		for try := 0; try < 2 && over.Status != 429; try++ {
			for i := 0; i < 2; i++ {
				e.Do(rt.Method, path, key, nil)
			}
			over = e.Do(rt.Method, path, key, nil)
		}
		if over.Status != 429 || over.Header.Get("Retry-After") == "" {
			t.Fatalf("over the limit: %d %v", over.Status, over.Header)
		}
	})
}
