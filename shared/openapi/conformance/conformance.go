// Package conformance checks real requests and responses against the API's
// OpenAPI document, so that the document cannot drift from the code. The
// API tests (shared/apitest) and the black-box suite (scripts/e2e) run
// every exchange through a Checker and fail on any mismatch.
//
// The rules:
//   - every answer must be documented for its operation (status, headers,
//     body), checked strictly: a response field the document does not list
//     is a mismatch, although integrators are told to ignore unknown fields;
//   - a request the document calls invalid must be refused (4xx): if the API
//     accepted it, the document is stricter than the code;
//   - a path or method the document lacks must answer 404 or 405.
//
// A request the document allows may still be refused when a rule only the
// code knows applies (a duplicate CVR); that is documented as a 422.
package conformance

import (
	"github.com/practice-api/practice-api/shared/cpr"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/openapi"
)

// defineFormat checks strings of the format name with fn.
func defineFormat(name string, fn func(string) error) {
	openapi3.DefineStringFormatValidator(name, openapi3.NewCallbackValidator(fn))
}

func init() {
	// The reference page and its files are text.
	for _, ct := range []string{"text/html", "text/javascript", "text/css"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	// The formats the document uses, checked exactly as the code means them.
	defineFormat("uuid", func(s string) error {
		if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
			return errors.New("not a UUID")
		}
		return nil
	})
	defineFormat("date", func(s string) error {
		_, err := time.Parse(time.DateOnly, s)
		return err
	})
	defineFormat("date-time", func(s string) error {
		_, err := time.Parse(time.RFC3339Nano, s)
		return err
	})
	defineFormat("email", func(s string) error {
		a, err := mail.ParseAddress(s)
		if err == nil && a.Address != s {
			err = errors.New("not a plain address")
		}
		return err
	})
	defineFormat("uri", func(s string) error {
		u, err := url.Parse(s)
		if err == nil && (u.Scheme == "" || u.Host == "") {
			err = errors.New("not an absolute URI")
		}
		return err
	})
	defineFormat("uri-reference", func(s string) error {
		_, err := url.Parse(s)
		return err
	})
}

// Exchange is one request and the API's answer.
type Exchange struct {
	Request     *http.Request
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
}

// Checker holds the document, read strictly, and the mismatches found.
type Checker struct {
	doc    *openapi3.T
	hooks  *openapi3.T
	router routers.Router
	// errSch are the error bodies of the answers to paths and methods the
	// document lacks, by status: 404, 405 and 413.
	errSch map[int]*openapi3.Schema

	mu        sync.Mutex
	problems  []string
	seen      map[string]bool
	exchanges int
}

// New returns a Checker of the served document with no mismatches recorded.
func New() (*Checker, error) {
	l, err := load()
	if err != nil {
		return nil, err
	}
	// A 405 is in no operation of the document: its body is an error of
	// one code, method_not_allowed (httpapi.Codes).
	methodNotAllowed := openapi3.NewObjectSchema().WithProperties(map[string]*openapi3.Schema{
		"code":    openapi3.NewStringSchema().WithEnum("method_not_allowed"),
		"message": openapi3.NewStringSchema(),
	}).WithoutAdditionalProperties()
	methodNotAllowed.Required = []string{"code", "message"}
	errSch := map[int]*openapi3.Schema{http.StatusMethodNotAllowed: methodNotAllowed}
	for status, name := range map[int]string{http.StatusNotFound: "NotFoundError", http.StatusRequestEntityTooLarge: "PayloadTooLargeError"} {
		sch := l.doc.Components.Schemas[name]
		if sch == nil {
			return nil, fmt.Errorf("conformance: the document has no %s schema", name)
		}
		errSch[status] = sch.Value
	}
	return &Checker{doc: l.doc, router: l.router, hooks: l.hooks, errSch: errSch, seen: map[string]bool{}}, nil
}

type loaded struct {
	doc    *openapi3.T
	router routers.Router
	// hooks holds the document's webhooks as paths "/<event>", with the
	// same components (kin-openapi does not read 3.1's webhooks).
	hooks *openapi3.T
}

// load reads the document once per process; checking only reads it.
var load = sync.OnceValues(func() (loaded, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document)
	if err != nil {
		return loaded{}, fmt.Errorf("conformance: %w", err)
	}
	tighten(doc)
	// Route by path alone, whatever host the test server has.
	doc.Servers = openapi3.Servers{{URL: routes.Prefix}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return loaded{}, fmt.Errorf("conformance: %w", err)
	}
	hookDoc, err := LoadWebhooks(openapi.Document)
	if err != nil {
		return loaded{}, err
	}
	tighten(hookDoc)
	return loaded{doc, router, hookDoc}, nil
})

// tighten closes every object schema that lists its properties, so that an
// undocumented response field is a mismatch.
func tighten(doc *openapi3.T) {
	no := false
	VisitSchemas(doc, func(s *openapi3.Schema) {
		if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			s.AdditionalProperties.Has = &no
		}
	})
}

// LoadWebhooks loads the webhooks of an OpenAPI 3.1 document as the paths
// ("/<event>") of a document of their own, with the same components:
// kin-openapi reads OpenAPI 3.0, which has no top-level webhooks.
func LoadWebhooks(document []byte) (*openapi3.T, error) {
	var raw map[string]any
	if err := json.Unmarshal(document, &raw); err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	paths := map[string]any{}
	hooks, _ := raw["webhooks"].(map[string]any)
	for name, item := range hooks {
		paths["/"+name] = item
	}
	raw["paths"] = paths
	delete(raw, "webhooks")
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("conformance: webhooks: %w", err)
	}
	return doc, nil
}

// VisitSchemas calls f once on every schema of doc, however reached:
// components, parameters, headers, and what they contain.
func VisitSchemas(doc *openapi3.T, f func(*openapi3.Schema)) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(*openapi3.SchemaRef)
	walk = func(r *openapi3.SchemaRef) {
		if r == nil || r.Value == nil || seen[r.Value] {
			return
		}
		s := r.Value
		seen[s] = true
		f(s)
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		walk(s.AdditionalProperties.Schema)
		for _, l := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf, s.AllOf} {
			for _, x := range l {
				walk(x)
			}
		}
		walk(s.Not)
	}
	for _, s := range doc.Components.Schemas {
		walk(s)
	}
	for _, p := range doc.Components.Parameters {
		walk(p.Value.Schema)
	}
	for _, h := range doc.Components.Headers {
		walk(h.Value.Schema)
	}
	for _, item := range doc.Paths.Map() {
		for _, p := range item.Parameters {
			walk(p.Value.Schema)
		}
		for _, op := range item.Operations() {
			for _, p := range op.Parameters {
				walk(p.Value.Schema)
			}
		}
	}
}

// Check returns the mismatches of one exchange (and records them). Besides
// the document, every response body is scanned for a CPR: the last line of
// defence of the spec's rule 5, across every test that goes through here.
func (c *Checker) Check(ctx context.Context, ex Exchange) []string {
	probs := c.check(ctx, ex)
	if strings.HasPrefix(ex.Header.Get("Content-Type"), "application/json") && cpr.Find(string(ex.Body)) {
		probs = append(probs, fmt.Sprintf("%s %s → %d: the response holds a CPR-like number: %s",
			ex.Request.Method, ex.Request.URL.Path, ex.Status, truncate(ex.Body)))
	}
	return c.record(probs)
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// CheckDelivery checks a webhook delivery a receiver got (its headers and
// raw body) against the document's webhooks (and records the mismatches).
func (c *Checker) CheckDelivery(r *http.Request, body []byte) []string {
	event := r.Header.Get("Service-Event-Type")
	if cpr.Find(string(body)) {
		return c.record([]string{fmt.Sprintf("delivery of %s holds a CPR-like number: %s", event, truncate(body))})
	}
	item := c.hooks.Paths.Value("/" + event)
	if item == nil || item.Post == nil {
		return c.record([]string{fmt.Sprintf("delivery of event type %q: not in the document's webhooks", event)})
	}
	req := r.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(body))
	route := &routers.Route{Spec: c.hooks, Path: "/" + event, PathItem: item, Method: http.MethodPost, Operation: item.Post}
	in := &openapi3filter.RequestValidationInput{Request: req, Route: route, Options: &openapi3filter.Options{MultiError: true}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return c.record([]string{fmt.Sprintf("delivery of %s: %s", event, oneLine(err))})
	}
	c.record(nil)
	return nil
}

func (c *Checker) record(probs []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exchanges++
	for _, p := range probs {
		if !c.seen[p] {
			c.seen[p] = true
			c.problems = append(c.problems, p)
		}
	}
	return probs
}

// Problems returns the distinct mismatches recorded so far.
func (c *Checker) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.problems)
}

// Exchanges returns how many exchanges were checked.
func (c *Checker) Exchanges() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exchanges
}

func (c *Checker) check(ctx context.Context, ex Exchange) []string {
	req := ex.Request.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(ex.RequestBody))
	req.ContentLength = int64(len(ex.RequestBody))
	if len(ex.RequestBody) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json") // documented: a missing Content-Type is read as JSON
	}
	what := fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, ex.Status)
	route, params, err := c.router.FindRoute(req)
	switch {
	case errors.Is(err, routers.ErrMethodNotAllowed):
		return c.undocumented(what, ex, http.StatusMethodNotAllowed)
	case err != nil:
		return c.undocumented(what, ex, http.StatusNotFound)
	}
	opts := &openapi3filter.Options{MultiError: true, AuthenticationFunc: bearerPresent}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	var probs []string
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && ex.Status < 400 {
		probs = append(probs, fmt.Sprintf("%s: the document refuses the request, the API accepted it: %s", what, oneLine(err)))
	}
	tally(route.Operation.OperationID, ex.Status)
	resp := route.Operation.Responses.Status(ex.Status)
	if resp == nil || resp.Value == nil {
		return append(probs, fmt.Sprintf("%s: status not documented for %s", what, route.Operation.OperationID))
	}
	if len(resp.Value.Content) == 0 && len(bytes.TrimSpace(ex.Body)) > 0 {
		probs = append(probs, fmt.Sprintf("%s: the document says no body, the API sent %d bytes", what, len(ex.Body)))
	}
	if ex.Status == http.StatusNotModified { // kin-openapi skips 304s
		for name, h := range resp.Value.Headers {
			if h.Value.Required && ex.Header.Get(name) == "" {
				probs = append(probs, fmt.Sprintf("%s: required header %s missing", what, name))
			}
		}
		return probs
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: ex.Status, Header: ex.Header,
		Body: io.NopCloser(bytes.NewReader(ex.Body)), Options: &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		probs = append(probs, fmt.Sprintf("%s: response: %s", what, oneLine(err)))
	}
	return probs
}

// undocumented checks an exchange on a path or method the document lacks:
// it must be the JSON 404 (or 405) of an unknown endpoint, or the 413 the
// edge answers to any body over the limit.
func (c *Checker) undocumented(what string, ex Exchange, want int) []string {
	if ex.Status != want && ex.Status != http.StatusRequestEntityTooLarge {
		return []string{fmt.Sprintf("%s: not in the document, so it should be %d", what, want)}
	}
	var v any
	if err := json.Unmarshal(ex.Body, &v); err != nil {
		return []string{fmt.Sprintf("%s: body is not JSON: %v", what, err)}
	}
	if err := c.errSch[ex.Status].VisitJSON(v); err != nil {
		return []string{fmt.Sprintf("%s: body is not the error of a %d: %s", what, ex.Status, oneLine(err))}
	}
	if want == http.StatusMethodNotAllowed && ex.Header.Get("Allow") == "" {
		return []string{what + ": 405 without Allow"}
	}
	return nil
}

// bearerPresent stands in for authentication: the document's requirement is
// a Bearer Authorization header; whether the key is good is the API's call.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme, _, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return errors.New("no Bearer Authorization header")
	}
	return nil
}

func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// Middleware checks every exchange with h.
func (c *Checker) Middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The handler reads the body itself, when and as far as it likes
		// (after authenticating, say): the check sees a copy, and whatever
		// the handler left unread.
		var body bytes.Buffer
		in := r.Body
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(in, &body), in}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		_, _ = io.Copy(&body, in)
		c.Check(context.WithoutCancel(r.Context()), Exchange{Request: r, RequestBody: body.Bytes(), Status: rec.status, Header: w.Header(), Body: rec.body.Bytes()})
	})
}

type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// Transport checks every exchange of an HTTP client (the black-box suite's).
func (c *Checker) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := next.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(data))
		if err != nil {
			return resp, nil // the caller sees the short body; nothing to check
		}
		c.Check(context.WithoutCancel(r.Context()), Exchange{Request: r, RequestBody: body, Status: resp.StatusCode, Header: resp.Header, Body: data})
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// tally appends "<operationId> <status>" to the file OPENAPI_COVERAGE names,
// so that a run can tell which documented answers its tests produced
// (make openapi-coverage sums the lines of all test processes).
func tally(op string, status int) {
	name := os.Getenv("OPENAPI_COVERAGE")
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "%s %d\n", op, status)
}
