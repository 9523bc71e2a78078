package families_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/httpapi"
)

// TestEveryErrorKindHasItsCode: organisations at once, each making one
// kind of mistake after a success; every answer carries the code of its
// kind (and the conformance check holds each to the documented list), a
// duplicate names the record that holds the value.
func TestEveryErrorKindHasItsCode(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 5})
	type want struct {
		status int
		code   httpapi.Code
	}
	cases := []struct {
		name string
		do   func(key string) apitest.Response
		want want
	}{
		{"no key", func(string) apitest.Response { return e.Get("/api/v1/matters", "") }, want{401, httpapi.CodeUnauthenticated}},
		{"unknown key", func(string) apitest.Response { return e.Get("/api/v1/matters", "pa_test_nope") }, want{401, httpapi.CodeUnauthenticated}},
		{"bad filter", func(k string) apitest.Response { return e.Get("/api/v1/matters?status=bogus", k) }, want{422, httpapi.CodeInvalidRequest}},
		{"absent matter", func(k string) apitest.Response {
			return e.Get("/api/v1/matters/0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10", k)
		}, want{404, httpapi.CodeNotFound}},
		{"no such path", func(k string) apitest.Response { return e.Get("/api/v1/cases", k) }, want{404, httpapi.CodeNoSuchEndpoint}},
		{"wrong method", func(k string) apitest.Response { return e.Do("DELETE", "/api/v1/matters", k, nil) }, want{405, httpapi.CodeMethodNotAllowed}},
		{"no Idempotency-Key", func(k string) apitest.Response {
			return e.Do("POST", "/api/v1/companies", k, strings.NewReader(`{"name":"X","cvr":"11111111"}`))
		}, want{422, httpapi.CodeIdempotencyKeyRequired}},
		{"key reused", func(k string) apitest.Response {
			e.Post("/api/v1/companies", k, "k-1", `{"name":"X","cvr":"22222222"}`)
			return e.Post("/api/v1/companies", k, "k-1", `{"name":"Y","cvr":"22222222"}`)
		}, want{409, httpapi.CodeIdempotencyKeyReused}},
		{"duplicate CVR", func(k string) apitest.Response {
			e.Post("/api/v1/companies", k, "k-1", `{"name":"X","cvr":"33333333"}`)
			return e.Post("/api/v1/companies", k, "k-2", `{"name":"Y","cvr":"33 33 33 33"}`)
		}, want{422, httpapi.CodeAlreadyExists}},
		{"too large", func(k string) apitest.Response {
			return e.Post("/api/v1/companies", k, "k-1", `{"name":"`+strings.Repeat("x", 2<<20)+`"}`)
		}, want{413, httpapi.CodePayloadTooLarge}},
		{"rate limit", func(k string) apitest.Response {
			for range 5 {
				e.Get("/api/v1/matters", k)
			}
			return e.Get("/api/v1/matters", k)
		}, want{429, httpapi.CodeRateLimited}},
	}
	got := make([]apitest.Response, len(cases))
	orgs := make([]string, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		orgs[i] = e.Org(fmt.Sprint("O", i))
		key := e.Key(orgs[i], "matters:read", "parties:write")
		wg.Go(func() {
			apitest.MustStatus(t, e.Get("/api/v1/matters", key), 200) // a success first
			got[i] = c.do(key)
		})
	}
	wg.Wait()
	for i, c := range cases {
		r := got[i]
		if r.Status != c.want.status || r.Body["code"] != string(c.want.code) {
			t.Errorf("%s: %d %v, want %d %s", c.name, r.Status, r.Body["code"], c.want.status, c.want.code)
		}
	}
	dup := got[8].Body
	first := e.Items(orgs[8])["company"]
	if len(first) != 1 || dup["existing_id"] != apitest.AttrS(first[0], "id") || dup["field"] != "cvr" {
		t.Fatalf("the duplicate does not name the company that holds the CVR: %v", dup)
	}
	// Every code is listed once, with a status.
	seen := map[httpapi.Code]bool{}
	for _, c := range httpapi.Codes {
		if seen[c.Code] || c.Status < 400 || c.Meaning == "" {
			t.Errorf("code %s listed twice or without status and meaning", c.Code)
		}
		seen[c.Code] = true
	}
}
