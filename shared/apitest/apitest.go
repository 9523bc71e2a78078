// Package apitest runs the whole API over real HTTP (httptest) on a fresh
// table of the embedded DynamoDB server, with a clock tests can set and a
// counter of DynamoDB round trips.
package apitest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/families"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/openapi/conformance"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/capacity"
	"github.com/practice-api/practice-api/shared/store/storetest"
	"github.com/practice-api/practice-api/shared/webhook"
)

// RoundTrips counts DynamoDB HTTP round trips (every attempt) by operation,
// and notes the index of every Query.
type RoundTrips struct {
	mu      sync.Mutex
	ops     []string
	indexes []string
}

// Middleware is the smithy hook that records each attempt.
func (c *RoundTrips) Middleware(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("noteIndexes",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if q, ok := in.Parameters.(*dynamodb.QueryInput); ok {
				c.mu.Lock()
				c.indexes = append(c.indexes, aws.ToString(q.IndexName))
				c.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before); err != nil {
		return err
	}
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("countRoundTrips",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			c.ops = append(c.ops, awsmiddleware.GetOperationName(ctx))
			c.mu.Unlock()
			return next.HandleDeserialize(ctx, in)
		}), middleware.After)
}

// Reset forgets what was counted.
func (c *RoundTrips) Reset() { c.mu.Lock(); c.ops, c.indexes = nil, nil; c.mu.Unlock() }

// Indexes returns the index of each Query since the last Reset ("" for
// the base table).
func (c *RoundTrips) Indexes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.indexes...)
}

// Ops returns the operations since the last Reset, in order.
func (c *RoundTrips) Ops() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ops...)
}

// Env is one test's API: server, store, clock and helpers.
type Env struct {
	t testing.TB
	// Log is the API's error logger (and the workers' a test builds on it).
	Log    *slog.Logger
	DB     *store.DB
	Keys   *auth.Store
	Server *httptest.Server
	Calls  *RoundTrips
	Faults *Faults
	// Capacity records what every store call of the API (and of the
	// test's own helpers) consumed, as DynamoDB bills it.
	Capacity *capacity.Meter
	// Deliveries is the webhook delivery queue the API's retry operation
	// feeds; Deliverer is its worker (its Client is the test's to set).
	Deliveries *queue.Memory
	Deliverer  *webhook.Deliverer
	// Conformance has checked every exchange against the OpenAPI document;
	// its mismatches fail the test at cleanup.
	Conformance *conformance.Checker
	now         *atomic.Int64 // unix nanos; 0 = real time; shared by For views
}

// Options tune an Env.
type Options struct {
	RateLimit   int
	Deprecation *httpapi.Deprecation
	// AccessLog receives the edge's access lines (none when nil).
	AccessLog *slog.Logger
	// ReadTimeout is the server's, as the devserver sets one (none when 0).
	ReadTimeout time.Duration
	// Families change how the families are built (the devserver's hooks).
	Families []families.Option
	// FeedSettle is how far behind now GET /events serves (0: no settle,
	// so a test sees its events at once; the no-miss test sets one).
	FeedSettle time.Duration
	// Bare leaves out the test's own store middleware (round-trip counts,
	// faults, the capacity meter): for benchmarks of CPU, which compare the
	// API with a bare handler on the same plain client, as in a Lambda.
	Bare bool
}

// New starts the API on a fresh table. Error logs of the API (the injected
// faults of many tests) go to e.Log, which drops them unless APITEST_LOG=1;
// the process's default logger is left alone, so tests run in parallel.
func New(t testing.TB, opt Options) *Env {
	t.Helper()
	e := &Env{Log: testLogger(), t: t, Calls: &RoundTrips{}, Faults: &Faults{}, Capacity: &capacity.Meter{}, now: &atomic.Int64{}}
	if opt.Bare {
		e.DB = storetest.NewDB(t)
	} else {
		e.DB = storetest.NewDB(t, e.Calls.Middleware, e.Faults.Middleware, e.Capacity.Middleware)
	}
	// The meter costs a transaction as AWS bills it only with a Reader,
	// which reads every item of every transaction before and after: a test
	// that holds writes to a budget sets it (storetest.Plain's client). Set
	// for every test, those reads were about a quarter of what the API
	// tests asked of the engine (shared/families' mixed load: 4,900 of
	// 13,400 calls), for meters nobody read.
	e.Keys = auth.NewStore(e.DB, opt.RateLimit)
	key, err := e.DB.LoadOrCreateSecret(context.Background(), "cursor")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.DB.LoadIDKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	sealer, err := httpapi.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	e.Deliveries = queue.NewMemory(time.Minute)
	e.DB.Clock = clock.Func(e.Now) // events' sequences follow the test's clock
	// Deliveries go out as the app sends them (no redirects, the guard
	// that lets a test reach loopback); hookEnv trusts its receivers' CA.
	hc, err := webhook.NewHTTPClient("", true)
	if err != nil {
		t.Fatal(err)
	}
	e.Deliverer = &webhook.Deliverer{Store: webhook.NewStore(e.DB, true), Queue: e.Deliveries, Clock: clock.Func(e.Now), Client: hc}
	e.Deliverer.Store.FeedSettle = opt.FeedSettle
	e.Server = httptest.NewUnstartedServer(nil) // its address is the API's public base URL
	h, err := families.Handler(httpapi.Config{Auth: e.Keys, Sealer: sealer, RateLimit: opt.RateLimit, Clock: clock.Func(e.Now),
		PublicBaseURL: "http://" + e.Server.Listener.Addr().String(),
		Idempotency:   idempotency.NewStore(e.DB, key), Deprecation: opt.Deprecation, AccessLog: opt.AccessLog, Log: e.Log}, e.DB, e.Deliverer, opt.Families...)
	if err != nil {
		t.Fatal(err)
	}
	// Every exchange of a test is checked against the OpenAPI document; a
	// benchmark measures the API alone, without the check's cost.
	checker, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	e.Conformance = checker
	if _, bench := t.(*testing.B); !bench {
		h = checker.Middleware(h)
	}
	e.Server.Config.Handler = h
	e.Server.Config.ReadTimeout = opt.ReadTimeout
	e.Server.Start()
	t.Cleanup(func() {
		e.Server.Close()
		for _, p := range checker.Problems() {
			t.Errorf("OpenAPI mismatch: %s", p)
		}
		t.Logf("openapi: %d exchanges checked", checker.Exchanges())
	})
	return e
}

// For returns a view of the Env that reports to t (a fuzz target's T, a
// subtest's); server, store and clock are shared.
func (e *Env) For(t testing.TB) *Env {
	v := *e
	v.t = t
	return &v
}

// Now is the Env's clock.
func (e *Env) Now() time.Time {
	if n := e.now.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Now()
}

// SetNow fixes the clock at t.
func (e *Env) SetNow(t time.Time) { e.now.Store(t.UnixNano()) }

// Org creates an organisation and returns its id.
func (e *Env) Org(name string) string {
	e.t.Helper()
	o, err := e.Keys.CreateOrg(context.Background(), "", name, e.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return o.ID
}

// Key mints a test-mode key on org with scopes (every scope when none).
func (e *Env) Key(org string, scopes ...string) string {
	e.t.Helper()
	c, _ := e.KeyWith(auth.KeyRequest{OrgID: org, Scopes: scopes, Mode: auth.ModeTest})
	return c
}

// KeyWith mints a key from req (scopes default to all, mode to test) and
// returns the bearer token and the client id.
func (e *Env) KeyWith(req auth.KeyRequest) (token, clientID string) {
	e.t.Helper()
	if len(req.Scopes) == 0 {
		req.Scopes = auth.Catalogue
	}
	if req.Mode == "" {
		req.Mode = auth.ModeTest
	}
	c, tok, err := e.Keys.CreateKey(context.Background(), req, e.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return tok.String(), c.ID
}

// MustStatus fails the test unless r answered want, naming what it got.
func MustStatus(t testing.TB, r Response, want int) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Raw)
	}
}

// Response is a decoded API response.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// Do sends a request with an optional bearer key and body.
func (e *Env) Do(method, path, key string, body io.Reader) Response {
	e.t.Helper()
	url := path
	if !strings.HasPrefix(path, "http") {
		url = e.Server.URL + path
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return e.send(req)
}

func (e *Env) send(req *http.Request) Response {
	e.t.Helper()
	method, path := req.Method, req.URL.Path
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	r := Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	// Every answer is JSON but the reference page and its files (text).
	if len(raw) > 0 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			e.t.Fatalf("%s %s: body is not a JSON object: %s", method, path, raw)
		}
	}
	return r
}

// Post sends a create with key, Idempotency-Key idem (none when "") and body.
func (e *Env) Post(path, key, idem, body string) Response {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.Server.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	return e.send(req)
}

// Get sends a GET with key.
func (e *Env) Get(path, key string) Response { e.t.Helper(); return e.Do("GET", path, key, nil) }

// Collect follows links.next from path to the end and returns the id of
// every record in order; a page that is not 200, or whose meta disagrees
// with links.next, fails the test.
func (e *Env) Collect(path, key string) []string {
	e.t.Helper()
	var all []string
	for pages := 0; path != ""; pages++ {
		if pages > 100 {
			e.t.Fatal("pagination does not end")
		}
		r := e.Get(path, key)
		if r.Status != http.StatusOK {
			e.t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
		}
		for _, d := range r.Data() {
			id, _ := d["id"].(string)
			all = append(all, id)
		}
		path = r.Next()
		meta, _ := r.Body["meta"].(map[string]any)
		if more, _ := meta["has_more"].(bool); (path != "") != more || (path == "") != (meta["next_cursor"] == nil) {
			e.t.Fatalf("meta %v disagrees with links.next %q", meta, path)
		}
	}
	return all
}

// Data returns the list in a list response's data.
func (r Response) Data() []map[string]any {
	list, _ := r.Body["data"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, v := range list {
		out = append(out, v.(map[string]any))
	}
	return out
}

// Next returns links.next, "" when null.
func (r Response) Next() string {
	links, _ := r.Body["links"].(map[string]any)
	s, _ := links["next"].(string)
	return s
}

// testLogger drops what it is given unless APITEST_LOG=1 (then: stderr).
func testLogger() *slog.Logger {
	if os.Getenv("APITEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
