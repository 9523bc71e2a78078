// Package apigw serves HTTP as an API Gateway HTTP API does for a
// template's routes: route matching, the payload format 2.0 event, the
// answer's mapping, the stage's throttles, the integration timeout and
// API Gateway's own limits and answers.
package apigw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/clock"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
)

// gateway serves HTTP as an API Gateway HTTP API does for the template's
// routes: it matches route keys ("GET /api/v1/matters/{matter}", then
// "$default"), sends the payload format 2.0 event to the route's function,
// and maps the function's answer back (status, headers, cookies, base64
// bodies). Its own answers are API Gateway's: 404 and 413 and 429 and 500
// and 503 with {"message": …}. It gives an integration 30 s.
type Gateway struct {
	routes   []*gatewayRoute
	fallback *gatewayRoute // $default
	apiID    string
	buckets  map[string]*bucket // route key -> throttle
	stage    *bucket
	timeout  time.Duration // IntegrationTimeout

	// Metrics, when set, gets API Gateway's metrics of each request
	// (Count, 4xx, 5xx, Latency, IntegrationLatency), per ApiId and Stage
	// and, as detailed metrics, per route (Method, Resource).
	// https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-metrics.html
	Metrics *cloudwatch.Store
	// AccessLog, when set, gets each request's access log line: the
	// stage's format (stack.AccessLogFormat) rendered, each field the
	// value of its $context variable, as API Gateway writes it ("-" for
	// one without a value: integrationStatus and integration.requestId
	// when no integration was called); without a format, the variables
	// by name (status, routeKey, apiId, integration.requestId, …).
	AccessLog func(fields map[string]string)
	format    map[string]string // stack.AccessLogFormat
	// Clock refills the throttles' token buckets (the wall clock when
	// nil; tests set a manual one).
	Clock clock.Clock
}

// APIID is the API's id (its Ref).
func (g *Gateway) APIID() string { return g.apiID }

// record puts a request's metrics and access log fields.
func (g *Gateway) record(at time.Time, route *gatewayRoute, method string, status int, integrated bool, latency, integration time.Duration, reqID string, line map[string]string) {
	if g.Metrics != nil {
		// HTTP APIs' dimension sets: ApiId; ApiId and Stage; and, with
		// detailed metrics, ApiId, Stage, Method and Resource.
		sets := []map[string]string{{"ApiId": g.apiID}, {"ApiId": g.apiID, "Stage": "$default"}}
		if route != nil {
			res := route.key
			if m, path, ok := strings.Cut(route.key, " "); ok {
				method, res = m, path
			}
			sets = append(sets, map[string]string{"ApiId": g.apiID, "Stage": "$default", "Method": method, "Resource": res})
		}
		flag := func(b bool) float64 {
			if b {
				return 1
			}
			return 0
		}
		for _, d := range sets {
			put := func(name string, v float64) {
				g.Metrics.PutAt(cloudwatch.Metric{Namespace: "AWS/ApiGateway", Name: name, Dims: d}, v, at)
			}
			put("Count", 1)
			put("4xx", flag(status >= 400 && status < 500))
			put("5xx", flag(status >= 500))
			put("Latency", float64(latency.Milliseconds()))
			if integrated {
				put("IntegrationLatency", float64(integration.Milliseconds()))
			}
		}
	}
	if g.AccessLog != nil {
		g.AccessLog(line)
	}
}

// accessLine renders a request's access log line from its $context
// variables: the stage's format, each field its variable's value or "-"
// (API Gateway's value for a variable it has none of), or, without a
// format, the variables by name.
// https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-logging-variables.html
func (g *Gateway) accessLine(vars map[string]string) map[string]string {
	if g.format == nil {
		return vars
	}
	line := make(map[string]string, len(g.format))
	for field, tmpl := range g.format {
		line[field] = contextVar.ReplaceAllStringFunc(tmpl, func(v string) string {
			if val, ok := vars[strings.TrimPrefix(v, "$context.")]; ok && val != "" {
				return val
			}
			return "-"
		})
	}
	return line
}

// contextVar is a $context variable in an access log format.
var contextVar = regexp.MustCompile(`\$context\.[A-Za-z0-9_.]+[A-Za-z0-9_]`)

type gatewayRoute struct {
	key, method string
	segments    []string // "{name}" for a variable
	vars        int
	fn          Function
}

// IntegrationTimeout is API Gateway's limit for an HTTP API integration.
const IntegrationTimeout = 30 * time.Second

// MaxPayload is API Gateway's limit on a request body.
const MaxPayload = 10 << 20

// MaxHeaderBytes is HTTP APIs' quota on the request line and header
// values together (10,240 bytes). AWS does not document the status of a
// request over it; localcloud answers 413, so such a request fails here
// before it meets AWS.
const MaxHeaderBytes = 10240

// headerBytes is the size of r's request line and headers.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + len("host: ") + len(r.Host)
	for name, vals := range r.Header {
		for _, v := range vals {
			n += len(name) + 2 + len(v)
		}
	}
	return n
}

// Function is what a route invokes: a Lambda function (lambda.Function).
type Function interface {
	Invoke(ctx context.Context, payload []byte, wait time.Duration) (lambda.Outcome, string, error)
	Name() string
	Reserved() int // reserved concurrency; 0: none
}

// New serves the stack's routes and throttles, with its functions by
// logical id.
func New(s *stack.Stack, fns map[string]Function) (*Gateway, error) {
	g := &Gateway{apiID: strings.ReplaceAll(uuid.NewString(), "-", "")[:10], buckets: map[string]*bucket{}, timeout: IntegrationTimeout,
		format: s.AccessLogFormat}
	for _, r := range s.Routes {
		gr := &gatewayRoute{key: r.Key, fn: fns[r.Function]}
		if r.Key == "$default" {
			g.fallback = gr
			continue
		}
		method, path, ok := strings.Cut(r.Key, " ")
		if !ok || !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("route key %q: want METHOD /path", r.Key)
		}
		gr.method = method
		for _, seg := range strings.Split(strings.Trim(path, "/"), "/") {
			if strings.HasPrefix(seg, "{") {
				gr.vars++
				if strings.HasSuffix(seg, "+}") {
					return nil, fmt.Errorf("route key %q: greedy path variables are not served", r.Key)
				}
			}
			gr.segments = append(gr.segments, seg)
		}
		g.routes = append(g.routes, gr)
	}
	if s.Throttles.Rate > 0 {
		g.stage = newBucket(s.Throttles.Rate, s.Throttles.Burst)
	}
	for key, v := range s.Throttles.Routes {
		g.buckets[key] = newBucket(v[0], v[1])
	}
	return g, nil
}

// match is the route for a request: among the routes whose method and
// segments match, the one with the fewest path variables (API Gateway
// prefers the most specific); else $default.
func (g *Gateway) match(method, path string) (*gatewayRoute, map[string]string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var best *gatewayRoute
	var bestVars map[string]string
	for _, r := range g.routes {
		if (r.method != method && r.method != "ANY") || len(r.segments) != len(segs) {
			continue
		}
		vars := map[string]string{}
		ok := true
		for i, s := range r.segments {
			switch {
			case strings.HasPrefix(s, "{"):
				if segs[i] == "" {
					ok = false
				}
				vars[strings.Trim(s, "{}")] = segs[i]
			case s != segs[i]:
				ok = false
			}
		}
		if ok && (best == nil || r.vars < best.vars) {
			best, bestVars = r, vars
		}
	}
	if best == nil {
		return g.fallback, nil
	}
	return best, bestVars
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var at time.Time // the request's start on the metrics' clock: its metrics are stamped then
	if g.Metrics != nil {
		at = g.Metrics.Now()
	}
	reqID := gatewayRequestID()
	w.Header().Set("Apigw-Requestid", reqID)
	route, vars := g.match(r.Method, r.URL.EscapedPath())
	status := 0
	fnName := ""
	integrated := false
	var integrationTook time.Duration
	integrationID := "" // the invocation's request id: the function's X-Request-Id
	defer func() {
		latency := time.Since(start)
		vars := map[string]string{"requestId": reqID, "routeKey": routeKeyOf(route), "status": strconv.Itoa(status), "integrationStatus": "-",
			"httpMethod": r.Method, "apiId": g.apiID, "responseLatency": strconv.FormatInt(latency.Milliseconds(), 10), "integrationErrorMessage": "-",
			"integration.requestId": integrationID, "requestTimeEpoch": strconv.FormatInt(start.Unix(), 10), "identity.sourceIp": remoteIP(r)}
		if integrated {
			vars["integrationStatus"] = "200"
			vars["integrationLatency"] = strconv.FormatInt(integrationTook.Milliseconds(), 10)
		}
		line := g.accessLine(vars)
		attrs := []any{"function", fnName}
		for _, k := range slices.Sorted(maps.Keys(line)) {
			attrs = append(attrs, k, line[k])
		}
		slog.Info("api gateway", attrs...) // the route key, never the raw path (infra.AccessLogFormat)
		g.record(at, route, r.Method, status, integrated, latency, integrationTook, reqID, line)
	}()
	if route == nil {
		status = http.StatusNotFound
		gatewayError(w, status, "Not Found")
		return
	}
	fnName = route.fn.Name()
	if headerBytes(r) > MaxHeaderBytes {
		status = http.StatusRequestEntityTooLarge
		gatewayError(w, status, "Request Entity Too Large")
		return
	}
	if !g.allow(route.key) {
		status = http.StatusTooManyRequests
		gatewayError(w, status, "Too Many Requests")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPayload+1))
	if err != nil {
		status = http.StatusBadRequest
		gatewayError(w, status, "Bad Request")
		return
	}
	if len(body) > MaxPayload {
		status = http.StatusRequestEntityTooLarge
		gatewayError(w, status, "Request Entity Too Large")
		return
	}
	payload, err := json.Marshal(v2Event(r, route, vars, body, reqID, g.apiID, start))
	if err != nil {
		status = http.StatusInternalServerError
		gatewayError(w, status, "Internal Server Error")
		return
	}
	if len(payload) > lambda.MaxSyncPayload {
		// The event (a body of a few MB, more once base64-encoded) is past
		// what Lambda takes in a synchronous invocation: the function never
		// runs.
		status = http.StatusRequestEntityTooLarge
		gatewayError(w, status, "Request Entity Too Large")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.timeout)
	defer cancel()
	// The integration times out at 30 s whatever the function's own
	// timeout; the invocation runs on, as in AWS, and is billed.
	type result struct {
		o   lambda.Outcome
		id  string
		err error
	}
	done := make(chan result, 1)
	// A function with reserved concurrency takes no more than that at
	// once: Lambda refuses the call beyond it at once (429
	// TooManyRequestsException, ReservedFunctionConcurrentInvocationLimitExceeded),
	// and API Gateway answers the client {"message":"Internal Server
	// Error"} (AWS: "Troubleshooting issues with HTTP API Lambda
	// integrations", docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html,
	// and "How do I troubleshoot … 500 … for API Gateway endpoints that
	// integrate with Lambda?", repost.aws/knowledge-center/api-gateway-internal-server-error:
	// a throttled backend returns "Internal server error"). Without a
	// reservation a function scales to the account's concurrency on AWS;
	// localcloud runs at most a few processes of it and queues the rest for
	// a slot, within the integration's 30 s.
	wait := time.Duration(0)
	if route.fn.Reserved() > 0 {
		wait = lambda.NoWait
	}
	integrated = true
	invoked := time.Now()
	defer func() { integrationTook = time.Since(invoked) }()
	go func() {
		o, id, err := route.fn.Invoke(ctx, payload, wait)
		done <- result{o, id, err}
	}()
	var o lambda.Outcome
	select {
	case res := <-done:
		o, integrationID, err = res.o, res.id, res.err
	case <-ctx.Done():
		err = lambda.ErrThrottled // a slot or an answer: neither came in time
	}
	switch {
	case errors.Is(err, lambda.ErrThrottled) && ctx.Err() == context.DeadlineExceeded:
		status = http.StatusServiceUnavailable // waited the integration's whole time for a slot
		gatewayError(w, status, "Service Unavailable")
		return
	case err != nil:
		status = http.StatusInternalServerError
		gatewayError(w, status, "Internal Server Error")
		return
	case o.Status != "ok":
		// A function error, a crash or a Lambda timeout inside 30 s:
		// API Gateway answers 500.
		status = http.StatusInternalServerError
		gatewayError(w, status, "Internal Server Error")
		return
	}
	status = writeV2Response(w, o.Body)
}

// remoteIP is the client's address ($context.identity.sourceIp).
func remoteIP(r *http.Request) string {
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	return ip
}

func routeKeyOf(r *gatewayRoute) string {
	if r == nil {
		return "-"
	}
	return r.key
}

func (g *Gateway) allow(key string) bool {
	now := clock.Or(g.Clock).Now()
	if b, ok := g.buckets[key]; ok {
		return b.take(now)
	}
	return g.stage == nil || g.stage.take(now)
}

func gatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message":%q}`, msg)
}

func gatewayRequestID() string {
	return base64.RawURLEncoding.EncodeToString([]byte(uuid.NewString()))[:16] + "="
}

// v2Event is the payload format 2.0 event of a request.
func v2Event(r *http.Request, route *gatewayRoute, vars map[string]string, body []byte, reqID, apiID string, at time.Time) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	var cookies []string
	for name, vals := range r.Header {
		lname := strings.ToLower(name)
		if lname == "cookie" {
			for _, v := range vals {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lname] = strings.Join(vals, ",")
	}
	headers["host"] = r.Host
	if _, ok := headers["x-forwarded-for"]; !ok {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		headers["x-forwarded-for"] = ip
	}
	// The API's own domain, as API Gateway's domainName is (never a port,
	// never the client's Host header), and the scheme and port it was
	// called on, in the headers API Gateway adds (AWS: https, 443). The
	// functions build links from these when no PUBLIC_BASE_URL is set.
	host, port := "127.0.0.1", "80"
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		host, port, _ = net.SplitHostPort(a.String())
	}
	headers["x-forwarded-proto"], headers["x-forwarded-port"] = "http", port
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = map[string]string{}
		for k, v := range q {
			query[k] = strings.Join(v, ",") // API Gateway joins a repeated parameter
		}
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: route.key, RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Cookies: cookies, Headers: headers, QueryStringParameters: query, PathParameters: vars,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: route.key, AccountID: stack.Account, Stage: "$default", RequestID: reqID, APIID: apiID,
			DomainName: host, DomainPrefix: strings.Split(host, ".")[0], Time: at.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: at.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: ip, UserAgent: r.UserAgent()},
		},
	}
	if len(body) > 0 {
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// writeV2Response maps a function's payload 2.0 answer to the HTTP answer.
func writeV2Response(w http.ResponseWriter, raw []byte) int {
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(raw, &resp); err != nil || resp.StatusCode == 0 {
		// Not the structured format: API Gateway returns the value as a
		// JSON body with 200.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(raw)
		return http.StatusOK
	}
	h := w.Header()
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return resp.StatusCode
}

// bucket is a token bucket: rate per second, burst tokens; full at its
// first take.
type bucket struct {
	mu          sync.Mutex
	rate, burst float64
	tokens      float64
	last        time.Time
}

func newBucket(rate, burst float64) *bucket {
	return &bucket{rate: rate, burst: max(burst, 1), tokens: max(burst, 1)}
}

// take takes a token at now, if one is left after the refill since the
// last take.
func (b *bucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	if now.After(b.last) {
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
