package families_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
)

// FuzzCreateBodies posts arbitrary bodies to every create: whatever the
// input, the answer is a 2xx or a 4xx with a JSON message, never a 5xx, and
// request and answer agree with the OpenAPI document.
func FuzzCreateBodies(f *testing.F) {
	seeds := []string{
		`{"name":"A","email":"a@example.dk"}`, `{"name":"A","cvr":"12345678"}`, `{"company_id":"%s"}`,
		`{"client_id":"%s","status":"active","hourly_rate":1250}`, `{"matter_id":"%s","date":"2025-01-01","duration_minutes":5}`,
		``, `null`, `[]`, `"x"`, `{"a":`, `{"hourly_rate":1e400}`, `{"duration_minutes":99999999999999999999}`,
		`{"name":"\u0000"}`, `{"email":{"x":1}}`, `{"client_id":"` + strings.Repeat("a", 5000) + `"}`,
		`{"date":"2025-13-45"}`, `{"cpr":{"cpr":{"cpr":1}}}`, `{"name":"` + strings.Repeat("é", 300) + `"}`,
		"\xff\xfe{}", `{"company_id":null,"person_id":null}`, `{"status":["active"]}`,
	}
	e := apitest.New(f, apitest.Options{RateLimit: 1 << 30})
	org := e.Org("fuzz")
	key := e.Key(org)
	co := e.Post("/api/v1/companies", key, "seed-co", `{"name":"Seed","cvr":"87654321"}`).Body["data"].(map[string]any)["id"].(string)
	cl := e.Post("/api/v1/clients", key, "seed-cl", `{"company_id":"`+co+`"}`).Body["data"].(map[string]any)["id"].(string)
	m := e.Post("/api/v1/matters", key, "seed-m", `{"client_id":"`+cl+`","hourly_rate":100}`).Body["data"].(map[string]any)["id"].(string)
	for _, s := range seeds {
		if strings.Contains(s, "%s") {
			for _, id := range []string{co, cl, m} {
				f.Add(fmt.Sprintf(s, id))
			}
			continue
		}
		f.Add(s)
	}
	paths := []string{"/api/v1/people", "/api/v1/companies", "/api/v1/clients", "/api/v1/matters", "/api/v1/time-entries"}
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, body string) {
		for _, p := range paths {
			r := e.For(t).Post(p, key, fmt.Sprintf("fuzz-%d", n.Add(1)), body)
			if r.Status >= 500 || r.Body["message"] == nil && r.Status >= 400 {
				t.Fatalf("POST %s %q: %d %s", p, body, r.Status, r.Raw)
			}
			if probs := e.Conformance.Problems(); len(probs) > 0 {
				t.Fatalf("POST %s %q: OpenAPI mismatch: %v", p, body, probs)
			}
		}
	})
}
