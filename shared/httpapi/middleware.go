package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/apikey"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/idemkey"
)

// Authenticator checks a bearer key and counts the request against its
// client's rate limit, in one step (*auth.Store: Identify). It returns
// apikey.ErrUnauthenticated for a key that is unknown, revoked or expired;
// any other error is the store's (classed by it: store.Classify).
type Authenticator interface {
	Identify(ctx context.Context, tok apikey.Token, now time.Time) (apikey.Caller, apikey.Usage, error)
}

// IdempotencyKeys begins creates and reads bound Idempotency-Keys
// (*idempotency.Store): Begin makes the create of a request whose key is
// to be bound as b (the value the family's create function takes:
// ServeCreate), LookupBound returns a bound key's record (nil when the key
// is free). Binding the key in the create's transaction is the create's
// (idempotency.Create.Commit): the edge never sees a store item.
type IdempotencyKeys interface {
	Begin(b idemkey.Binding, clientID string, body []byte, location func(id string) string) idemkey.Create
	LookupBound(ctx context.Context, org, endpoint, key string, consistent bool, now time.Time) (*idemkey.Bound, error)
}

// Config is what the edge needs; every field is built once per process.
// The edge depends on the key store and the idempotency records through
// small interfaces (Authenticator, IdempotencyKeys) whose types are
// apikey's and idemkey's, so that it links no store and no AWS SDK, and
// its own behaviour (headers, scopes, limits, the 404/405 tables) is
// tested without an engine; what the store decides is tested on DynamoDB
// Local.
type Config struct {
	Auth   Authenticator
	Sealer *Sealer
	// RateLimit is requests per minute per API client without a limit of
	// its own (config.Defaults()'s RATE_LIMIT_PER_MINUTE when 0).
	RateLimit int
	// AcceptedModes lists the key modes this stage accepts (default both).
	AcceptedModes []string
	// MaxBodyBytes is the largest request body accepted (default 1 MiB); larger is 413.
	MaxBodyBytes int64
	// Clock is the edge's clock: what a key's expiry and its per-minute
	// limit are counted on, and what a create is stamped with (tests move
	// it); nil is the wall clock.
	Clock clock.Clock
	// AccessLog, when set, gets one line per request.
	AccessLog *slog.Logger
	// Log gets errors: panics, store outages, internal errors (default
	// slog.Default()). Tests pass their own instead of replacing the
	// process's default, so they can run in parallel.
	Log *slog.Logger
	// Idempotency keeps the Idempotency-Key records of creates.
	Idempotency IdempotencyKeys
	// PublicBaseURL is the origin clients call (scheme://host[:port], no
	// path): links.next and Location are built on it, never on the
	// request's Host header, which a client controls. The devserver sets
	// its listen address, AWS the stage's URL (PUBLIC_BASE_URL).
	PublicBaseURL string
	// BaseURLOf, when PublicBaseURL is empty, derives the origin from what
	// the platform vouches for (API Gateway's request context); without
	// either, absolute URLs become paths.
	BaseURLOf func(*http.Request) (string, bool)
	// Deprecation, when set, announces this version's deprecation on every
	// response (Deprecation: @<unix seconds>, RFC 9745), with Sunset (the
	// HTTP-date of removal) and a Link to the migration notes when given.
	Deprecation *Deprecation
}

// Deprecation is the announcement of a version's retirement.
type Deprecation struct {
	Since  time.Time // when the version became deprecated
	Sunset time.Time // when it will be removed (at least six months after Since)
	Link   string    // where integrators read how to migrate
}

// DefaultMaxBodyBytes is the documented request body limit.
const DefaultMaxBodyBytes = 1 << 20

func (c *Config) defaults() {
	if c.RateLimit <= 0 {
		c.RateLimit = config.Defaults().RateLimitPerMinute
	}
	if len(c.AcceptedModes) == 0 {
		c.AcceptedModes = []string{apikey.ModeLive, apikey.ModeTest}
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	c.Clock = clock.Or(c.Clock)
}

// Handlers maps route names (routes.Route.Name) to their handlers.
type Handlers map[string]http.HandlerFunc

type ctxKey int

const (
	envKey ctxKey = iota
	requestIDKey
	logKey
	errorLogKey
)

// accessEntry is what the access log line learns during a request: the
// edge creates it, authorize fills in who called.
type accessEntry struct {
	clientID, keyID string
}

// requestEnv is what the edge learned about a request: the authenticated
// client (which alone decides the organisation) and the cursor sealer.
type requestEnv struct {
	client *apikey.Caller
	sealer *Sealer
	idem   IdempotencyKeys
	now    func() time.Time
}

func envFrom(ctx context.Context) *requestEnv {
	if e, ok := ctx.Value(envKey).(*requestEnv); ok {
		return e
	}
	return &requestEnv{client: &apikey.Caller{}, now: clock.Real{}.Now}
}

// OrgID is the organisation of the authenticated key. Handlers take the
// organisation from here and nowhere else.
func OrgID(ctx context.Context) string { return envFrom(ctx).client.OrgID }

// Logger is the error logger of the request's handler (Config.Log), or
// slog.Default() outside one.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(errorLogKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// RequestID is the id logged with every line of a request and returned in
// X-Request-Id: the Lambda request id in AWS, a fresh uuid elsewhere.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// NewHandler mounts the given families of the route table on one mux, each
// route behind authentication, rate limiting and its scope (public routes,
// the API's own description, behind none of them). It fails when a
// family lacks a handler for one of its routes or has one for no route.
func NewHandler(cfg Config, families map[string]Handlers) (http.Handler, error) {
	cfg.defaults()
	mux := http.NewServeMux()
	for family, handlers := range families {
		served := map[string]bool{}
		for _, rt := range routes.Family(family) {
			h, ok := handlers[rt.Name]
			if !ok {
				return nil, fmt.Errorf("family %s: no handler for route %s", family, rt.Name)
			}
			served[rt.Name] = true
			if rt.Public {
				mux.Handle(rt.Pattern(), h)
			} else {
				mux.Handle(rt.Pattern(), cfg.authorize(rt, h))
			}
		}
		for name := range handlers {
			if !served[name] {
				return nil, fmt.Errorf("family %s: handler %s matches no route", family, name)
			}
		}
	}
	// Every path of the whole table answers a wrong method with 405 and
	// Allow, whichever families are mounted here: on AWS, API Gateway sends
	// what matches no route to the meta function ($default), which must
	// answer for every family's paths.
	methods := map[string][]string{}
	var order []string
	for _, rt := range routes.Table {
		path := routes.Prefix + rt.Path
		if _, seen := methods[path]; !seen {
			order = append(order, path)
		}
		methods[path] = append(methods[path], rt.Method)
	}
	for _, path := range order {
		allowed := methods[path]
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if slices.Contains(allowed, r.Method) { // another function's route: not reachable through API Gateway
				WriteError(w, r, &Error{Status: http.StatusNotFound, Code: CodeNoSuchEndpoint, Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
				return
			}
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			WriteError(w, r, &Error{Status: http.StatusMethodNotAllowed, Message: fmt.Sprintf("method %s is not allowed here; allowed: %s", r.Method, strings.Join(allowed, ", "))})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, &Error{Status: http.StatusNotFound, Code: CodeNoSuchEndpoint, Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
	})
	return cfg.edge(mux), nil
}

// edge wraps every request: request id, body limit, access log, and panic
// recovery (a panic is a bug, but the client still gets JSON).
func (cfg *Config) edge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := ""
		if lc, ok := lambdacontext.FromContext(r.Context()); ok {
			id = lc.AwsRequestID
		}
		if id == "" {
			id = uuid.NewString()
		}
		entry := &accessEntry{}
		ctx := context.WithValue(context.WithValue(r.Context(), requestIDKey, id), logKey, entry)
		if cfg.Log != nil {
			ctx = context.WithValue(ctx, errorLogKey, cfg.Log)
		}
		base := cfg.PublicBaseURL
		if base == "" && cfg.BaseURLOf != nil {
			base, _ = cfg.BaseURLOf(r)
		}
		r = r.WithContext(context.WithValue(ctx, baseURLKey, base))
		w.Header().Set("X-Request-Id", id)
		// Bodies are JSON (error messages echo input such as "<script>"):
		// browsers must not sniff them into HTML.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if d := cfg.Deprecation; d != nil {
			w.Header().Set("Deprecation", "@"+strconv.FormatInt(d.Since.Unix(), 10))
			if !d.Sunset.IsZero() {
				w.Header().Set("Sunset", d.Sunset.UTC().Format(http.TimeFormat))
			}
			if d.Link != "" {
				w.Header().Set("Link", "<"+d.Link+`>; rel="deprecation"; type="text/html"`)
			}
		}
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				// The operator's line: what panicked, where, for which
				// request (its path as sent: the logger redacts a CPR in it).
				stack := debug.Stack()
				if carried, ok := p.(interface{ PanicStack() []byte }); ok { // from a goroutine of the request's store calls (store.Panic)
					stack = carried.PanicStack()
				}
				Logger(r.Context()).ErrorContext(r.Context(), "panic", "panic", fmt.Sprint(p), "stack", string(stack), "request_id", id,
					"method", r.Method, "path", r.URL.Path)
				if !rec.wrote {
					WriteError(rec, r, fmt.Errorf("panic: %v", p))
				}
			}
			if cfg.AccessLog != nil {
				// The path is what the caller typed: it may hold a CPR
				// (GET /people/010190-1234), which no log keeps in clear.
				cfg.AccessLog.InfoContext(r.Context(), "request", "request_id", id, "method", r.Method, "path", cpr.Redact(r.URL.EscapedPath()),
					"status", rec.status, "duration_ms", float64(time.Since(start).Microseconds())/1000,
					"client_id", entry.clientID, "key_id", entry.keyID)
			}
		}()
		if r.ContentLength > cfg.MaxBodyBytes {
			WriteError(rec, r, &http.MaxBytesError{Limit: cfg.MaxBodyBytes})
			return
		}
		r.Body = &bodyReader{http.MaxBytesReader(rec, r.Body, cfg.MaxBodyBytes)}
		next.ServeHTTP(rec, r)
	})
}

// bodyReader marks failures to read the request body (a client that sent
// less than its Content-Length and hung up, a broken chunked encoding) as
// the client's: WriteError answers them 400, not 500.
type bodyReader struct{ io.ReadCloser }

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		var tooBig *http.MaxBytesError
		if !errors.As(err, &tooBig) {
			err = &Error{Status: http.StatusBadRequest, Message: "the request body could not be read in full (it ended before its Content-Length, or its encoding is broken); send it again"}
		}
	}
	return n, err
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

// WriteHeader records the status; an error answer is never stored by a
// cache (it describes one request, and may echo its input).
func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
		if code >= 400 {
			s.Header().Set("Cache-Control", "no-store")
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status, s.wrote = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

// queryKeyParams are names integrators try for keys in URLs; we say why they fail.
var queryKeyParams = []string{"api_key", "apikey", "key", "token", "access_token"}

// authorize authenticates the bearer key, counts the request against its
// client's limit (one store round trip for both), sets the rate-limit
// headers, and checks the route's scope.
func (cfg *Config) authorize(rt routes.Route, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, err := bearer(r)
		if err == nil && !slices.Contains(cfg.AcceptedModes, tok.Mode) {
			err = &Error{Status: http.StatusUnauthorized, Message: fmt.Sprintf("%s keys are not accepted by this deployment", tok.Mode)}
		}
		var client apikey.Caller
		var usage apikey.Usage
		now := cfg.Clock.Now()
		if err == nil {
			client, usage, err = cfg.Auth.Identify(r.Context(), tok, now)
			if errors.Is(err, apikey.ErrUnauthenticated) {
				err = &Error{Status: http.StatusUnauthorized, Message: "the API key is unknown, revoked or expired"}
			}
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
			}
			WriteError(w, r, err)
			return
		}
		limit := cfg.RateLimit // the stage's, unless the client has its own
		if usage.Limit > 0 {
			limit = usage.Limit
		}
		remaining := max(int64(limit)-usage.Count, 0)
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(remaining, 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(usage.Reset.Unix(), 10))
		// The IETF draft's fields alongside: t is seconds until the reset.
		h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=60`, limit))
		h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, remaining, max(int64(usage.Reset.Sub(now).Seconds()+0.999), 0)))
		if e, ok := r.Context().Value(logKey).(*accessEntry); ok {
			e.clientID, e.keyID = client.ID, tok.SecretID
		}
		// Every answer to a key holds the organisation's data or says
		// something about the key: no cache, shared or private, keeps it.
		h.Set("Cache-Control", "no-store")
		r = r.WithContext(context.WithValue(r.Context(), envKey, &requestEnv{client: &client, sealer: cfg.Sealer, idem: cfg.Idempotency, now: cfg.Clock.Now}))
		if usage.Count > int64(limit) {
			wait := int64(usage.Reset.Sub(now).Seconds() + 0.999)
			h.Set("Retry-After", strconv.FormatInt(max(wait, 1), 10))
			WriteError(w, r, &Error{Status: http.StatusTooManyRequests, Message: fmt.Sprintf("rate limit of %d requests per minute exceeded; retry after %d seconds", limit, max(wait, 1))})
			return
		}
		if !client.HasScope(rt.Scope) {
			WriteError(w, r, &Error{Status: http.StatusForbidden, Message: fmt.Sprintf("this key lacks the scope %s, which %s %s requires; scopes are fixed when a key is created, so ask for a new key", rt.Scope, rt.Method, routes.Prefix+rt.Path), RequiredScope: rt.Scope})
			return
		}
		if err := arrayStyleParams(r.URL.Query()); err != nil {
			WriteError(w, r, err)
			return
		}
		next(w, r)
	})
}

// arrayStyleParams refuses a parameter written as an array (per_page[]=5,
// filter[status]=active), as some client libraries serialise one: no
// parameter of this API has brackets, so ignoring it would answer as if it
// were never sent. The first such parameter, in name order, is named.
func arrayStyleParams(q url.Values) error {
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if strings.ContainsAny(name, "[]") {
			base, _, _ := strings.Cut(name, "[")
			return Invalid(name, "%s is an array-style parameter, which this API does not read; send %s=<value> once "+
				"(a parameter that takes several values takes them comma-separated)", name, cmp.Or(base, "the parameter"))
		}
	}
	return nil
}

func bearer(r *http.Request) (apikey.Token, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		msg := "missing Authorization header; send Authorization: Bearer <API key>"
		q := r.URL.Query()
		for _, p := range queryKeyParams {
			if q.Has(p) {
				msg = "API keys are accepted only in the Authorization header (Authorization: Bearer <API key>), never in the query string"
				break
			}
		}
		return apikey.Token{}, &Error{Status: http.StatusUnauthorized, Message: msg}
	}
	scheme, value, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return apikey.Token{}, &Error{Status: http.StatusUnauthorized, Message: "the Authorization header must use the Bearer scheme: Authorization: Bearer <API key>"}
	}
	tok, err := apikey.Parse(strings.TrimSpace(value))
	if err != nil {
		return apikey.Token{}, &Error{Status: http.StatusUnauthorized, Message: "the API key is unknown, revoked or expired"}
	}
	return tok, nil
}

// Now is the time on the edge's clock for this request (Config.Clock).
func Now(ctx context.Context) time.Time { return envFrom(ctx).now() }
