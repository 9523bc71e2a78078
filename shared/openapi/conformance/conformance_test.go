package conformance

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const (
	id      = "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10"
	matter  = `{"data":{"id":"` + id + `","client_id":"` + id + `","matter_number":"SAG-1","status":"dormant","hourly_rate":null,"currency":"DKK","created_at":"2025-03-01T12:00:00.000000Z","updated_at":"2025-03-01T12:00:00.000000Z"}}`
	etag    = `"0123456789abcdef0123456789abcdef"`
	invalid = `{"code":"invalid_request","message":"status must be one of active, dormant, closed, archived","field":"status","errors":[{"field":"status","message":"status must be one of active, dormant, closed, archived"}]}`
)

// counted sets what every counted answer carries.
func counted(h http.Header) {
	h.Set("X-Request-Id", "r")
	h.Set("X-RateLimit-Limit", "120")
	h.Set("X-RateLimit-Remaining", "119")
	h.Set("X-RateLimit-Reset", "1700000000")
	h.Set("RateLimit-Policy", `"default";q=120;w=60`)
	h.Set("RateLimit", `"default";r=119;t=30`)
	h.Set("Cache-Control", "no-store")
}

// The checker must catch each kind of drift; a checker that passes
// everything would make the API tests' check meaningless.
func TestCheckerCatchesDrift(t *testing.T) {
	t.Setenv("OPENAPI_COVERAGE", "") // these exchanges are made up: not the API's
	cases := []struct {
		name, method, path, body string
		auth                     bool
		status                   int
		header                   func(http.Header)
		resp                     string
		want                     string // "" = conforms
	}{
		{"conforming read", "GET", "/api/v1/matters/" + id, "", true, 200, func(h http.Header) { counted(h); h.Set("ETag", etag) }, matter, ""},
		{"undocumented field", "GET", "/api/v1/matters/" + id, "", true, 200, func(h http.Header) { counted(h); h.Set("ETag", etag) },
			strings.Replace(matter, `"status"`, `"secret_note":"x","status"`, 1), "secret_note"},
		{"missing required field", "GET", "/api/v1/matters/" + id, "", true, 200, func(h http.Header) { counted(h); h.Set("ETag", etag) },
			strings.Replace(matter, `"matter_number":"SAG-1",`, "", 1), "matter_number"},
		{"null where not nullable", "GET", "/api/v1/matters/" + id, "", true, 200, func(h http.Header) { counted(h); h.Set("ETag", etag) },
			strings.Replace(matter, `"currency":"DKK"`, `"currency":null`, 1), "currency"},
		{"malformed timestamp", "GET", "/api/v1/matters/" + id, "", true, 200, func(h http.Header) { counted(h); h.Set("ETag", etag) },
			strings.Replace(matter, `"created_at":"2025-03-01T12:00:00.000000Z"`, `"created_at":"2025-03-01 12:00"`, 1), "created_at"},
		{"missing rate-limit header", "GET", "/api/v1/matters/" + id, "", true, 200, func(h http.Header) {
			counted(h)
			h.Set("ETag", etag)
			h.Del("X-RateLimit-Remaining")
		}, matter, "X-RateLimit-Remaining"},
		{"missing ETag", "GET", "/api/v1/matters/" + id, "", true, 200, counted, matter, "ETag"},
		{"undocumented status", "GET", "/api/v1/matters/" + id, "", true, 418, counted, `{"code":"internal_error","message":"teapot"}`, "status not documented"},
		{"422 without errors", "GET", "/api/v1/matters?status=bogus", "", true, 422, counted, `{"code":"invalid_request","message":"bad"}`, "field"},
		{"conforming 422", "GET", "/api/v1/matters?status=bogus", "", true, 422, counted, invalid, ""},
		{"invalid filter accepted", "GET", "/api/v1/matters?status=bogus", "", true, 200, counted,
			`{"data":[],"meta":{"per_page":50,"count":0,"has_more":false,"next_cursor":null},"links":{"next":null}}`, "the document refuses the request"},
		{"per_page over the maximum accepted", "GET", "/api/v1/matters?per_page=101", "", true, 200, counted,
			`{"data":[],"meta":{"per_page":101,"count":0,"has_more":false,"next_cursor":null},"links":{"next":null}}`, "per_page"},
		{"create without Idempotency-Key accepted", "POST", "/api/v1/people", `{"name":"A","email":"a@example.dk"}`, true, 201,
			func(h http.Header) { counted(h); h.Set("Location", "/api/v1/people/"+id) },
			`{"data":{"id":"` + id + `","name":"A","email":"a@example.dk","created_at":"2025-03-01T12:00:00Z","updated_at":"2025-03-01T12:00:00Z"}}`,
			"Idempotency-Key"},
		{"unknown body field accepted", "POST", "/api/v1/webhooks", `{"url":"https://x.example","event_types":["matter.created"],"colour":"red"}`, true, 201,
			func(h http.Header) { counted(h); h.Set("Location", "/api/v1/webhooks/"+id) },
			`{"data":{"id":"` + id + `","url":"https://x.example","event_types":["matter.created"],"is_active":true,"consecutive_failures":0,"created_at":"2025-03-01T12:00:00Z","updated_at":"2025-03-01T12:00:00Z"},"secret":"s"}`,
			"colour"},
		{"unauthenticated request answered", "GET", "/api/v1/matters/" + id, "", false, 200, func(h http.Header) { counted(h); h.Set("ETag", etag) }, matter, "Authorization"},
		{"conforming 401", "GET", "/api/v1/matters", "", false, 401, func(h http.Header) {
			h.Set("X-Request-Id", "r")
			h.Set("WWW-Authenticate", `Bearer realm="api"`)
		}, `{"code":"unauthenticated","message":"missing Authorization header"}`, ""},
		{"401 without WWW-Authenticate", "GET", "/api/v1/matters", "", false, 401, func(h http.Header) { h.Set("X-Request-Id", "r") },
			`{"code":"unauthenticated","message":"missing Authorization header"}`, "WWW-Authenticate"},
		{"unknown path answered", "GET", "/api/v1/secrets", "", true, 200, counted, `{}`, "not in the document"},
		{"unknown path 404", "GET", "/api/v1/secrets", "", true, 404, counted, `{"code":"no_such_endpoint","message":"no such endpoint: GET /api/v1/secrets"}`, ""},
		{"body on a 204", "DELETE", "/api/v1/webhooks/" + id, "", true, 204, counted, `{"deleted":true}`, "no body"},
		{"304 without ETag", "GET", "/api/v1/matters/" + id, "", true, 304, counted, "", "ETag"},
		{"unknown report type", "GET", "/api/v1/reports/nope", "", true, 404, counted, `{"code":"not_found","message":"no report nope"}`, ""},
		{"error without a code", "GET", "/api/v1/reports/nope", "", true, 404, counted, `{"message":"no report nope"}`, "code"},
		{"error with an unknown code", "GET", "/api/v1/reports/nope", "", true, 404, counted, `{"code":"nope","message":"no report nope"}`, "code"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checker, err := New()
			if err != nil {
				t.Fatal(err)
			}
			h := checker.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.header(w.Header())
				if c.resp != "" {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.resp))
			}))
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			if c.auth {
				req.Header.Set("Authorization", "Bearer pa_test_x")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			probs := checker.Problems()
			switch {
			case c.want == "" && len(probs) > 0:
				t.Fatalf("a conforming exchange was refused: %v", probs)
			case c.want != "" && (len(probs) == 0 || !strings.Contains(strings.Join(probs, "\n"), c.want)):
				t.Fatalf("want a mismatch naming %q, got %v", c.want, probs)
			}
			if checker.Exchanges() != 1 {
				t.Fatalf("%d exchanges checked", checker.Exchanges())
			}
		})
	}
}

func TestCheckerChecksDeliveries(t *testing.T) {
	t.Parallel()
	body := `{"id":"` + id + `","event":"matter.created","timestamp":"2025-03-01T12:00:00Z","organization_id":"` + id + `","sequence":1740830400000001,` +
		`"data":{"matter":{"id":"` + id + `","status":"dormant","client_id":"` + id + `","matter_number":"SAG-1"}}}`
	headers := func() http.Header {
		return http.Header{
			"Content-Type":             {"application/json"},
			"User-Agent":               {"Service-Webhook/1.0"},
			"Service-Signature":        {"t=1700000000,v1=" + strings.Repeat("ab", 32)},
			"Service-Event-Id":         {id},
			"Service-Event-Type":       {"matter.created"},
			"Service-Delivery-Attempt": {"1"},
			"Service-Event-Sequence":   {"1740830400000001"},
			"Webhook-Id":               {id},
			"Webhook-Timestamp":        {"1700000000"},
			"Webhook-Signature":        {"v1," + base64.StdEncoding.EncodeToString(make([]byte, 32))},
		}
	}
	cases := []struct {
		name   string
		change func(http.Header) string
		want   string
	}{
		{"conforming", func(http.Header) string { return body }, ""},
		{"no signature", func(h http.Header) string { h.Del("Service-Signature"); return body }, "Service-Signature"},
		{"no sequence", func(http.Header) string { return strings.Replace(body, `"sequence":1740830400000001,`, "", 1) }, "sequence"},
		{"no Standard Webhooks signature", func(h http.Header) string { h.Del("Webhook-Signature"); return body }, "webhook-signature"},
		{"attempt zero", func(h http.Header) string { h.Set("Service-Delivery-Attempt", "0"); return body }, "Service-Delivery-Attempt"},
		{"unknown event", func(h http.Header) string { h.Set("Service-Event-Type", "matter.deleted"); return body }, "matter.deleted"},
		{"undocumented field", func(http.Header) string { return strings.Replace(body, `"SAG-1"`, `"SAG-1","title":"x"`, 1) }, "title"},
		{"wrong data key", func(http.Header) string { return strings.Replace(body, `"matter":`, `"case":`, 1) }, "matter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checker, err := New()
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("POST", "https://receiver.example/hook", nil)
			r.Header = headers()
			probs := checker.CheckDelivery(r, []byte(c.change(r.Header)))
			switch {
			case c.want == "" && len(probs) > 0:
				t.Fatalf("a conforming delivery was refused: %v", probs)
			case c.want != "" && (len(probs) == 0 || !strings.Contains(strings.Join(probs, "\n"), c.want)):
				t.Fatalf("want a mismatch naming %q, got %v", c.want, probs)
			}
		})
	}
}
