package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambdatest"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"

	"github.com/practice-api/practice-api/scripts/internal/localproc"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/procnet"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// These tests run localcloud as a process, as make local-cloud does, on
// the template it synthesizes (or a mutated copy of it), and look at it
// from outside; those of one mistake in a template run it in-process
// through localcloud's own packages (mistakes_test.go). Each stack runs on
// the run's shared engine in a table of its own (localproc), except where
// the test is about localcloud's own engine (it stops with localcloud;
// LOCAL_DYNAMODB_DIR keeps data and queues across a kill). The tests run
// in parallel: they mostly wait on processes and timers.

// TestMain sets the rate limit every localcloud of these tests runs with
// (100,000 a minute: none of them is about the limit) before anything
// synthesizes, so that the template they share is the one make
// local-cloud-test's e2e suite runs on (the same settings: one synth).
func TestMain(m *testing.M) {
	_ = os.Setenv("RATE_LIMIT_PER_MINUTE", "100000")
	os.Exit(localproc.Main(m))
}

var (
	synthOnce sync.Once
	synthPath string
	synthErr  error
)

// template is the local stage's template as localcloud synthesizes it
// (again only when what it depends on changed), once per test binary.
func template(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("synthesizes the local stage (Node): skipped with -short; make test runs it")
	}
	synthOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		synthPath, synthErr = synthesize(ctx)
	})
	if synthErr != nil {
		t.Fatal(synthErr)
	}
	return synthPath
}

// cloud is a running localcloud.
type cloud struct {
	*localproc.Proc
	template string // from the "localcloud ready" log line
	sqs      string
	sqsKey   string // the operator's access key id for the SQS server
}

func (c *cloud) log() []string { return c.Lines() }

// start runs localcloud with env added to the test's and waits for ready
// and for its ready log line, which names the template and the SQS server.
func start(t *testing.T, env ...string) *cloud {
	t.Helper()
	// The first run builds and synthesizes, which leaves time for another
	// process to take a port chosen for it (StartTryingPorts).
	p, err := localproc.StartTryingPorts(t, localproc.Build(t, "localcloud"), 5*time.Minute, env...)
	if err != nil {
		t.Fatal(err)
	}
	return ready(t, p)
}

// ready waits for a started localcloud's ready log line, which names the
// template and the SQS server.
func ready(t *testing.T, p *localproc.Proc) *cloud {
	t.Helper()
	c := &cloud{Proc: p}
	for deadline := time.Now().Add(5 * time.Second); c.template == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, line := range c.Lines() {
			var l struct {
				Msg      string `json:"msg"`
				Template string `json:"template"`
				SQS      string `json:"sqs_endpoint"`
				SQSKey   string `json:"sqs_access_key_id"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "localcloud ready" {
				c.template, c.sqs, c.sqsKey = l.Template, l.SQS, l.SQSKey
			}
		}
	}
	if c.template == "" {
		t.Fatalf("no localcloud ready log line:\n%s", c.Logs())
	}
	return c
}

func (c *cloud) do(t *testing.T, method, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, c.Base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.DemoKey)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// subscribeAndCreate subscribes receiver to matter.created and creates a
// matter for the demo organisation's first client (tag is its
// Idempotency-Key).
func (c *cloud) subscribeAndCreate(t *testing.T, receiver, tag string) {
	t.Helper()
	resp, body := c.do(t, "POST", "/webhooks", `{"url":"`+receiver+`/hooks","event_types":["matter.created"]}`)
	if resp.StatusCode != 201 {
		t.Fatalf("subscribe: %d %s", resp.StatusCode, body)
	}
	_, body = c.do(t, "GET", "/clients?per_page=1", "")
	var cl struct {
		Data []struct{ ID string } `json:"data"`
	}
	_ = json.Unmarshal(body, &cl)
	if resp, body := c.do(t, "POST", "/matters", `{"client_id":"`+cl.Data[0].ID+`"}`, "Idempotency-Key", tag); resp.StatusCode != 201 {
		t.Fatalf("matter: %d %s", resp.StatusCode, body)
	}
}

// servedBy is the function whose REPORT line names the request id.
func (c *cloud) servedBy(id string) string {
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, l := range c.log() {
			if m := lambdatest.ReportLine.FindStringSubmatch(l); m != nil && m[2] == id {
				return m[3]
			}
		}
	}
	return ""
}

// templateRoutes maps each route key of a template to the description of
// the function its integration invokes ("practice-api matters" → matters).
func templateRoutes(t *testing.T, path string) map[string]string {
	t.Helper()
	s, err := stack.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range s.Routes {
		out[r.Key] = s.Functions[r.Function].Name
	}
	return out
}

// TestEveryRouteIsServedByItsFamilysBootstrap sends one request per row of
// the route table and reads, from the REPORT line with the request's id,
// which bootstrap served it: it must be the function of the route's
// family, and the one the template's route points at; a path no route
// has is served by $default's (meta).
func TestEveryRouteIsServedByItsFamilysBootstrap(t *testing.T) {
	t.Parallel()
	c := start(t)
	fromTemplate := templateRoutes(t, c.template)
	sample := regexp.MustCompile(`\{[a-z_]+\}`)
	for _, rt := range routes.Table {
		path := sample.ReplaceAllString(rt.Path, "5eed0000-0000-4000-8000-000000000001")
		if rt.Path == "/reports/{type}" {
			path = "/reports/wip"
		}
		if rt.Path == "/docs/{file}" {
			path = "/docs/docs.css"
		}
		resp, _ := c.do(t, rt.Method, path, "{}", "Idempotency-Key", "route-"+rt.Name)
		id := resp.Header.Get("X-Request-Id")
		got := c.servedBy(id)
		key := rt.Method + " " + routes.Prefix + rt.Path
		if got != rt.Family || fromTemplate[key] != rt.Family {
			t.Errorf("%s (%d) was served by %q; the template routes it to %q; its family is %s", key, resp.StatusCode, got, fromTemplate[key], rt.Family)
		}
	}
	resp, _ := c.do(t, "GET", "/no-such-thing", "")
	if got := c.servedBy(resp.Header.Get("X-Request-Id")); resp.StatusCode != 404 || got != routes.Meta || fromTemplate["$default"] != routes.Meta {
		t.Errorf("an unknown path: %d from %q", resp.StatusCode, got)
	}
	// Every REPORT line has Lambda's fields; every function's own lines are
	// prefixed with its name.
	n := 0
	for _, l := range c.log() {
		if strings.Contains(l, "REPORT RequestId") {
			n++
			if !lambdatest.ReportLine.MatchString(l) || !strings.Contains(l, "Status: ") {
				t.Errorf("REPORT line: %s", l)
			}
		}
	}
	if n < len(routes.Table) {
		t.Fatalf("%d REPORT lines for %d requests", n, len(routes.Table)+1)
	}
}

// mutate writes a copy of the template, changed by edit, beside it (its
// assets are found next to the template) and returns its path.
func mutate(t *testing.T, tplPath, name string, edit func(res map[string]any)) string {
	t.Helper()
	raw, err := os.ReadFile(tplPath)
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	edit(tpl["Resources"].(map[string]any))
	out := filepath.Join(filepath.Dir(tplPath), "mutated-"+name+".template.json")
	b, _ := json.Marshal(tpl)
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(out) })
	return out
}

// resourceOf finds a resource's logical id: of type typ, where match says.
func resourceOf(res map[string]any, typ string, match func(p map[string]any) bool) string {
	for id, r := range res {
		rm := r.(map[string]any)
		if rm["Type"] == typ && match(rm["Properties"].(map[string]any)) {
			return id
		}
	}
	return ""
}

func functionNamed(res map[string]any, name string) string {
	return resourceOf(res, "AWS::Lambda::Function", func(p map[string]any) bool { return p["Description"] == "practice-api "+name })
}

// TestDeliveriesRetryByTheQueueAndDeadLetter: a receiver that fails twice
// gets attempts 1, 2 and 3, the retries waiting their pause in the delivery
// queue (SQS delays); and a delivery function that cannot start (its queue
// URL missing) leaves each job to come back after the queue's visibility
// timeout, five times, and then in the dead-letter queue.
func TestDeliveriesRetryByTheQueueAndDeadLetter(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var attempts []string
	var times []time.Time
	var calls atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts, times = append(attempts, r.Header.Get("Service-Delivery-Attempt")), append(times, time.Now())
		mu.Unlock()
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer rcv.Close()
	c := start(t, "WEBHOOK_RETRY_SCHEDULE=1s,3s,1s,1s")
	c.subscribeAndCreate(t, rcv.URL, "retry")
	for deadline := time.Now().Add(30 * time.Second); calls.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	if fmt.Sprint(attempts) != "[1 2 3]" || times[1].Sub(times[0]) < 900*time.Millisecond || times[2].Sub(times[1]) < 2900*time.Millisecond {
		mu.Unlock()
		t.Fatalf("attempts %v at %v", attempts, times)
	}
	mu.Unlock()
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	<-c.Exited

	broken := mutate(t, template(t), "dead-letters", func(res map[string]any) {
		q := ""
		for id, r := range res {
			if r.(map[string]any)["Type"] == "AWS::SQS::Queue" && strings.HasPrefix(id, "deliveryqueue") {
				q = id
			}
		}
		res[q].(map[string]any)["Properties"].(map[string]any)["VisibilityTimeout"] = 1.0
		p := res[functionNamed(res, "delivery")].(map[string]any)["Properties"].(map[string]any)
		delete(p["Environment"].(map[string]any)["Variables"].(map[string]any), "DELIVERY_QUEUE_URL")
	})
	c2 := start(t, "LOCALCLOUD_TEMPLATE="+broken)
	calls.Store(100) // the receiver must not be reached at all
	c2.subscribeAndCreate(t, rcv.URL, "dead")
	st, err := stack.Load(broken)
	if err != nil {
		t.Fatal(err)
	}
	var dlqName string
	for _, q := range st.Queues {
		if strings.HasPrefix(q.ID, "deliverydlq") {
			dlqName = q.Name
		}
	}
	for deadline := time.Now().Add(40 * time.Second); ; {
		req, _ := http.NewRequest("POST", c2.sqs, strings.NewReader(`{"QueueUrl":"`+c2.sqs+"/"+stack.Account+"/"+dlqName+`","AttributeNames":["All"]}`))
		req.Header.Set("X-Amz-Target", "AmazonSQS.GetQueueAttributes")
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+c2.sqsKey+"/20260101/"+stack.Region+"/sqs/aws4_request") // the server checks whose key it is
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Attributes map[string]string }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if out.Attributes["ApproximateNumberOfMessages"] == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no job in the dead-letter queue: %v", out.Attributes)
		}
		time.Sleep(500 * time.Millisecond)
	}
	crashes := 0
	for _, l := range c2.log() {
		if strings.Contains(l, "Function: delivery") && strings.Contains(l, "Status: crashed") {
			crashes++
		}
	}
	if crashes != 5 {
		t.Fatalf("the delivery function was invoked %d times before the dead-letter queue, want 5 (maxReceiveCount)", crashes)
	}
}

// TestStopLeavesNoProcess: SIGTERM, and SIGKILL too, leave no bootstrap
// and no engine behind.
// Its localclouds start an engine of their own, as make local-cloud does;
// nothing either listens on is reachable from another machine.
func TestStopLeavesNoProcess(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			c := startOnItsOwnEngine(t)                                                           // tried again on another port if the engine's is taken meanwhile
			for _, path := range []string{"/matters", "/clients", "/webhooks", "/openapi.json"} { // warm some bootstraps
				c.do(t, "GET", path, "")
			}
			kids := children(c.Cmd.Process.Pid)
			if len(kids) < 4 || !slices.Contains(kids, c.EnginePID) {
				t.Fatalf("%d child processes, want the engine (pid %d) and the bootstraps: %v", len(kids), c.EnginePID, kids)
			}
			listensOnLoopbackOnly(t, c)
			_ = c.Cmd.Process.Signal(sig)
			<-c.Exited
			deadline := time.Now().Add(10 * time.Second)
			for _, pid := range append(kids, c.EnginePID) {
				for localproc.Alive(pid) {
					if time.Now().After(deadline) {
						t.Fatalf("process %d outlived localcloud (%s)", pid, sig)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
}

// listensOnLoopbackOnly: nothing localcloud starts listens on an address
// another machine could reach (its gateway, Runtime APIs, queue server,
// table guard, functions and its own DynamoDB Local, with every
// organisation's data); the gateway's and the engine's listeners are
// there. (scripts/e2e checks the same of the runtime it starts, which on
// make test's shared engine starts no engine of its own.)
func listensOnLoopbackOnly(t *testing.T, c *cloud) {
	t.Helper()
	got, err := procnet.Listeners(c.Cmd.Process.Pid)
	if errors.Is(err, procnet.ErrUnsupported) {
		t.Log(err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(c.Base)
	var sawAPI, sawEngine bool
	for _, l := range got {
		if !l.Loopback() {
			t.Errorf("localcloud listens beyond loopback: %v", l)
		}
		port := ":" + strconv.Itoa(int(l.Addr.Port()))
		sawAPI = sawAPI || strings.HasSuffix(base.Host, port)
		sawEngine = sawEngine || strings.HasSuffix(c.Dynamo, port)
	}
	if !sawAPI || !sawEngine {
		t.Errorf("the gateway's (%s) or the engine's (%s) listener is missing from %v", base.Host, c.Dynamo, got)
	}
}

// children are the process ids whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var child int
		if _, err := fmt.Sscan(e.Name(), &child); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == fmt.Sprint(pid) {
			out = append(out, child)
		}
	}
	return out
}

// TestDevStageThrottlesAnswer429: the local stage synthesized with the dev
// stage's gateway throttles (infra's defaults: 100 requests a second with
// a burst of 200 on the keyed routes, 10 and 20 on the public ones, kept
// here in a STAGE_SETTINGS file as a team keeps a stage's settings) answers
// bursts past them with API Gateway's 429, before any function runs, and
// serves the rest. Two such bursts in two (scaled) five-minute periods
// fire the gateway-throttles alarm (over 100 in 2 of 3); and the settings
// name a new account's Lambda concurrency limit of 10, so a dozen
// invocations at once for a few (scaled) minutes fire the
// account-concurrency alarm (over 80 % of it, 3 of 5): the alarm campaign
// cannot fire either with the local stage's settings (firedElsewhere).
func TestDevStageThrottlesAnswer429(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "dev-throttles.json")
	// Four outbox shards, not 32: on a clock 60 times faster the stack's
	// sweeps (a Query per shard each scaled minute, the dispatcher's and
	// the claims') sent the engine make test shares a thousand calls, and
	// this test is about the gateway and its alarms.
	if err := os.WriteFile(file, []byte(`{"throttleRate":"100","throttleBurst":"200","publicThrottleRate":"10","publicThrottleBurst":"20","accountConcurrency":"10","outboxShards":"4"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := start(t, "STAGE_SETTINGS="+file, "LOCALCLOUD_TIME_SCALE=60")
	raw, err := os.ReadFile(c.template)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"ThrottlingBurstLimit": 200`) || !strings.Contains(string(raw), `"ThrottlingBurstLimit": 20`) {
		t.Fatalf("the template %s does not carry the dev throttles", c.template)
	}
	burst := func(n int, path string) map[int]int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[int]int{}
		for range n {
			wg.Go(func() {
				req, _ := http.NewRequest("GET", c.Base+path, nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 429 && string(b) != `{"message":"Too Many Requests"}` {
					t.Errorf("a 429 that is not API Gateway's: %s", b)
				}
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			})
		}
		wg.Wait()
		return codes
	}
	if codes := burst(60, "/openapi.json"); codes[429] == 0 || codes[200] < 20 || codes[200]+codes[429] != 60 {
		t.Errorf("60 at once on a public route (burst 20): %v", codes)
	}
	// Without a key: the function answers 401 at once, before any store
	// call, so the burst the gateway lets through is served in time on a
	// loaded machine too (the gateway throttles a route whatever its
	// callers send).
	//
	// At this scale a five-minute period is five wall seconds, from a
	// multiple of five (CloudWatch's periods here are on the wall clock):
	// the two keyed bursts start at two periods' starts, one after the
	// other, so that each one's 429s count in its own period however long
	// a loaded machine takes to send them (a burst that straddled two
	// periods counted under 100 in each, and a second burst that waited
	// behind the slow phase below fell outside the alarm's 3 periods).
	const period = 5 * time.Second
	atNextPeriod := func() time.Time {
		time.Sleep(time.Until(time.Now().Truncate(period).Add(period + 100*time.Millisecond)))
		return time.Now()
	}
	first := atNextPeriod()
	if codes := burst(400, "/matters?per_page=1"); codes[429] == 0 || codes[401] < 200 || codes[401]+codes[429] != 400 {
		t.Errorf("400 at once on a keyed route (burst 200): %v", codes)
	}
	second := atNextPeriod()
	if gap := second.Truncate(period).Sub(first.Truncate(period)); gap != period {
		t.Logf("the second burst is %v after the first's period: a loaded machine", gap)
	}
	if codes := burst(400, "/matters?per_page=1"); codes[429] <= 100 {
		t.Errorf("400 at once on a keyed route again: %v", codes)
	}
	alarmsPart := time.Now()
	// A dozen requests in flight at once for about five (scaled) minutes:
	// the table is slow (1.5 s a call) for matters and parties, and six
	// clients of each send one request after another; each invocation
	// starts with eleven or so others running (the account's
	// ConcurrentExecutions, over 8).
	for _, fn := range []string{routes.Matters, routes.Parties} {
		callControl(t, c, "POST", "/localcloud/faults", map[string]any{"function": fn, "store": "slow", "delay_ms": 1500})
	}
	var wg sync.WaitGroup
	until := time.Now().Add(5 * time.Second)
	for w := range 12 {
		wg.Go(func() {
			path := []string{"/matters?per_page=1", "/clients?per_page=1"}[w%2]
			for time.Now().Before(until) {
				req, _ := http.NewRequest("GET", c.Base+path, nil)
				req.Header.Set("Authorization", "Bearer "+c.DemoKey)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	for _, fn := range []string{routes.Matters, routes.Parties} {
		callControl(t, c, "POST", "/localcloud/faults", map[string]any{"function": fn, "store": "none"})
	}
	for _, prefix := range []string{"apigatewaythrottles", "accountconcurrency"} {
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(250 * time.Millisecond) {
			fired := false
			for id, a := range callControl(t, c, "GET", "/localcloud/alarms", nil) {
				fired = fired || strings.Contains(strings.ToLower(id), prefix) && a.(map[string]any)["fired"].(float64) > 0
			}
			if fired {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the %s alarm did not fire", prefix)
				break
			}
		}
	}
	t.Logf("the two alarms fired %v after the second keyed burst", time.Since(alarmsPart).Round(100*time.Millisecond))
}

// TestQueuedRetrySurvivesAKill: a delivery's retry, waiting in the
// delivery queue when localcloud is killed (SIGKILL: no shutdown), is
// sent by the localcloud that starts next on the same LOCAL_DYNAMODB_DIR:
// the queues are kept beside the table's data, as SQS keeps them across
// anything that happens to their consumers.
func TestQueuedRetrySurvivesAKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	var attempts []string
	var up atomic.Bool
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts = append(attempts, r.Header.Get("Service-Delivery-Attempt"))
		mu.Unlock()
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer rcv.Close()
	env := []string{"LOCAL_DYNAMODB_DIR=" + dir, "WEBHOOK_RETRY_SCHEDULE=10s,1s,1s,1s"}
	if shared := storetest.Shared(); shared != "" {
		// On the run's shared engine (one table for both localclouds) the
		// table outlives the kill by itself; the queues are what is tested,
		// kept in LOCAL_DYNAMODB_DIR's journal either way. (The devserver's
		// TestDataDirKeepsDataAcrossRestarts keeps an engine's data there.)
		env = append(env, "DYNAMODB_ENDPOINT="+shared, "TABLE_NAME="+storetest.TableName("kept"))
	}
	c := start(t, env...)
	if resp, body := c.do(t, "POST", "/webhooks", `{"url":"`+rcv.URL+`/hooks","event_types":["matter.created"]}`); resp.StatusCode != 201 {
		t.Fatalf("subscribe: %d %s", resp.StatusCode, body)
	}
	_, body := c.do(t, "GET", "/clients?per_page=1", "")
	var cl struct {
		Data []struct{ ID string } `json:"data"`
	}
	_ = json.Unmarshal(body, &cl)
	if resp, body := c.do(t, "POST", "/matters", `{"client_id":"`+cl.Data[0].ID+`"}`, "Idempotency-Key", "kept"); resp.StatusCode != 201 {
		t.Fatalf("matter: %d %s", resp.StatusCode, body)
	}
	waitFor := func(n int, within time.Duration) []string {
		for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
			mu.Lock()
			got := append([]string(nil), attempts...)
			mu.Unlock()
			if len(got) >= n || time.Now().After(deadline) {
				return got
			}
		}
	}
	if got := waitFor(1, 20*time.Second); fmt.Sprint(got) != "[1]" {
		t.Fatalf("the first attempt: %v", got)
	}
	time.Sleep(time.Second) // its retry is queued, 10 s out
	_ = c.Cmd.Process.Kill()
	<-c.Exited
	time.Sleep(2 * time.Second) // an engine of its own stops when localcloud dies
	up.Store(true)
	start(t, env...)
	if got := waitFor(2, 40*time.Second); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("after the kill and a restart on the same folder, the receiver got attempts %v, want [1 2]", got)
	}
}

// TestSourcesNeedTheirPermissions: a function's role without what Lambda
// needs for its event source (the delivery worker's sqs:ReceiveMessage on
// its queue) or its on-failure destination stops localcloud at start, as
// AWS refuses to create the mapping; the template as synthesized starts.
func TestSourcesNeedTheirPermissions(t *testing.T) {
	t.Parallel()
	tpl := template(t)
	check := func(tpl string) error {
		st, err := stack.Load(tpl)
		if err != nil {
			t.Fatal(err)
		}
		sqs := sqsserver.New("http://127.0.0.1:1", iam.NewIdentities())
		queues := map[string]*sqsserver.Queue{}
		for id, q := range st.Queues {
			queues[id] = sqs.Create(q, nil)
		}
		res := &stack.Resolver{Stack: st, Table: "t", StreamArn: "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/1", Queues: addrsOf(queues)}
		pol, err := iam.LoadPolicies(st, res)
		if err != nil {
			t.Fatal(err)
		}
		return checkSourcePermissions(st, res, pol)
	}
	if err := check(tpl); err != nil {
		t.Fatalf("the template as synthesized: %v", err)
	}
	broken := mutate(t, tpl, "no-receive", func(res map[string]any) { dropAction(res, "delivery", "sqs:ReceiveMessage") })
	if err := check(broken); err == nil || !strings.Contains(err.Error(), "sqs:ReceiveMessage") || !strings.Contains(err.Error(), "delivery") {
		t.Fatalf("a delivery role without sqs:ReceiveMessage: %v", err)
	}
}

// dropAction takes an action out of every statement of a function's role.
func dropAction(res map[string]any, function, action string) {
	role := stack.RefID(res[functionNamed(res, function)].(map[string]any)["Properties"].(map[string]any)["Role"])
	for _, r := range res {
		rm := r.(map[string]any)
		if rm["Type"] != "AWS::IAM::Policy" || stack.RefID(rm["Properties"].(map[string]any)["Roles"].([]any)[0]) != role {
			continue
		}
		for _, st := range rm["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			sm := st.(map[string]any)
			if acts, ok := sm["Action"].([]any); ok {
				sm["Action"] = slices.DeleteFunc(acts, func(a any) bool { return a == action })
			}
		}
	}
}

// TestAWorkerThatDiesMidSendIsSweptAfterItsJobDeadLetters: the delivery
// function's process is killed in the middle of a POST (the receiver kills
// it when the request comes), so its claim stays "sending"; the job's next
// receive finds the claim held and it comes back, and after two receives
// (the mutated template's maxReceiveCount, with a queue visibility of 1 s)
// the job is in the dead-letter queue. Nothing but the dispatcher's
// one-minute sweep is left to resolve the attempt: past the claim's lease
// it queues the job again, under the dispatcher's own role (its calls
// checked as IAM would), and the receiver gets the same attempt again.
// Time is compressed, not waited out: the lease is 30 s
// (WEBHOOK_CLAIM_LEASE; 60 s by default), still well past the receives
// (a receive past it would take the claim over itself: no sweep), and the
// sweep's rule fires every 2 s (rate(1 minute) in the template, on a
// clock 30 times faster: LOCALCLOUD_TIME_SCALE=30).
func TestAWorkerThatDiesMidSendIsSweptAfterItsJobDeadLetters(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var attempts, events []string
	var c *cloud
	killed := 0
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts, events = append(attempts, r.Header.Get("Service-Delivery-Attempt")), append(events, r.Header.Get("Service-Event-Id"))
		if len(attempts) == 1 { // the worker dies while its POST is in flight
			for _, pid := range children(c.Cmd.Process.Pid) {
				if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); strings.Contains(string(env), "\x00AWS_LAMBDA_FUNCTION_NAME=delivery\x00") {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					killed++
				}
			}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	tpl := mutate(t, template(t), "dies-mid-send", func(res map[string]any) {
		for id, r := range res {
			if r.(map[string]any)["Type"] == "AWS::SQS::Queue" && strings.HasPrefix(id, "deliveryqueue") {
				p := r.(map[string]any)["Properties"].(map[string]any)
				p["VisibilityTimeout"] = 1.0
				p["RedrivePolicy"].(map[string]any)["maxReceiveCount"] = 2.0
			}
			// Four outbox shards in every function, not 32: the sweeps (a
			// Query per shard every 2 s here, the dispatcher's and the
			// claims') are what this stack sends the engine most.
			if r.(map[string]any)["Type"] == "AWS::Lambda::Function" {
				if vars, ok := r.(map[string]any)["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any); ok {
					if _, ok := vars["OUTBOX_SHARDS"]; ok {
						vars["OUTBOX_SHARDS"] = "4"
					}
				}
			}
		}
	})
	mu.Lock()
	c = start(t, "LOCALCLOUD_TEMPLATE="+tpl, "WEBHOOK_CLAIM_LEASE=30s", "LOCALCLOUD_TIME_SCALE=30")
	mu.Unlock()
	c.subscribeAndCreate(t, rcv.URL, "dies-mid-send")
	// The lease (30 s) and the schedule (every 2 s) bound the wait.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		mu.Lock()
		n := len(attempts)
		mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attempt was not sent again (%d sent):\n%s", n, strings.Join(c.log(), "\n"))
		}
	}
	time.Sleep(2 * time.Second) // anything more would come now
	mu.Lock()
	defer mu.Unlock()
	if killed == 0 || len(attempts) != 2 || attempts[1] != "1" || events[0] != events[1] {
		t.Fatalf("%d processes killed; the receiver got attempts %v of %v; want attempt 1 twice, of one event", killed, attempts, events)
	}
	// The sweep's metrics line ends its invocation, which can end after
	// the job it queued was sent (seconds after, on a loaded machine).
	crashed, swept := false, false
	for deadline := time.Now().Add(30 * time.Second); !swept && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		crashed, swept = false, false
		for _, l := range c.log() {
			crashed = crashed || (strings.Contains(l, "Function: delivery") && strings.Contains(l, "Status: crashed"))
			swept = swept || (strings.HasPrefix(l, "[dispatcher]") && strings.Contains(l, `"WebhookClaimsSwept":1`))
		}
	}
	for _, l := range c.log() {
		if strings.Contains(l, "AccessDenied") {
			t.Errorf("a call was refused: %s", l)
		}
	}
	if !crashed || !swept {
		t.Fatalf("crashed %v, swept %v:\n%s", crashed, swept, strings.Join(c.log(), "\n"))
	}
}
