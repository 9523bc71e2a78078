package httpapi_test

// The edge's own behaviour, without an engine: authentication's answers,
// scopes, the rate-limit headers and 429s, the 404/405 tables, security
// and deprecation headers, the access log's CPR redaction and the
// Idempotency-Key rules of a create. The key store and the idempotency
// records are in-memory fakes of httpapi.Authenticator and
// httpapi.IdempotencyKeys that answer as the real stores' contracts say
// ("this key has these scopes, this count": the edge's input); this file
// links no store, no key store and no AWS SDK, so it runs in make unit;
// what DynamoDB decides (which key is live, counting exactly under
// concurrency, a key bound once in a transaction) is tested against
// DynamoDB Local in shared/auth, shared/idempotency and shared/families.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/apikey"
	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/idemkey"
)

// catalogue is every scope of the route table (auth.Catalogue's).
func catalogue() []string {
	var all []string
	for _, rt := range routes.Table {
		if rt.Scope != "" && !slices.Contains(all, rt.Scope) {
			all = append(all, rt.Scope)
		}
	}
	return all
}

// client is a key the fake minted: its caller, mode and own limit.
type client struct {
	apikey.Caller
	Mode      string
	RateLimit int
}

// fakeKeys is an in-memory httpapi.Authenticator: the clients it minted,
// counted per client and minute as auth.Store counts them.
type fakeKeys struct {
	mu      sync.Mutex
	clients map[string]client // by bearer value
	counts  map[string]int64  // client id and minute
	outage  error             // answered for every key while set
}

func newFakeKeys() *fakeKeys {
	return &fakeKeys{clients: map[string]client{}, counts: map[string]int64{}}
}

// mint returns the bearer value of a new client of org with scopes (all
// when none), mode (test when "") and its own limit (the stage's when 0).
func (f *fakeKeys) mint(org, mode string, limit int, scopes ...string) (bearer string, c client) {
	if len(scopes) == 0 {
		scopes = catalogue()
	}
	if mode == "" {
		mode = apikey.ModeTest
	}
	c = client{Caller: apikey.Caller{ID: uuid.NewString(), OrgID: org, Scopes: scopes}, Mode: mode, RateLimit: limit}
	bearer = "pa_" + mode + "_" + strings.ReplaceAll(c.ID, "-", "") + "_" + randomHex(8) + "_" + randomHex(32)
	f.mu.Lock()
	f.clients[bearer] = c
	f.mu.Unlock()
	return bearer, c
}

func (f *fakeKeys) Identify(_ context.Context, tok apikey.Token, now time.Time) (apikey.Caller, apikey.Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.outage != nil {
		return apikey.Caller{}, apikey.Usage{}, fmt.Errorf("authenticate: %w", f.outage)
	}
	c, ok := f.clients[tok.String()]
	if !ok || c.Mode != tok.Mode {
		return apikey.Caller{}, apikey.Usage{}, apikey.ErrUnauthenticated
	}
	minute := now.Unix() / 60
	n := f.counts[c.ID+"/"+strconv.FormatInt(minute, 10)] + 1
	f.counts[c.ID+"/"+strconv.FormatInt(minute, 10)] = n
	return c.Caller, apikey.Usage{Count: n, Limit: c.RateLimit, Reset: time.Unix((minute+1)*60, 0).UTC()}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// fakeRecords is an in-memory httpapi.IdempotencyKeys holding bound
// records by organisation, endpoint and key. It binds nothing itself:
// binding a key in a create's transaction is DynamoDB's (shared/idempotency).
type fakeRecords struct {
	mu   sync.Mutex
	recs map[string]*idemkey.Bound
}

// fakeCreate is the create fakeRecords begins: the binding and body the
// edge handed it.
type fakeCreate struct {
	idemkey.Binding
	Body     []byte
	location func(string) string
	answer   []byte
}

func (c *fakeCreate) Location(id string) string { return c.location(id) }
func (c *fakeCreate) Answer() []byte            { return c.answer }

// taken is the error of a create whose key another request holds (the
// idempotency store's Taken): bound, or still in flight (nil).
type taken struct{ bound *idemkey.Bound }

func (*taken) Error() string              { return "the key was bound by another request" }
func (t *taken) BoundKey() *idemkey.Bound { return t.bound }
func (f *fakeRecords) Begin(b idemkey.Binding, _ string, body []byte, location func(string) string) idemkey.Create {
	return &fakeCreate{Binding: b, Body: body, location: location}
}

func (f *fakeRecords) LookupBound(_ context.Context, org, endpoint, key string, _ bool, _ time.Time) (*idemkey.Bound, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recs[org+"/"+endpoint+"/"+key], nil
}

func (f *fakeRecords) bind(org, endpoint, key string, rec *idemkey.Bound) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.recs == nil {
		f.recs = map[string]*idemkey.Bound{}
	}
	f.recs[org+"/"+endpoint+"/"+key] = rec
}

// edge is one test's edge: every family of the route table mounted with
// handlers that answer 200 {"data":{"route":<name>}}, except creates,
// which go through httpapi.ServeCreate with the test's create function.
type edge struct {
	t       *testing.T
	keys    *fakeKeys
	records *fakeRecords
	server  *httptest.Server
	clock   *clock.Manual // the edge's clock: tests move it
	create  httpapi.CreateFunc[*fakeCreate]
}

func newEdge(t *testing.T, cfg httpapi.Config) *edge {
	t.Helper()
	e := &edge{t: t, keys: newFakeKeys(), records: &fakeRecords{}, clock: clock.NewManual(time.Date(2026, 3, 2, 10, 0, 20, 0, time.UTC))}
	e.create = func(context.Context, *fakeCreate) (string, any, error) {
		return "", nil, httpapi.Invalid("name", "name is required")
	}
	if cfg.Auth == nil {
		cfg.Auth = e.keys
	}
	if cfg.Idempotency == nil {
		cfg.Idempotency = e.records
	}
	cfg.Clock = e.clock
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	families := map[string]httpapi.Handlers{}
	for _, rt := range routes.Table {
		if families[rt.Family] == nil {
			families[rt.Family] = httpapi.Handlers{}
		}
		name := rt.Name
		families[rt.Family][name] = func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(name, ".create") {
				httpapi.ServeCreate(w, r, name, "/things", func(ctx context.Context, req *fakeCreate) (string, any, error) {
					return e.create(ctx, req)
				})
				return
			}
			httpapi.WriteJSON(w, http.StatusOK, httpapi.Data(map[string]string{"route": name, "org": httpapi.OrgID(r.Context())}))
		}
	}
	h, err := httpapi.NewHandler(cfg, families)
	if err != nil {
		t.Fatal(err)
	}
	e.server = httptest.NewServer(h)
	t.Cleanup(e.server.Close)
	return e
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// do sends method path with Authorization: Bearer key (none when ""),
// and the headers given as name, value pairs.
func (e *edge) do(method, path, key string, body string, headers ...string) answer {
	e.t.Helper()
	req, err := http.NewRequest(method, e.server.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		e.t.Fatalf("%s %s: %d, body is not a JSON object: %q", method, path, resp.StatusCode, raw)
	}
	return a
}

// concrete fills a route's path wildcards.
func concrete(rt routes.Route) string {
	p := strings.NewReplacer("{type}", "wip", "{file}", "docs.css").Replace(routes.Prefix + rt.Path)
	return wildcard.ReplaceAllString(p, "x")
}

var wildcard = regexp.MustCompile(`\{[a-z]+\}`)

func TestEdgeAuthentication(t *testing.T) {
	t.Parallel()
	e := newEdge(t, httpapi.Config{AcceptedModes: []string{apikey.ModeLive}})
	live, _ := e.keys.mint("org-a", apikey.ModeLive, 0)
	test, _ := e.keys.mint("org-a", apikey.ModeTest, 0)
	unknown := strings.Replace(live, live[len(live)-64:], strings.Repeat("0", 64), 1)
	cases := []struct {
		name, header, query string
		status              int
		msg                 string
	}{
		{"valid", "Bearer " + live, "", 200, ""},
		{"scheme is case-insensitive", "bEARER " + live, "", 200, ""},
		{"missing header", "", "", 401, "missing Authorization header"},
		{"key in the query string", "", "?api_key=" + live, 401, "never in the query string"},
		{"access_token in the query string", "", "?access_token=x", 401, "never in the query string"},
		{"basic scheme", "Basic " + live, "", 401, "must use the Bearer scheme"},
		{"no scheme", live, "", 401, "must use the Bearer scheme"},
		{"malformed", "Bearer pa_live_nonsense", "", 401, "unknown, revoked or expired"},
		{"unknown", "Bearer " + unknown, "", 401, "unknown, revoked or expired"},
		{"a mode this stage refuses", "Bearer " + test, "", 401, "test keys are not accepted by this deployment"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			a := e.do("GET", "/api/v1/matters"+c.query, "", "", "Authorization", c.header)
			if a.status != c.status {
				t.Fatalf("%d %s", a.status, a.raw)
			}
			if c.status == 401 {
				msg, _ := a.body["message"].(string)
				if !strings.Contains(msg, c.msg) || a.body["code"] != string(httpapi.CodeUnauthenticated) ||
					a.header.Get("WWW-Authenticate") != `Bearer realm="api"` || a.header.Get("X-RateLimit-Limit") != "" {
					t.Fatalf("%v %s", a.header, a.raw)
				}
				if strings.Contains(a.raw, live[len(live)-64:]) {
					t.Fatalf("the answer echoes the key: %s", a.raw)
				}
			}
		})
	}
	t.Run("store outage", func(t *testing.T) {
		e.t = t
		e.keys.mu.Lock()
		e.keys.outage = storeOutage{errors.New("operation error DynamoDB: UpdateItem, connection refused")}
		e.keys.mu.Unlock()
		defer func() { e.keys.mu.Lock(); e.keys.outage = nil; e.keys.mu.Unlock() }()
		a := e.do("GET", "/api/v1/matters", live, "")
		if a.status != 503 || a.header.Get("Retry-After") != "1" || a.body["code"] != string(httpapi.CodeServiceUnavailable) || a.header.Get("WWW-Authenticate") != "" {
			t.Fatalf("%d %v %s", a.status, a.header, a.raw)
		}
	})
}

// storeOutage is a store call's error as the store classes an outage
// (store.Classify): apperr.Unavailable for errors.Is.
type storeOutage struct{ error }

func (storeOutage) Is(target error) bool { return target == apperr.Unavailable }

func TestEdgeScopes(t *testing.T) {
	t.Parallel()
	e := newEdge(t, httpapi.Config{})
	settingsOnly, _ := e.keys.mint("org-a", "", 0, "settings:read", "settings:write")
	for _, rt := range routes.Table {
		path := concrete(rt)
		t.Run(rt.Name, func(t *testing.T) {
			e := *e
			e.t = t
			if rt.Public {
				for _, key := range []string{"", settingsOnly, "pa_test_not_a_key"} {
					a := e.do(rt.Method, path, key, "")
					if a.status != 200 || a.header.Get("X-RateLimit-Limit") != "" {
						t.Fatalf("public, key %q: %d, X-RateLimit-Limit %q", key, a.status, a.header.Get("X-RateLimit-Limit"))
					}
				}
				return
			}
			only, _ := e.keys.mint("org-a", "", 0, rt.Scope)
			if a := e.do(rt.Method, path, only, "", "Idempotency-Key", "k"); a.status == 401 || a.status == 403 {
				t.Fatalf("a key with %s: %d %s", rt.Scope, a.status, a.raw)
			}
			rest := slices.DeleteFunc(catalogue(), func(s string) bool { return s == rt.Scope })
			without, _ := e.keys.mint("org-a", "", 0, rest...)
			a := e.do(rt.Method, path, without, "")
			msg, _ := a.body["message"].(string)
			if a.status != 403 || a.body["required_scope"] != rt.Scope || a.body["code"] != string(httpapi.CodeInsufficientScope) ||
				!strings.Contains(msg, rt.Scope) || a.header.Get("X-RateLimit-Limit") == "" || a.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("a key without %s: %d %v %s", rt.Scope, a.status, a.header, a.raw)
			}
			if a := e.do(rt.Method, path, settingsOnly, ""); a.status != 403 {
				t.Fatalf("the settings scopes opened it: %d", a.status)
			}
		})
	}
}

func TestEdgeRateLimit(t *testing.T) {
	t.Parallel()
	e := newEdge(t, httpapi.Config{RateLimit: 3})
	minute := e.clock.Now().Truncate(time.Minute)
	reset := strconv.FormatInt(minute.Add(time.Minute).Unix(), 10)
	key, _ := e.keys.mint("org-a", "", 0)
	other, _ := e.keys.mint("org-a", "", 0)
	own, _ := e.keys.mint("org-a", "", 5)
	t.Run("headers count down", func(t *testing.T) {
		e.t = t
		for i, c := range []struct{ method, path string }{{"GET", "/api/v1/matters"}, {"POST", "/api/v1/people"}, {"GET", "/api/v1/matters/x"}} { // errors (the create's 422) count and carry them too
			a := e.do(c.method, c.path, key, "")
			h := a.header
			if h.Get("X-RateLimit-Limit") != "3" || h.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) || h.Get("X-RateLimit-Reset") != reset ||
				h.Get("RateLimit-Policy") != `"default";q=3;w=60` || h.Get("RateLimit") != fmt.Sprintf(`"default";r=%d;t=40`, 2-i) {
				t.Fatalf("request %d (%s %s): %d %v", i, c.method, c.path, a.status, h)
			}
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		e.t = t
		e.do("GET", "/api/v1/matters", key, "")
		a := e.do("GET", "/api/v1/matters", key, "")
		if a.status != 429 || a.header.Get("Retry-After") != "40" || a.header.Get("X-RateLimit-Remaining") != "0" ||
			a.body["code"] != string(httpapi.CodeRateLimited) || !strings.Contains(a.body["message"].(string), "3 requests per minute") {
			t.Fatalf("%d %v %s", a.status, a.header, a.raw)
		}
		if a := e.do("POST", "/api/v1/people", key, "{}"); a.status != 429 {
			t.Fatalf("a create over the limit: %d %s", a.status, a.raw)
		}
	})
	t.Run("counted per client", func(t *testing.T) {
		e.t = t
		if a := e.do("GET", "/api/v1/matters", other, ""); a.status != 200 || a.header.Get("X-RateLimit-Remaining") != "2" {
			t.Fatalf("%d %v", a.status, a.header)
		}
	})
	t.Run("a client's own limit", func(t *testing.T) {
		e.t = t
		for i := range 6 {
			a := e.do("GET", "/api/v1/matters", own, "")
			want := 200
			if i == 5 {
				want = 429
			}
			if a.status != want || a.header.Get("X-RateLimit-Limit") != "5" || a.header.Get("RateLimit-Policy") != `"default";q=5;w=60` {
				t.Fatalf("request %d: %d %v", i, a.status, a.header)
			}
		}
	})
	t.Run("a new window", func(t *testing.T) {
		e.t = t
		e.clock.Advance(minute.Add(time.Minute + 59*time.Second).Sub(e.clock.Now()))
		a := e.do("GET", "/api/v1/matters", key, "")
		if a.status != 200 || a.header.Get("X-RateLimit-Remaining") != "2" || a.header.Get("RateLimit") != `"default";r=2;t=1` {
			t.Fatalf("%d %v", a.status, a.header)
		}
	})
}

// TestEdgeNotFoundAndMethodTables: every path of the route table answers
// a method it lacks with 405 and Allow, whichever families are mounted;
// a route of a family not mounted here is 404 no_such_endpoint (API
// Gateway sends it elsewhere); a path of no route is 404.
func TestEdgeNotFoundAndMethodTables(t *testing.T) {
	t.Parallel()
	e := newEdge(t, httpapi.Config{})
	key, _ := e.keys.mint("org-a", "", 0)
	allowed := map[string][]string{}
	for _, rt := range routes.Table {
		allowed[concrete(rt)] = append(allowed[concrete(rt)], rt.Method)
	}
	for path, methods := range allowed {
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if slices.Contains(methods, m) {
				continue
			}
			t.Run(m+" "+path, func(t *testing.T) {
				e := *e
				e.t = t
				a := e.do(m, path, key, "")
				if a.status != 405 || a.header.Get("Allow") != strings.Join(methods, ", ") || a.body["code"] != string(httpapi.CodeMethodNotAllowed) ||
					a.header.Get("Cache-Control") != "no-store" {
					t.Fatalf("%d Allow %q %s", a.status, a.header.Get("Allow"), a.raw)
				}
			})
		}
	}
	for _, path := range []string{"/", "/api/v1/cases", "/api/v2/matters", "/api/v1/matters/x/y", "/api/v1/people/010190-1234/notes"} {
		t.Run("GET "+path, func(t *testing.T) {
			e := *e
			e.t = t
			a := e.do("GET", path, key, "")
			msg, _ := a.body["message"].(string)
			if a.status != 404 || a.body["code"] != string(httpapi.CodeNoSuchEndpoint) || !strings.HasPrefix(msg, "no such endpoint") || cpr.Find(a.raw) {
				t.Fatalf("%d %s", a.status, a.raw)
			}
		})
	}
	t.Run("a family mounted elsewhere", func(t *testing.T) {
		cfg := httpapi.Config{Auth: newFakeKeys(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		meta := httpapi.Handlers{}
		for _, rt := range routes.Family(routes.Meta) {
			meta[rt.Name] = func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }
		}
		h, err := httpapi.NewHandler(cfg, map[string]httpapi.Handlers{routes.Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			method string
			status int
		}{{"GET", 404}, {"POST", 404}, {"DELETE", 405}} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(c.method, "/api/v1/matters", nil))
			if rec.Code != c.status {
				t.Errorf("%s /api/v1/matters on meta alone: %d %s", c.method, rec.Code, rec.Body)
			}
		}
	})
}

// TestEdgeHeaders: nosniff and a request id on every answer, no-store on
// every error and every authenticated answer, the deprecation
// announcement when configured, and array-style parameters refused.
func TestEdgeHeaders(t *testing.T) {
	t.Parallel()
	since := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	dep := newEdge(t, httpapi.Config{Deprecation: &httpapi.Deprecation{Since: since, Sunset: since.AddDate(0, 6, 0), Link: "https://example.com/migrate-to-v2"}})
	plain := newEdge(t, httpapi.Config{})
	depKey, _ := dep.keys.mint("org-a", "", 0)
	key, _ := plain.keys.mint("org-a", "", 0)
	cases := []struct {
		method, path string
		auth         bool
		status       int
	}{
		{"GET", "/api/v1/matters", true, 200},
		{"GET", "/api/v1/openapi.json", false, 200},
		{"GET", "/api/v1/matters", false, 401},
		{"GET", "/api/v1/matters?status[]=active", true, 422},
		{"DELETE", "/api/v1/matters", true, 405},
		{"GET", "/api/v1/nowhere", true, 404},
		{"POST", "/api/v1/people", true, 422}, // no Idempotency-Key
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			for _, e := range []*edge{dep, plain} {
				e := *e
				e.t = t
				k := ""
				if c.auth {
					k = key
					if e.keys == dep.keys {
						k = depKey
					}
				}
				a := e.do(c.method, c.path, k, "")
				h := a.header
				_, idErr := uuid.Parse(h.Get("X-Request-Id"))
				if a.status != c.status || h.Get("X-Content-Type-Options") != "nosniff" || idErr != nil {
					t.Fatalf("%d %v", a.status, h)
				}
				if (c.status >= 400 || c.auth) && h.Get("Cache-Control") != "no-store" {
					t.Fatalf("%d: Cache-Control %q", a.status, h.Get("Cache-Control"))
				}
				if e.keys == dep.keys {
					if h.Get("Deprecation") != "@1798761600" || h.Get("Sunset") != "Thu, 01 Jul 2027 00:00:00 GMT" ||
						h.Get("Link") != `<https://example.com/migrate-to-v2>; rel="deprecation"; type="text/html"` {
						t.Fatalf("deprecated: %v", h)
					}
				} else if h.Get("Deprecation") != "" || h.Get("Sunset") != "" || h.Get("Link") != "" {
					t.Fatalf("a current version announces deprecation: %v", h)
				}
			}
		})
	}
	t.Run("array-style parameters", func(t *testing.T) {
		e := *plain
		e.t = t
		for _, q := range []string{"per_page[]=5", "filter[status]=active", "a=1&[]=2&z[x]=3"} {
			a := e.do("GET", "/api/v1/matters?"+q, key, "")
			msg, _ := a.body["message"].(string)
			if a.status != 422 || a.body["code"] != string(httpapi.CodeInvalidRequest) || !strings.Contains(msg, "array-style") || a.body["field"] == "" {
				t.Fatalf("?%s: %d %s", q, a.status, a.raw)
			}
		}
		if a := e.do("GET", "/api/v1/matters?per_page=5&utm=a&utm=b", key, ""); a.status != 200 {
			t.Fatalf("plain parameters: %d %s", a.status, a.raw)
		}
	})
}

// TestEdgeAccessLogRedactsCPR: one access line per request, naming the
// client and key but never a CPR from the path; error messages that echo
// a CPR redact it.
func TestEdgeAccessLogRedactsCPR(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logs bytes.Buffer
	e := newEdge(t, httpapi.Config{AccessLog: slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, nil))})
	key, client := e.keys.mint("org-a", "", 0)
	keyID := strings.Split(key, "_")[3]
	paths := []string{"/api/v1/people/010190-1234", "/api/v1/people/0101901234", "/api/v1/matters/010190-1234", "/api/v1/matters?status=010190-1234"}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			e := *e
			e.t = t
			a := e.do("GET", p, key, "")
			if cpr.Find(a.raw) {
				t.Fatalf("the answer holds a CPR: %s", a.raw)
			}
		})
	}
	// An answer whose message quotes the CPR is redacted too.
	e.create = func(context.Context, *fakeCreate) (string, any, error) {
		return "", nil, httpapi.Invalid("010190-1234", "unknown field 010190-1234")
	}
	t.Run("a message quoting a CPR", func(t *testing.T) {
		e := *e
		e.t = t
		a := e.do("POST", "/api/v1/people", key, `{"010190-1234":1}`, "Idempotency-Key", "k-1")
		if a.status != 422 || cpr.Find(a.raw) {
			t.Fatalf("%d %s", a.status, a.raw)
		}
	})
	mu.Lock()
	lines := logs.String()
	mu.Unlock()
	if cpr.Find(lines) {
		t.Fatalf("the access log holds a CPR:\n%s", lines)
	}
	n := 0
	for line := range strings.Lines(lines) {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil || l["msg"] != "request" {
			continue
		}
		n++
		if l["client_id"] != client.ID || l["key_id"] != keyID || l["request_id"] == "" || l["status"] == nil {
			t.Errorf("an access line without its caller: %s", line)
		}
	}
	if n != len(paths)+1 {
		t.Fatalf("%d access lines, want %d:\n%s", n, len(paths)+1, lines)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestServeCreateKeyRules: the Idempotency-Key header's rules, and the
// answers to a key already bound (what the record says, not how it was
// bound: that is DynamoDB's, tested in shared/idempotency).
func TestServeCreateKeyRules(t *testing.T) {
	t.Parallel()
	e := newEdge(t, httpapi.Config{})
	key, c := e.keys.mint("org-a", "", 0)
	refusals := []struct {
		name, idem, words string
	}{
		{"missing", "", "is required on every create"},
		{"too long", strings.Repeat("k", httpapi.MaxIdempotencyKey+1), "longer than 255 characters"},
		{"a CPR", "010190-1234", "CPR numbers are never accepted"},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			e := *e
			e.t = t
			var headers []string
			if r.idem != "" {
				headers = []string{"Idempotency-Key", r.idem}
			}
			a := e.do("POST", "/api/v1/people", key, `{"name":"Anne"}`, headers...)
			msg, _ := a.body["message"].(string)
			if a.status != 422 || a.body["code"] != string(httpapi.CodeIdempotencyKeyRequired) || a.body["field"] != "Idempotency-Key" ||
				!strings.Contains(msg, r.words) || cpr.Find(a.raw) {
				t.Fatalf("%d %s", a.status, a.raw)
			}
		})
	}
	t.Run("the longest key", func(t *testing.T) {
		e := *e
		e.t = t
		a := e.do("POST", "/api/v1/people", key, `{}`, "Idempotency-Key", strings.Repeat("ø", httpapi.MaxIdempotencyKey)) // characters, not bytes
		if a.status != 422 || a.body["field"] != "name" {
			t.Fatalf("%d %s", a.status, a.raw)
		}
	})
	// A key bound with {"name":"Anne","email":"a@example.dk"}: a refused
	// create under it answers as the first did for the same body (in any
	// key order and spacing), 409 for another.
	first := `{"name":"Anne","email":"a@example.dk"}`
	sum := canonicalSum(t, first)
	e.records.bind(c.OrgID, "people.create", "crm-1", &idemkey.Bound{BodyHash: sum, Response: `{"id":"p-1","name":"Anne"}`, Location: "https://api.example/api/v1/things/p-1"})
	t.Run("a replay", func(t *testing.T) {
		e := *e
		e.t = t
		a := e.do("POST", "/api/v1/people", key, "{ \"email\": \"a@example.dk\",\n \"name\": \"Anne\" }", "Idempotency-Key", "crm-1")
		data, _ := a.body["data"].(map[string]any)
		if a.status != 200 || a.header.Get("Idempotent-Replayed") != "true" || a.header.Get("Location") != "https://api.example/api/v1/things/p-1" || data["id"] != "p-1" {
			t.Fatalf("%d %v %s", a.status, a.header, a.raw)
		}
	})
	t.Run("another body", func(t *testing.T) {
		e := *e
		e.t = t
		a := e.do("POST", "/api/v1/people", key, `{"name":"Bo","email":"a@example.dk"}`, "Idempotency-Key", "crm-1")
		if a.status != 409 || a.body["code"] != string(httpapi.CodeIdempotencyKeyReused) || a.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%d %s", a.status, a.raw)
		}
	})
	t.Run("the same key on another endpoint", func(t *testing.T) {
		e := *e
		e.t = t
		if a := e.do("POST", "/api/v1/companies", key, first, "Idempotency-Key", "crm-1"); a.status != 422 || a.body["field"] != "name" {
			t.Fatalf("%d %s", a.status, a.raw)
		}
	})
	t.Run("numbers as written", func(t *testing.T) {
		e := *e
		e.t = t
		e.records.bind(c.OrgID, "people.create", "crm-3", &idemkey.Bound{BodyHash: canonicalSum(t, `{"ref":1250}`), Response: `{"id":"p-3"}`})
		if a := e.do("POST", "/api/v1/people", key, `{"ref": 1250}`, "Idempotency-Key", "crm-3"); a.status != 200 {
			t.Fatalf("the same number: %d %s", a.status, a.raw)
		}
		if a := e.do("POST", "/api/v1/people", key, `{"ref":1250.00}`, "Idempotency-Key", "crm-3"); a.status != 409 {
			t.Fatalf("1250.00 for 1250: %d %s", a.status, a.raw)
		}
	})
	t.Run("a key another request bound meanwhile", func(t *testing.T) {
		// The create's transaction met the binding (the cancellation
		// carried the record): answered from it, without a lookup.
		e.create = func(context.Context, *fakeCreate) (string, any, error) {
			return "", nil, fmt.Errorf("create: %w", &taken{bound: &idemkey.Bound{BodyHash: sum, Response: `{"id":"p-9"}`, Location: "https://api.example/api/v1/things/p-9"}})
		}
		e := *e
		e.t = t
		a := e.do("POST", "/api/v1/people", key, first, "Idempotency-Key", "crm-9")
		if a.status != 200 || a.header.Get("Idempotent-Replayed") != "true" || a.header.Get("Location") != "https://api.example/api/v1/things/p-9" {
			t.Fatalf("%d %v %s", a.status, a.header, a.raw)
		}
	})
	t.Run("a key still in flight", func(t *testing.T) {
		e.create = func(context.Context, *fakeCreate) (string, any, error) {
			return "", nil, &taken{}
		}
		e := *e
		e.t = t
		a := e.do("POST", "/api/v1/people", key, first, "Idempotency-Key", "crm-2")
		if a.status != 409 || a.body["code"] != string(httpapi.CodeIdempotencyKeyInUse) || a.header.Get("Retry-After") != "1" {
			t.Fatalf("%d %v %s", a.status, a.header, a.raw)
		}
	})
}

// canonicalSum is the documented canonical form's hash (sorted keys, no
// insignificant whitespace, numbers as written), as a key is bound with.
func canonicalSum(t *testing.T, body string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// otherCreates begins creates of another type than the family's create
// takes: a wiring mistake.
type otherCreates struct{ fakeRecords }

type otherCreate struct{ fakeCreate }

func (o *otherCreates) Begin(b idemkey.Binding, id string, body []byte, location func(string) string) idemkey.Create {
	return &otherCreate{fakeCreate{Binding: b, Body: body, location: location}}
}

// TestServeCreateOfAnotherTypeIsAWiringMistake: a create whose type is not
// what the wiring's IdempotencyKeys begins answers 500 and creates nothing.
func TestServeCreateOfAnotherTypeIsAWiringMistake(t *testing.T) {
	t.Parallel()
	e := newEdge(t, httpapi.Config{Idempotency: &otherCreates{}})
	calls := 0
	e.create = func(context.Context, *fakeCreate) (string, any, error) {
		calls++
		return "t-1", map[string]string{}, nil
	}
	key, _ := e.keys.mint("org-a", "", 0)
	a := e.do("POST", "/api/v1/people", key, `{}`, "Idempotency-Key", "k-1")
	if a.status != 500 || a.body["code"] != string(httpapi.CodeInternalError) || calls != 0 {
		t.Fatalf("%d %s (create called %d times)", a.status, a.raw, calls)
	}
}
