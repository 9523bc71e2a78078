package families_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
)

// FuzzListQueries sends arbitrary query strings to every GET: whatever the
// input, never a 5xx, and request and answer agree with the OpenAPI
// document (a query it refuses must not be answered 2xx).
func FuzzListQueries(f *testing.F) {
	for _, q := range []string{
		"", "per_page=0", "per_page=100", "per_page=101", "per_page=", "per_page=1.5", "status=", "status=active",
		"status=bogus", "client_id=x", "client_id=0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10", "updated_since=2025-01-01",
		"updated_since=2025-01-01T10:00:00+02:00", "updated_since=2025-01-01T10:00:00%2B02:00", "updated_since=2025-02-30",
		"date_from=2025-01-02&date_to=2025-01-01", "cvr=", "cvr=ab", "cvr=12-34-56-78", "type=company", "cursor=abc",
		"date_from=2025-01-01&date_to=2025-12-31", "as_of=2025-01-01", "folder=", "per_page=50&per_page=1", "%zz",
	} {
		f.Add(q)
	}
	e := apitest.New(f, apitest.Options{RateLimit: 1 << 30})
	key := e.Key(e.Org("fuzz"))
	var paths []string
	for _, rt := range routes.Table {
		if rt.Method == "GET" && !strings.Contains(rt.Path, "{") || rt.Name == "reports.get" {
			paths = append(paths, routes.Prefix+strings.Replace(rt.Path, "{type}", "time-summary", 1))
		}
	}
	paths = append(paths, routes.Prefix+"/reports/receivables-aging")
	f.Fuzz(func(t *testing.T, query string) {
		// What a client can send: bytes a request line cannot hold are escaped.
		var q strings.Builder
		for _, c := range []byte(query) {
			if c <= ' ' || c >= 0x7f || c == '#' {
				fmt.Fprintf(&q, "%%%02X", c)
			} else {
				q.WriteByte(c)
			}
		}
		for _, p := range paths {
			r := e.For(t).Get(p+"?"+q.String(), key)
			if r.Status >= 500 || r.Status >= 400 && r.Body["message"] == nil {
				t.Fatalf("GET %s?%s: %d %s", p, query, r.Status, r.Raw)
			}
			if probs := e.Conformance.Problems(); len(probs) > 0 {
				t.Fatalf("GET %s?%s: OpenAPI mismatch: %v", p, query, probs)
			}
		}
	})
}
