package apigw

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambdatest"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/clock"

	"github.com/aws/aws-lambda-go/events"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// TestGatewayServesAsAnHTTPAPIDoes: the payload 2.0 event a function
// gets, the mapping of its answer (headers, cookies, base64, an
// unstructured value), and API Gateway's own answers: 404 without
// $default, 500 on a function error, 503 past the integration timeout,
// 429 past the stage's throttle, for parallel clients.
func TestGatewayServesAsAnHTTPAPIDoes(t *testing.T) {
	t.Parallel()
	f, _ := lambdatest.Function(t, 10*time.Second, 0)
	s := &stack.Stack{Routes: []stack.Route{{Key: "POST /things/{id}", Function: "Probe"}, {Key: "GET /things/mine", Function: "Probe"},
		{Key: "GET /things/{id}", Function: "Probe"}, {Key: "$default", Function: "Probe"}}}
	g, err := New(s, map[string]Function{"Probe": f})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/things/42?a=1&a=2&b=x", strings.NewReader("hello"))
	req.Header.Set("Cookie", "x=1; y=2")
	req.Header.Set("X-Custom", "v")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("X-Probe") != "yes" || strings.Join(resp.Header.Values("Set-Cookie"), "|") != "a=1; Path=/|b=2" {
		t.Fatalf("answer mapping: %d %v", resp.StatusCode, resp.Header)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if ev.Version != "2.0" || ev.RouteKey != "POST /things/{id}" || ev.RawPath != "/things/42" || ev.RawQueryString != "a=1&a=2&b=x" ||
		ev.PathParameters["id"] != "42" || ev.QueryStringParameters["a"] != "1,2" || strings.Join(ev.Cookies, "|") != "x=1|y=2" ||
		ev.Headers["x-custom"] != "v" || ev.Body != "hello" || ev.IsBase64Encoded ||
		ev.RequestContext.Stage != "$default" || ev.RequestContext.DomainName != host ||
		ev.Headers["x-forwarded-proto"] != "http" || ev.Headers["x-forwarded-port"] != port || ev.RequestContext.HTTP.Method != "POST" ||
		ev.RequestContext.HTTP.Path != "/things/42" || ev.RequestContext.HTTP.SourceIP != "127.0.0.1" || ev.RequestContext.RequestID == "" {
		t.Fatalf("the event: %s", body)
	}

	for _, c := range []struct {
		method, path string
		status       int
		routeKey     string
	}{
		{"GET", "/things/mine", 201, "GET /things/mine"}, // the literal route beats {id}
		{"GET", "/things/7", 201, "GET /things/{id}"},
		{"DELETE", "/things/7", 201, "$default"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&ev)
		resp.Body.Close()
		if resp.StatusCode != c.status || ev.RouteKey != c.routeKey {
			t.Errorf("%s %s: %d, route %q; want %d, %q", c.method, c.path, resp.StatusCode, ev.RouteKey, c.status, c.routeKey)
		}
	}

	get := func(path string) (int, string, http.Header) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	if code, b, _ := get("/binary"); code != 200 || b != "\x00\x01\x02\xff" {
		t.Errorf("a base64 answer: %d %q", code, b)
	}
	if code, b, h := get("/plain"); code != 200 || b != `{"not":"structured"}` || h.Get("Content-Type") != "application/json" {
		t.Errorf("an unstructured answer: %d %q %v", code, b, h)
	}
	if code, b, _ := get("/fail"); code != 500 || b != `{"message":"Internal Server Error"}` {
		t.Errorf("a function error: %d %s", code, b)
	}
	// The integration timeout (a gateway of its own, with a short one): the
	// function takes 3 s, the client has API Gateway's 503 at the timeout.
	impatient, _ := New(s, map[string]Function{"Probe": f})
	impatient.timeout = 200 * time.Millisecond
	start := time.Now()
	rec := httptest.NewRecorder()
	impatient.ServeHTTP(rec, httptest.NewRequest("GET", "/slow", nil))
	if took := time.Since(start); rec.Code != 503 || rec.Body.String() != `{"message":"Service Unavailable"}` || took < impatient.timeout || took > 2500*time.Millisecond {
		t.Errorf("past the integration timeout: %d %s after %v", rec.Code, rec.Body, took)
	}

	// Without $default, an unmatched path is API Gateway's 404.
	g2, _ := New(&stack.Stack{Routes: s.Routes[:1]}, map[string]Function{"Probe": f})
	rec = httptest.NewRecorder()
	g2.ServeHTTP(rec, httptest.NewRequest("GET", "/elsewhere", nil))
	if rec.Code != 404 || rec.Body.String() != `{"message":"Not Found"}` {
		t.Errorf("no route: %d %s", rec.Code, rec.Body)
	}

	// The stage's throttle: a burst of 3, refilled at 1 a second; twelve
	// parallel clients get three answers and nine 429s while the clock
	// stands, and one more answer once it has moved a second.
	tick := clock.NewManual(time.Now())
	g.Clock, g.stage = tick, newBucket(1, 3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 12 {
		wg.Go(func() {
			code, _, _ := get("/things/1")
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[201] != 3 || codes[429] != 9 {
		t.Errorf("throttled: %v, want 3 answers and nine 429s", codes)
	}
	tick.Advance(999 * time.Millisecond)
	if code, _, _ := get("/things/1"); code != 429 {
		t.Errorf("0.999 s later: %d, want 429 (no whole token yet)", code)
	}
	tick.Advance(time.Millisecond)
	if code, _, _ := get("/things/1"); code != 201 {
		t.Errorf("a second later: %d, want 201 (a token refilled)", code)
	}
	if code, _, _ := get("/things/1"); code != 429 {
		t.Errorf("right after: %d, want 429", code)
	}
}

// TestReservedConcurrencyRefusesAtOnce: with a reserved concurrency of 2,
// two slow calls run and the third, sent while they do, is refused at once
// (API Gateway's 500 for a throttled Lambda) and logged as a throttle;
// once they end, calls run again.
func TestReservedConcurrencyRefusesAtOnce(t *testing.T) {
	t.Parallel()
	f, logs := lambdatest.Function(t, 10*time.Second, 2)
	g, err := New(&stack.Stack{Routes: []stack.Route{{Key: "$default", Function: "Probe"}}}, map[string]Function{"Probe": f})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The two calls hold their slots until the test releases them, however
	// slow the machine.
	release := filepath.Join(t.TempDir(), "release")
	defer func() { _ = os.WriteFile(release, nil, 0o600) }() // on a failure too: the server's Close waits for them
	var wg sync.WaitGroup
	var ended atomic.Int32
	for range 2 {
		wg.Go(func() {
			defer ended.Add(1)
			if code, _ := get("/hold?until=" + url.QueryEscape(release)); code != 201 {
				t.Errorf("a call within the reservation: %d", code)
			}
		})
	}
	for deadline := time.Now().Add(5 * time.Second); len(f.Slots) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the two slow calls never ran")
		}
	}
	start := time.Now()
	code, body := get("/quick")
	if took := time.Since(start); code != 500 || body != `{"message":"Internal Server Error"}` || took > time.Second {
		t.Errorf("a call beyond the reservation: %d %s after %v (want 500 at once)", code, body, took)
	}
	if n := ended.Load(); n != 0 {
		t.Fatalf("%d of the two held calls ended before they were released", n)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if code, _ := get("/quick"); code != 201 {
		t.Errorf("after the slow calls: %d", code)
	}
	if !strings.Contains(logs.String(), "THROTTLED Function: probe\tReserved Concurrency: 2") || f.Throttles.Load() != 1 {
		t.Errorf("the throttle is not logged or counted (%d):\n%s", f.Throttles.Load(), logs.String())
	}
}

// TestLimitsAsAWSSetsThem: API Gateway's 10,240 bytes of request line and
// headers, and Lambda's 6 MB on a synchronous event (a 5 MB binary body is
// over it once base64-encoded; 4 MB of text is not) and on a response (the
// invocation fails: API Gateway's 500).
func TestLimitsAsAWSSetsThem(t *testing.T) {
	t.Parallel()
	f, _ := lambdatest.Function(t, 10*time.Second, 0)
	g, err := New(&stack.Stack{Routes: []stack.Route{{Key: "$default", Function: "Probe"}}}, map[string]Function{"Probe": f})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	do := func(path string, body []byte, header string) (int, int) {
		req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
		if header != "" {
			req.Header.Set("X-Big", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, len(b)
	}
	if code, _ := do("/x", nil, strings.Repeat("h", 10300)); code != 413 {
		t.Errorf("11 KB of headers: %d", code)
	}
	if code, _ := do("/x", nil, strings.Repeat("h", 9000)); code != 201 {
		t.Errorf("9 KB of headers: %d", code)
	}
	if code, _ := do("/x", bytes.Repeat([]byte{0xff}, 5<<20), ""); code != 413 {
		t.Errorf("a 5 MB binary body (6.7 MB as base64): %d", code)
	}
	if code, n := do("/x", bytes.Repeat([]byte("a"), 4<<20), ""); code != 201 || n < 4<<20 {
		t.Errorf("4 MB of text: %d, %d bytes back", code, n)
	}
	if code, _ := do("/huge", nil, ""); code != 500 {
		t.Errorf("a 7 MB answer: %d", code)
	}
}

// accessLogFormat is infra.AccessLogFormat as the template writes it
// (the stage's AccessLogSettings.Format; infra's TestAccessLogCarriesNoRawPath
// holds its fields).
var accessLogFormat = map[string]string{
	"requestId": "$context.requestId", "routeKey": "$context.routeKey", "status": "$context.status",
	"integrationError": "$context.integrationErrorMessage", "integrationStatus": "$context.integrationStatus",
	"latencyMs": "$context.responseLatency", "integrationLatencyMs": "$context.integrationLatency",
	"method": "$context.httpMethod", "ip": "$context.identity.sourceIp", "time": "$context.requestTimeEpoch",
	"apiId": "$context.apiId", "integrationRequestId": "$context.integration.requestId",
}

// TestTheAccessLogIsTheStagesFormat: each request's access log line is
// the stage's format rendered, as API Gateway writes it; its
// integrationRequestId is the invocation's request id, the X-Request-Id
// the function answered (what an integrator quotes), for parallel
// clients; a request no route takes has "-" for every integration
// variable; no line keeps a $context variable unrendered (#38, item 9).
func TestTheAccessLogIsTheStagesFormat(t *testing.T) {
	t.Parallel()
	f, _ := lambdatest.Function(t, 10*time.Second, 0)
	s := &stack.Stack{Routes: []stack.Route{{Key: "GET /whoami", Function: "Probe"}, {Key: "GET /fail", Function: "Probe"}},
		AccessLogFormat: accessLogFormat}
	g, err := New(s, map[string]Function{"Probe": f})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	lines := map[string]map[string]string{} // by requestId
	g.AccessLog = func(fields map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		lines[fields["requestId"]] = fields
	}
	srv := httptest.NewServer(g)
	defer srv.Close()

	type answer struct{ path, gatewayID, requestID string }
	var answers []answer
	var wg sync.WaitGroup
	for i := range 12 {
		path := []string{"/whoami", "/whoami", "/fail", "/nowhere"}[i%4]
		wg.Go(func() {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			answers = append(answers, answer{path, resp.Header.Get("Apigw-Requestid"), resp.Header.Get("X-Request-Id")})
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 12 {
		t.Fatalf("%d access log lines for 12 requests", len(lines))
	}
	ids := map[string]bool{}
	for _, a := range answers {
		l := lines[a.gatewayID]
		if len(l) != len(accessLogFormat) {
			t.Errorf("%s: the line's fields %v, want the format's %d", a.path, l, len(accessLogFormat))
		}
		for k, v := range l {
			if v == "" || strings.Contains(v, "$context") {
				t.Errorf("%s: %s is %q", a.path, k, v)
			}
		}
		switch a.path {
		case "/whoami":
			if a.requestID == "" || l["integrationRequestId"] != a.requestID || l["status"] != "200" || l["routeKey"] != "GET /whoami" || l["integrationLatencyMs"] == "-" {
				t.Errorf("%s answered X-Request-Id %q; its line: %v", a.path, a.requestID, l)
			}
		case "/fail": // the function ran (and failed): its request id is logged, the client gets API Gateway's 500
			if l["integrationRequestId"] == "-" || l["status"] != "500" {
				t.Errorf("%s: its line %v", a.path, l)
			}
		case "/nowhere":
			if l["integrationRequestId"] != "-" || l["integrationStatus"] != "-" || l["integrationLatencyMs"] != "-" || l["status"] != "404" || l["routeKey"] != "-" {
				t.Errorf("%s: its line %v", a.path, l)
			}
		}
		if id := l["integrationRequestId"]; id != "-" {
			if ids[id] {
				t.Errorf("the request id %s is in two lines", id)
			}
			ids[id] = true
		}
		if l["method"] != "GET" || l["ip"] != "127.0.0.1" || l["apiId"] != g.APIID() {
			t.Errorf("%s: its line %v", a.path, l)
		}
	}
}
