package families_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
)

func TestAuthentication(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	good, clientID := e.KeyWith(auth.KeyRequest{OrgID: org})
	other, otherClient := e.KeyWith(auth.KeyRequest{OrgID: org})
	rotated, err := e.Keys.Rotate(context.Background(), otherClient, e.Now())
	if err != nil {
		t.Fatal(err)
	}
	live, _ := e.KeyWith(auth.KeyRequest{OrgID: org, Mode: auth.ModeLive})
	// The same client and secret with the other mode's prefix.
	liveAsTest := strings.Replace(live, "pa_live_", "pa_test_", 1)
	wrongSecret := good[:len(good)-64] + strings.Repeat("0", 64)
	unknownClient := "pa_test_" + strings.Repeat("1", 32) + good[len("pa_test_")+32:]

	cases := []struct {
		name   string
		header string
		path   string
		status int
		msg    string
	}{
		{"valid", "Bearer " + good, "/api/v1/matters", 200, ""},
		{"scheme is case-insensitive", "bearer " + good, "/api/v1/matters", 200, ""},
		{"missing header", "", "/api/v1/matters", 401, "missing Authorization"},
		{"key in query string", "", "/api/v1/matters?api_key=" + good, 401, "never in the query string"},
		{"basic scheme", "Basic " + good, "/api/v1/matters", 401, "Bearer scheme"},
		{"malformed", "Bearer nonsense", "/api/v1/matters", 401, "unknown, revoked or expired"},
		{"unknown client", "Bearer " + unknownClient, "/api/v1/matters", 401, "unknown, revoked or expired"},
		{"wrong secret", "Bearer " + wrongSecret, "/api/v1/matters", 401, "unknown, revoked or expired"},
		{"mode prefix swapped", "Bearer " + liveAsTest, "/api/v1/matters", 401, "unknown, revoked or expired"},
		{"live key", "Bearer " + live, "/api/v1/matters", 200, ""},
		{"rotated secret", "Bearer " + rotated.String(), "/api/v1/matters", 200, ""},
		{"old secret after rotation", "Bearer " + other, "/api/v1/matters", 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.Server.URL+c.path, nil)
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if c.status == 401 {
				r := e.Do("GET", c.path, strings.TrimPrefix(strings.TrimPrefix(c.header, "Bearer "), "bearer "), nil)
				if c.header != "" && !strings.HasPrefix(c.header, "Bearer ") {
					return // a non-Bearer header cannot be replayed through Do
				}
				msg, _ := r.Body["message"].(string)
				if !strings.Contains(msg, c.msg) {
					t.Fatalf("message %q does not contain %q", msg, c.msg)
				}
				if r.Header.Get("WWW-Authenticate") == "" {
					t.Fatal("401 without WWW-Authenticate")
				}
			}
		})
	}
	// Failed attempts count nothing against the client's limit.
	r := e.Get("/api/v1/matters", good)
	if got := r.Header.Get("X-RateLimit-Remaining"); got != "117" { // valid, case-insensitive, this one
		t.Fatalf("remaining %s after 3 valid requests, want 117", got)
	}
	_ = clientID
}

func TestRevocationAndExpiryApplyToTheNextRequest(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	ctx := context.Background()
	org := e.Org("A")
	first, client := e.KeyWith(auth.KeyRequest{OrgID: org})
	second, err := e.Keys.Rotate(ctx, client, e.Now())
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, e.Get("/api/v1/matters", first), 200)
	tok, _ := auth.ParseToken(first)
	if err := e.Keys.RevokeSecret(ctx, client, tok.SecretID); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, e.Get("/api/v1/matters", first), 401)
	mustStatus(t, e.Get("/api/v1/matters", second.String()), 200)
	if err := e.Keys.RevokeSecret(ctx, client, tok.SecretID); err != auth.ErrNoSuchSecret {
		t.Fatalf("revoking twice: %v", err)
	}
	if err := e.Keys.Revoke(ctx, client, e.Now()); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, e.Get("/api/v1/matters", second.String()), 401)
	if _, err := e.Keys.Rotate(ctx, client, e.Now()); err != auth.ErrNoSuchClient {
		t.Fatalf("rotate of a revoked client: %v", err)
	}

	now := time.Now()
	e.SetNow(now)
	expiring, _ := e.KeyWith(auth.KeyRequest{OrgID: org, Expires: now.Add(time.Hour)})
	mustStatus(t, e.Get("/api/v1/matters", expiring), 200)
	e.SetNow(now.Add(time.Hour))
	mustStatus(t, e.Get("/api/v1/matters", expiring), 401)
}

func TestScopes(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	settingsOnly := e.Key(org, "settings:read", "settings:write")
	for _, rt := range routes.Table {
		path := strings.NewReplacer("{matter}", "x", "{client}", "x", "{person}", "x", "{company}", "x",
			"{file}", "docs.js").Replace(routes.Prefix + rt.Path)
		t.Run(rt.Name, func(t *testing.T) {
			if rt.Public {
				for _, key := range []string{"", settingsOnly, "pa_test_not_a_key"} {
					r := e.Do(rt.Method, path, key, nil)
					if r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != "" {
						t.Fatalf("public %s with key %q: %d, X-RateLimit-Limit %q", rt.Name, key, r.Status, r.Header.Get("X-RateLimit-Limit"))
					}
				}
				return
			}
			only := e.Key(org, rt.Scope)
			if r := e.Do(rt.Method, path, only, nil); r.Status == 403 || r.Status == 401 {
				t.Fatalf("key with %s: %d %s", rt.Scope, r.Status, r.Raw)
			}
			var rest []string
			for _, s := range auth.Catalogue {
				if s != rt.Scope {
					rest = append(rest, s)
				}
			}
			r := e.Do(rt.Method, path, e.Key(org, rest...), nil)
			if r.Status != 403 || r.Body["required_scope"] != rt.Scope || r.Body["message"] == "" {
				t.Fatalf("key without %s: %d %s", rt.Scope, r.Status, r.Raw)
			}
			if r.Header.Get("X-RateLimit-Limit") == "" {
				t.Fatal("403 without rate-limit headers")
			}
			if r := e.Do(rt.Method, path, settingsOnly, nil); r.Status != 403 {
				t.Fatalf("settings scopes opened %s: %d", rt.Name, r.Status)
			}
		})
	}
	if _, err := auth.ParseScopes("matters:read,matters:delete"); err == nil {
		t.Fatal("unknown scope accepted")
	}
}

func TestRateLimit(t *testing.T) {
	e := apitest.New(t, apitest.Options{RateLimit: 3})
	org := e.Org("A")
	minuteStart := time.Now().Truncate(time.Minute).Add(time.Minute)
	e.SetNow(minuteStart.Add(20 * time.Second))
	key, client := e.KeyWith(auth.KeyRequest{OrgID: org})
	second, err := e.Keys.Rotate(context.Background(), client, e.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherClient := e.Key(org)
	reset := strconv.FormatInt(minuteStart.Add(time.Minute).Unix(), 10)

	for i, k := range []string{key, second.String(), key} { // all secrets of a client share one count
		r := e.Get("/api/v1/matters/not-a-uuid", k) // errors carry the headers too
		mustStatus(t, r, 404)
		if r.Header.Get("X-RateLimit-Limit") != "3" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) || r.Header.Get("X-RateLimit-Reset") != reset {
			t.Fatalf("request %d: headers %v", i, r.Header)
		}
	}
	r := e.Get("/api/v1/matters", second.String())
	mustStatus(t, r, 429)
	if r.Header.Get("Retry-After") != "40" || r.Header.Get("X-RateLimit-Remaining") != "0" || r.Body["message"] == "" {
		t.Fatalf("429: headers %v body %s", r.Header, r.Raw)
	}
	mustStatus(t, e.Get("/api/v1/matters", otherClient), 200) // counted per client
	e.SetNow(minuteStart.Add(time.Minute))
	r = e.Get("/api/v1/matters", key)
	mustStatus(t, r, 200)
	if r.Header.Get("X-RateLimit-Remaining") != "2" {
		t.Fatalf("new window: remaining %s", r.Header.Get("X-RateLimit-Remaining"))
	}
	// After an idle spell, the stale counters are swept from the client item.
	e.SetNow(minuteStart.Add(10 * time.Minute))
	mustStatus(t, e.Get("/api/v1/matters", key), 200)
	e.SetNow(minuteStart.Add(10*time.Minute + time.Second))
	e.Calls.Reset()
	mustStatus(t, e.Get("/api/v1/matters", key), 200)
	if ops := e.Calls.Ops(); len(ops) != 2 {
		t.Fatalf("stale counters left behind: %v", ops)
	}
}

func TestConcurrentRequestsAreCountedExactly(t *testing.T) {
	e := apitest.New(t, apitest.Options{RateLimit: 25})
	org := e.Org("A")
	e.SetNow(time.Now().Truncate(time.Minute).Add(time.Minute + 10*time.Second))
	key := e.Key(org)
	statuses := make(chan int, 40)
	for range 40 {
		go func() { statuses <- e.Get("/api/v1/matters", key).Status }()
	}
	counts := map[int]int{}
	for range 40 {
		counts[<-statuses]++
	}
	if counts[200] != 25 || counts[429] != 15 {
		t.Fatalf("statuses %v, want 25×200 and 15×429", counts)
	}
}

func mustStatus(t *testing.T, r apitest.Response, want int) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Raw)
	}
}

var _ = slices.Contains[[]string]
