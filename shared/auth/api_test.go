package auth_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/store"
)

// TestAuthentication: a Bearer key of a live client (either secret after
// a rotation, either mode) is let in; a missing, misplaced, malformed,
// unknown, wrong or mode-swapped key is a 401 with WWW-Authenticate and
// costs the client nothing of its limit.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	// One minute's window for every request: the limit's remaining count
	// below would start again across a minute's boundary (it did, once).
	e.SetNow(time.Now().Truncate(time.Minute).Add(30 * time.Second))
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
			e := e.For(t)
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

// TestRevocationAndExpiryApplyToTheNextRequest: a revoked secret, a
// revoked client and an expired key are refused from the next request
// on; revoking twice and rotating a revoked client are errors.
func TestRevocationAndExpiryApplyToTheNextRequest(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	ctx := context.Background()
	org := e.Org("A")
	first, client := e.KeyWith(auth.KeyRequest{OrgID: org})
	second, err := e.Keys.Rotate(ctx, client, e.Now())
	if err != nil {
		t.Fatal(err)
	}
	apitest.MustStatus(t, e.Get("/api/v1/matters", first), 200)
	tok, _ := auth.ParseToken(first)
	if err := e.Keys.RevokeSecret(ctx, client, tok.SecretID); err != nil {
		t.Fatal(err)
	}
	apitest.MustStatus(t, e.Get("/api/v1/matters", first), 401)
	apitest.MustStatus(t, e.Get("/api/v1/matters", second.String()), 200)
	if err := e.Keys.RevokeSecret(ctx, client, tok.SecretID); err != auth.ErrNoSuchSecret {
		t.Fatalf("revoking twice: %v", err)
	}
	if err := e.Keys.Revoke(ctx, client, e.Now()); err != nil {
		t.Fatal(err)
	}
	apitest.MustStatus(t, e.Get("/api/v1/matters", second.String()), 401)
	if _, err := e.Keys.Rotate(ctx, client, e.Now()); err != auth.ErrNoSuchClient {
		t.Fatalf("rotate of a revoked client: %v", err)
	}

	now := time.Now()
	e.SetNow(now)
	expiring, _ := e.KeyWith(auth.KeyRequest{OrgID: org, Expires: now.Add(time.Hour)})
	apitest.MustStatus(t, e.Get("/api/v1/matters", expiring), 200)
	e.SetNow(now.Add(time.Hour))
	apitest.MustStatus(t, e.Get("/api/v1/matters", expiring), 401)
}

// TestScopes: every route of the table opens to a key with its scope
// alone and answers 403 naming it to a key with every other scope;
// public routes need no key and count nothing.
func TestScopes(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	settingsOnly := e.Key(org, "settings:read", "settings:write")
	for _, rt := range routes.Table {
		path := strings.NewReplacer("{matter}", "x", "{client}", "x", "{person}", "x", "{company}", "x",
			"{file}", "docs.js").Replace(routes.Prefix + rt.Path)
		t.Run(rt.Name, func(t *testing.T) {
			e := e.For(t)
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

// TestRateLimit: a client's secrets share one count per minute, shown on
// every answer (errors too); the request over the limit is a 429 with
// Retry-After to the minute's end; another client has its own count; a
// new minute starts again and stale counters are swept.
func TestRateLimit(t *testing.T) {
	t.Parallel()
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
		apitest.MustStatus(t, r, 404)
		if r.Header.Get("X-RateLimit-Limit") != "3" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) || r.Header.Get("X-RateLimit-Reset") != reset {
			t.Fatalf("request %d: headers %v", i, r.Header)
		}
	}
	r := e.Get("/api/v1/matters", second.String())
	apitest.MustStatus(t, r, 429)
	if r.Header.Get("Retry-After") != "40" || r.Header.Get("X-RateLimit-Remaining") != "0" || r.Body["message"] == "" {
		t.Fatalf("429: headers %v body %s", r.Header, r.Raw)
	}
	apitest.MustStatus(t, e.Get("/api/v1/matters", otherClient), 200) // counted per client
	e.SetNow(minuteStart.Add(time.Minute))
	r = e.Get("/api/v1/matters", key)
	apitest.MustStatus(t, r, 200)
	if r.Header.Get("X-RateLimit-Remaining") != "2" {
		t.Fatalf("new window: remaining %s", r.Header.Get("X-RateLimit-Remaining"))
	}
	// After an idle spell, the stale counters are swept from the client item.
	e.SetNow(minuteStart.Add(10 * time.Minute))
	apitest.MustStatus(t, e.Get("/api/v1/matters", key), 200)
	e.SetNow(minuteStart.Add(10*time.Minute + time.Second))
	e.Calls.Reset()
	apitest.MustStatus(t, e.Get("/api/v1/matters", key), 200)
	if ops := e.Calls.Ops(); len(ops) != 3 {
		t.Fatalf("stale counters left behind: %v", ops)
	}
}

// TestConcurrentRequestsAreCountedExactly: 40 requests at once against a
// limit of 25: exactly 25 answered, 15 refused with 429.
func TestConcurrentRequestsAreCountedExactly(t *testing.T) {
	t.Parallel()
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

// TestPerClientLimitsAndOrganisationCeiling: a key's own limit replaces
// the stage's for it alone, in its headers and its 429s; an
// organisation's keys may together hold at most its ceiling, kept when
// keys are made, given limits or revoked, also when many such changes
// race (the losers are refused, never let through).
func TestPerClientLimitsAndOrganisationCeiling(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 5})
	ctx := context.Background()
	org := e.Org("A")
	e.SetNow(time.Now().Truncate(time.Minute).Add(time.Minute + 5*time.Second))
	if _, err := e.Keys.SetCeiling(ctx, org, 100); err != nil {
		t.Fatal(err)
	}
	fast, fastID := e.KeyWith(auth.KeyRequest{OrgID: org, RateLimit: 20})
	slow := e.Key(org) // the stage's 5
	// Both keys at once, each past its own limit: exact counts, apart.
	type result struct {
		key    string
		status int
		limit  string
	}
	results := make(chan result, 50)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := fast
			if i%2 == 1 {
				k = slow
			}
			r := e.Get("/api/v1/matters", k)
			results <- result{k, r.Status, r.Header.Get("X-RateLimit-Limit")}
		}()
	}
	wg.Wait()
	close(results)
	counts := map[string]map[int]int{fast: {}, slow: {}}
	for r := range results {
		counts[r.key][r.status]++
		if want := map[string]string{fast: "20", slow: "5"}[r.key]; r.limit != want {
			t.Errorf("X-RateLimit-Limit %s, want %s", r.limit, want)
		}
	}
	if counts[fast][200] != 20 || counts[fast][429] != 5 || counts[slow][200] != 5 || counts[slow][429] != 20 {
		t.Fatalf("per key: fast %v, slow %v", counts[fast], counts[slow])
	}

	// Limits so far: 20 + 5 = 25 of 100. Twenty keys of 10 race for the
	// remaining 75: seven fit, the rest are refused, whatever the order.
	var made, refused atomic.Int64
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := e.Keys.CreateKey(ctx, auth.KeyRequest{OrgID: org, Mode: auth.ModeTest, Scopes: auth.Catalogue, RateLimit: 10}, e.Now())
			switch {
			case err == nil:
				made.Add(1)
			case errors.Is(err, auth.ErrCeiling) || strings.Contains(err.Error(), "keeps changing"):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	refs, err := e.Keys.Keys(ctx, org)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, r := range refs {
		if r.RevokedAt == "" {
			sum += map[bool]int{true: r.RateLimit, false: 5}[r.RateLimit > 0]
		}
	}
	if sum > 100 || made.Load() > 7 || made.Load()+refused.Load() != 20 || int(made.Load())+2 != len(refs) {
		t.Fatalf("%d made, %d refused, %d keys with limits adding up to %d (ceiling 100)", made.Load(), refused.Load(), len(refs), sum)
	}
	// Raising a key past the ceiling is refused with the numbers; lowering
	// the ceiling under what is allocated too; revoking frees its share.
	if _, err := e.Keys.SetLimit(ctx, fastID, 20+100-sum+1); !errors.Is(err, auth.ErrCeiling) || !strings.Contains(err.Error(), "ceiling of 100") {
		t.Fatalf("over the ceiling: %v", err)
	}
	if _, err := e.Keys.SetCeiling(ctx, org, sum-1); !errors.Is(err, auth.ErrCeiling) {
		t.Fatalf("a ceiling under the allocation: %v", err)
	}
	if err := e.Keys.Revoke(ctx, fastID, e.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Keys.CreateKey(ctx, auth.KeyRequest{OrgID: org, Mode: auth.ModeTest, Scopes: auth.Catalogue, RateLimit: 20}, e.Now()); err != nil {
		t.Fatalf("the revoked key's share was not freed: %v", err)
	}
	// A limit set later applies to the next request.
	if _, err := e.Keys.SetLimit(ctx, fastID, 30); !errors.Is(err, auth.ErrNoSuchClient) {
		t.Fatalf("a revoked key given a limit: %v", err)
	}
	e.SetNow(e.Now().Add(time.Minute))
	id := strings.Split(slow, "_")[2]
	slowID := id[0:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]
	if _, err := e.Keys.SetLimit(ctx, slowID, 7); err != nil {
		t.Fatal(err)
	}
	if r := e.Get("/api/v1/matters", slow); r.Header.Get("X-RateLimit-Limit") != "7" {
		t.Fatalf("a new limit: %v", r.Header)
	}
	// An idle spell leaves no stale counter on the client item, and
	// removing it took no call of its own.
	e.SetNow(e.Now().Add(10 * time.Minute))
	apitest.MustStatus(t, e.Get("/api/v1/matters", slow), 200)
	apitest.MustStatus(t, e.Get("/api/v1/matters", slow), 200)
	var item map[string]any
	out, err := e.DB.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.DB.Table, Key: store.Key("APICLIENT#"+slowID, "APICLIENT")})
	if err != nil {
		t.Fatal(err)
	}
	_ = attributevalue.UnmarshalMap(out.Item, &item)
	windows := 0
	for k := range item {
		if strings.HasPrefix(k, "rl_") {
			windows++
		}
	}
	if windows != 1 {
		t.Fatalf("%d rate-limit windows on the client item", windows)
	}
}
