package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/apigw"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/eventsource"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// wired is part of a template run in this test's process by localcloud's
// own packages, as main wires them: the template's table (on the test
// engine), its queues on a queue server, each function's role checked by
// the queue server and the table's guard, the functions' own bootstraps
// (those the test names) under the Runtime API with the environment
// localcloud gives them, the HTTP API's routes, and the demo organisation.
// What it leaves out is what a test of one mistake does not need: the
// event sources and the schedule run only when a test starts them.
type wired struct {
	st        *stack.Stack
	res       *stack.Resolver
	engine    string
	gw        *apigw.Gateway
	fns       map[string]*lambda.Function // by function name
	logs      *bytes.Buffer               // the functions' lines
	logMu     *sync.Mutex
	demoKey   string
	streamArn string
}

// lockedBuffer is a bytes.Buffer safe for the functions' writers.
type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// wire runs the template at tplPath in the test's process with the
// functions named (by their name, "matters") behind its routes; routes to
// other functions answer as a function that is not there.
func wire(t *testing.T, tplPath string, functions ...string) *wired {
	t.Helper()
	ctx := context.Background()
	st, err := stack.Load(tplPath)
	if err != nil {
		t.Fatal(err)
	}
	engine := storetest.Endpoint(t)
	db, err := store.New(ctx, store.Config{TableName: storetest.TableName("wired"), Endpoint: engine})
	if err != nil {
		t.Fatal(err)
	}
	streamArn, err := createTable(ctx, db, st.Table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(db.Table)})
	})
	// The stage's secrets, as the deploy's StageSecrets custom resource
	// makes them (createCustomResources): no function's role may write CONFIG.
	if _, err := db.SeedSecrets(ctx); err != nil {
		t.Fatal(err)
	}

	sqsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ids := iam.NewIdentities()
	sqs := sqsserver.New("http://"+sqsLn.Addr().String(), ids)
	sqsSrv := &http.Server{Handler: sqs, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = sqsSrv.Serve(sqsLn) }()
	t.Cleanup(func() { _ = sqsSrv.Close() })
	queues := map[string]*sqsserver.Queue{}
	var create func(id string) *sqsserver.Queue
	create = func(id string) *sqsserver.Queue {
		if q, ok := queues[id]; ok {
			return q
		}
		var dlq *sqsserver.Queue
		if spec := st.Queues[id]; spec.DeadLetter != "" {
			dlq = create(spec.DeadLetter)
		}
		queues[id] = sqs.Create(st.Queues[id], dlq)
		return queues[id]
	}
	for id := range st.Queues {
		create(id)
	}
	res := &stack.Resolver{Stack: st, Table: db.Table, StreamArn: streamArn, Queues: addrsOf(queues)}
	pol, err := iam.LoadPolicies(st, res)
	if err != nil {
		t.Fatal(err)
	}
	sqs.Policy = pol
	guard, err := iam.NewDynamoGuard(engine, ids, pol, db.Table, iam.TableKeys(st.Table.Props))
	if err != nil {
		t.Fatal(err)
	}
	guardSrv := httptest.NewServer(guard)
	t.Cleanup(guardSrv.Close)

	w := &wired{st: st, res: res, engine: engine, fns: map[string]*lambda.Function{}, logs: &bytes.Buffer{}, logMu: &sync.Mutex{}, streamArn: streamArn}
	logs := &lambda.LogWriter{W: lockedBuffer{w.logMu, w.logs}}
	routes := map[string]apigw.Function{}
	for id, spec := range st.Functions {
		routes[id] = absent{spec.Name}
		for _, name := range functions {
			if spec.Name != name {
				continue
			}
			env, err := functionEnv(spec, res, passedThrough(), guardSrv.URL, sqs.Base, sqs.Credential(spec.Name))
			if err != nil {
				t.Fatal(err)
			}
			f := lambda.New(spec, env, res.FunctionArn(id), 2, &lambda.Logger{Name: spec.Name, W: logs})
			t.Cleanup(f.Stop)
			w.fns[name], routes[id] = f, f
		}
	}
	if w.gw, err = apigw.New(st, routes); err != nil {
		t.Fatal(err)
	}
	var line bytes.Buffer
	if err := seed.DemoLine(ctx, db, &line, true); err != nil {
		t.Fatal(err)
	}
	var demo struct {
		DemoKey string `json:"demo_key"`
	}
	if err := json.Unmarshal(line.Bytes(), &demo); err != nil || demo.DemoKey == "" {
		t.Fatalf("demo line %q: %v", line.String(), err)
	}
	w.demoKey = demo.DemoKey
	return w
}

// absent stands for a function the test did not start: invoking it fails.
type absent struct{ name string }

func (a absent) Invoke(context.Context, []byte, time.Duration) (lambda.Outcome, string, error) {
	return lambda.Outcome{}, "", fmt.Errorf("function %s is not started in this test", a.name)
}
func (a absent) Name() string  { return a.name }
func (a absent) Reserved() int { return 0 }

// do sends a request through the HTTP API with the demo key and returns
// the status and the body.
func (w *wired) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, "/api/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+w.demoKey)
	req.Header.Set("Idempotency-Key", fmt.Sprintf("wired-%d", time.Now().UnixNano()))
	rec := httptest.NewRecorder()
	w.gw.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// log is what the functions wrote so far.
func (w *wired) log() string {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	return w.logs.String()
}

// logged reports whether a function's line holds s, waiting up to 5 s for
// it (a process's lines come in after its answer).
func (w *wired) logged(s string) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if strings.Contains(w.log(), s) || time.Now().After(deadline) {
			return strings.Contains(w.log(), s)
		}
	}
}

// invoked is how often a function ran.
func (w *wired) invoked(name string) int64 { return w.fns[name].Invocations.Load() }

// firstClient is the id of the demo organisation's first client.
func (w *wired) firstClient(t *testing.T) string {
	t.Helper()
	code, body := w.do(t, "GET", "/clients?per_page=1", "")
	var cl struct {
		Data []struct{ ID string } `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &cl); code != 200 || err != nil || len(cl.Data) == 0 {
		t.Fatalf("GET /clients: %d %s", code, body)
	}
	return cl.Data[0].ID
}

// streamTypes runs the template's stream mapping (its own filters, as
// localcloud parses them) on the table's stream into a function that
// records the type of each event it is given, until the test ends.
func (w *wired) streamTypes(t *testing.T) func() []string {
	t.Helper()
	if len(w.st.StreamMappings) != 1 {
		t.Fatalf("%d stream mappings, want 1", len(w.st.StreamMappings))
	}
	m := w.st.StreamMappings[0]
	filters, err := eventsource.ParseFilters(m.Filters)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{arn: w.res.FunctionArn(m.Function)}
	client := dynamodbstreams.New(dynamodbstreams.Options{Region: stack.Region, BaseEndpoint: aws.String(w.engine),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	s := &eventsource.Stream{Spec: m, Fn: rec, Client: client, StreamArn: w.streamArn, Filters: filters}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return rec.seen
}

// recorder is a stream's function that keeps the type of each event
// record (NewImage.type) it is invoked with.
type recorder struct {
	arn   string
	mu    sync.Mutex
	types []string
}

func (r *recorder) Invoke(_ context.Context, payload []byte, _ time.Duration) (lambda.Outcome, string, error) {
	var ev struct {
		Records []struct {
			Dynamodb struct {
				NewImage map[string]map[string]any
			} `json:"dynamodb"`
		}
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		return lambda.Outcome{}, "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range ev.Records {
		if typ, ok := rec.Dynamodb.NewImage["type"]["S"].(string); ok {
			r.types = append(r.types, typ)
		}
	}
	return lambda.Outcome{Status: "ok", Body: []byte(`{}`)}, "", nil
}

func (r *recorder) ARN() string { return r.arn }

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.types...)
}

// TestTemplateMistakesAreCaught: four mistakes a template can carry that
// every unit test passes, each run by localcloud's own packages on a
// mutated copy of the synthesized template, each failing what the e2e
// suite does under localcloud (TestDemoKeyReadsMatters reads GET /matters
// with the demo key; TestSignedDeliveryReachesTheExampleReceiver
// subscribes with POST /webhooks and waits for matter.created), while the
// template as synthesized passes the same checks:
//   - a route pointed at the wrong function (GET /matters to invoices):
//     the invoices bootstrap serves it, and it has no such route;
//   - a variable missing from a function's environment (the webhooks
//     function's DELIVERY_QUEUE_URL): its cold start fails, and so does
//     every webhooks route;
//   - a grant missing from a function's role (the matters function's
//     dynamodb:Query): its lists are refused, as IAM would refuse them;
//   - a stream filter that drops matter.created: the stream's function
//     never sees it (only the one-minute sweep would still send it, too
//     late for the suite's 10 s).
//
// The e2e suite itself runs under localcloud on the template as
// synthesized in every make test (make local-cloud-test).
func TestTemplateMistakesAreCaught(t *testing.T) {
	t.Parallel()
	tpl := template(t)
	type check func(t *testing.T, tplPath string, mutated bool)
	for _, m := range []struct {
		name  string
		edit  func(res map[string]any)
		check check
	}{
		{"wrong-route", func(res map[string]any) {
			invoices := functionNamed(res, "invoices")
			behind := func(id string) string { // an integration invokes a function through its live alias
				if r, ok := res[id].(map[string]any); ok && r["Type"] == "AWS::Lambda::Alias" {
					return stack.RefID(r["Properties"].(map[string]any)["FunctionName"])
				}
				return id
			}
			integration := resourceOf(res, "AWS::ApiGatewayV2::Integration", func(p map[string]any) bool { return behind(stack.RefID(p["IntegrationUri"])) == invoices })
			route := resourceOf(res, "AWS::ApiGatewayV2::Route", func(p map[string]any) bool { return p["RouteKey"] == "GET /api/v1/matters" })
			res[route].(map[string]any)["Properties"].(map[string]any)["Target"] = map[string]any{"Fn::Join": []any{"", []any{"integrations/", map[string]any{"Ref": integration}}}}
		}, func(t *testing.T, tplPath string, mutated bool) {
			w := wire(t, tplPath, "matters", "invoices")
			code, body := w.do(t, "GET", "/matters", "")
			byInvoices := w.invoked("invoices") > 0
			if mutated != (code != 200) || mutated != byInvoices || byInvoices == (w.invoked("matters") > 0) {
				t.Fatalf("GET /matters: %d (matters ran %d times, invoices %d): %s", code, w.invoked("matters"), w.invoked("invoices"), body)
			}
		}},
		{"missing-variable", func(res map[string]any) {
			p := res[functionNamed(res, "webhooks")].(map[string]any)["Properties"].(map[string]any)
			delete(p["Environment"].(map[string]any)["Variables"].(map[string]any), "DELIVERY_QUEUE_URL")
		}, func(t *testing.T, tplPath string, mutated bool) {
			w := wire(t, tplPath, "webhooks")
			code, body := w.do(t, "POST", "/webhooks", `{"url":"https://127.0.0.1:1/hooks","event_types":["matter.created"]}`)
			if mutated != (code != 201) || (mutated && !w.logged("DELIVERY_QUEUE_URL")) || (!mutated && strings.Contains(w.log(), "DELIVERY_QUEUE_URL")) {
				t.Fatalf("POST /webhooks: %d %s; the function's log:\n%s", code, body, w.log())
			}
		}},
		{"grant-removed", func(res map[string]any) { // the matters function may no longer Query
			dropAction(res, "matters", "dynamodb:Query")
		}, func(t *testing.T, tplPath string, mutated bool) {
			w := wire(t, tplPath, "matters")
			code, body := w.do(t, "GET", "/matters", "")
			if mutated != (code != 200) || (mutated && !w.logged("AccessDenied")) || (!mutated && strings.Contains(w.log(), "AccessDenied")) {
				t.Fatalf("GET /matters: %d %s; the function's log:\n%s", code, body, w.log())
			}
		}},
		{"filter-drops-matter-created", func(res map[string]any) {
			esm := resourceOf(res, "AWS::Lambda::EventSourceMapping", func(p map[string]any) bool { return stack.GetAttName(p["EventSourceArn"]) == "StreamArn" })
			p := res[esm].(map[string]any)["Properties"].(map[string]any)
			p["FilterCriteria"] = map[string]any{"Filters": []any{map[string]any{"Pattern": `{"eventName":["INSERT"],"dynamodb":{"NewImage":{"kind":{"S":["event"]},"type":{"S":[{"anything-but":["matter.created"]}]}}}}`}}}
		}, func(t *testing.T, tplPath string, mutated bool) {
			w := wire(t, tplPath, "matters", "parties", "timeentries")
			seen := w.streamTypes(t)
			entries := func() (n int) {
				for _, typ := range seen() {
					if typ == "time_entry.created" {
						n++
					}
				}
				return n
			}
			var n int
			entry := func(matter string) {
				t.Helper()
				n++
				body := fmt.Sprintf(`{"matter_id":%q,"date":"2026-03-01","duration_minutes":%d}`, matter, n)
				if code, raw := w.do(t, "POST", "/time-entries", body); code != 201 {
					t.Fatalf("POST /time-entries: %d %s", code, raw)
				}
			}
			waitEntries := func(want int, again func()) {
				t.Helper()
				for deadline, next := time.Now().Add(30*time.Second), time.Now(); entries() < want; time.Sleep(50 * time.Millisecond) {
					if again != nil && time.Now().After(next) {
						again()
						next = time.Now().Add(2 * time.Second)
					}
					if time.Now().After(deadline) {
						t.Fatalf("the stream's function saw %d time_entry.created events of %d: %v", entries(), want, seen())
					}
				}
			}
			code, raw := w.do(t, "GET", "/matters?status=active&per_page=1", "")
			var ms struct {
				Data []struct{ ID string } `json:"data"`
			}
			if err := json.Unmarshal([]byte(raw), &ms); code != 200 || err != nil || len(ms.Data) == 0 {
				t.Fatalf("GET /matters: %d %s", code, raw)
			}
			// The mapping starts at LATEST: time entries until one is seen
			// show that it reads the shard.
			waitEntries(1, func() { entry(ms.Data[0].ID) })
			if code, raw := w.do(t, "POST", "/matters", `{"client_id":"`+w.firstClient(t)+`"}`); code != 201 {
				t.Fatalf("POST /matters: %d %s", code, raw)
			}
			// A time entry written after the matter: its event is the sign
			// that the stream has been read past the matter's.
			want := entries() + 1
			entry(ms.Data[0].ID)
			waitEntries(want, nil)
			if got := seen(); mutated == slices.Contains(got, "matter.created") {
				t.Fatalf("the stream's function got %v", got)
			}
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			t.Run("as-synthesized", func(t *testing.T) { m.check(t, tpl, false) })
			t.Run("mutated", func(t *testing.T) { m.check(t, mutate(t, tpl, m.name, m.edit), true) })
		})
	}
}
