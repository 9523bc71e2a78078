package logs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/families"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/logs"
	"github.com/practice-api/practice-api/shared/metrics"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store/storetest"
	"github.com/practice-api/practice-api/shared/webhook"
)

// spellings are CPR numbers as a path, a query or a value may carry them.
var spellings = []string{"010190-1234", "0101901234", "010190%2D1234", "０１０１９０１２３４", "01.01.90-1234", "&#48;101901234"}

// cprIDs are well-formed ids (UUIDs of digits) that read as CPR numbers
// (010190-1234, 311299-9999, 150375-1234): a GET of one passes the id's
// check and reads the store, so a fault there meets a CPR in the path.
var cprIDs = []string{"01019012-3400-4000-8000-000000000000", "31129999-9900-4000-8000-000000000001", "15037512-3400-4000-8000-000000000002"}

type lines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

type stringer string

func (s stringer) String() string { return string(s) }

// TestEveryPartOfARecordIsRedacted: the message, string attributes,
// errors, Stringers, byte slices, maps (keeping their shape), groups,
// attributes and groups given ahead (With, WithGroup) and LogValuers,
// for every spelling; numbers, times and a map without a CPR are written
// as they are.
func TestEveryPartOfARecordIsRedacted(t *testing.T) {
	for _, c := range spellings {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			var out lines
			l := logs.JSON(&out).With("ahead", "org "+c).WithGroup("req")
			l.Error("store unavailable for /people/"+c,
				"path", "/api/v1/people/"+c, "err", fmt.Errorf("get %s: %w", c, errors.New("timeout")),
				"id", stringer(c), "raw", []byte(c), "body", map[string]any{"name": "Anne", "note": "cpr " + c, "n": 3},
				slog.Group("inner", "query", "email="+c), "value", slog.AnyValue(slog.StringValue(c)),
				"count", 42, "took", 1500*time.Millisecond, "emf", map[string]any{"Timestamp": 1732250283396, "Metrics": []any{"Latency"}})
			got := out.all()
			if len(got) != 1 {
				t.Fatalf("%d lines: %q", len(got), got)
			}
			if cpr.Find(got[0]) {
				t.Fatalf("a CPR in clear: %s", got[0])
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(got[0]), &rec); err != nil {
				t.Fatalf("not JSON: %s", got[0])
			}
			req, _ := rec["req"].(map[string]any)
			if req["count"] != 42.0 || req["took"] != float64(1500*time.Millisecond) || rec["ahead"] == nil {
				t.Errorf("numbers or attributes given ahead changed: %s", got[0])
			}
			if body, _ := req["body"].(map[string]any); body["name"] != "Anne" || body["n"] != 3.0 || body["note"] != cpr.Marker {
				t.Errorf("a map lost its shape: %v", req["body"])
			}
			if emf, _ := req["emf"].(map[string]any); emf["Timestamp"] != 1732250283396.0 {
				t.Errorf("a map without a CPR changed: %v", req["emf"])
			}
		})
	}
}

// fault is what a request asks the store to do (X-Fault), carried in its
// context down to the SDK's middleware.
type faultKey struct{}

type fault struct{ kind, path string }

// faults makes the store calls of a request that asks for one fail: an
// outage (an error naming the path), a panic (its value naming the path),
// or a call that never answers (it waits for the request's deadline).
func faults(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("faults",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			f, _ := ctx.Value(faultKey{}).(fault)
			if f.kind == "panic" && apiClientCall(in.Parameters) {
				// The panic is injected in the handler's own read, after
				// authentication (the whole-runtime tests panic in the
				// key's check, whose read runs in a goroutine of its own:
				// store.Calls carries that one back to the edge).
				f.kind = ""
			}
			switch f.kind {
			case "unavailable":
				return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("injected outage serving %s", f.path)
			case "panic":
				panic("injected panic serving " + f.path)
			case "timeout":
				<-ctx.Done()
				return middleware.InitializeOutput{}, middleware.Metadata{}, ctx.Err()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// TestNoErrorPathLogsACPR forces each error path of the API (the store
// unavailable, a panic, a timeout at the request's deadline) on requests
// with a CPR number in their path and query, from clients of three
// organisations at once beside requests that succeed and a client whose
// key is unknown, through the logger every process of the service logs
// with (logs.JSON, which app.JSONLogs installs): the error lines are
// there, with their (redacted) paths, and none holds a CPR in clear (#38,
// item 1). The panic is injected in the handler's own store call (the
// read of a person whose well-formed id reads as a CPR number), in the
// request's goroutine, after authentication. The process-level tests
// force the three on whole runtimes: scripts/cmd/devserver's and
// localcloud's hung-engine tests the store unavailable and timeout
// paths, the devserver's TestAPanicIsAnsweredAndLoggedWithoutTheCPR and
// localcloud's forcePanics (in its hung-engine test) the panic.
func TestNoErrorPathLogsACPR(t *testing.T) {
	for _, id := range cprIDs {
		if _, ok := httpapi.PathID(id); !ok || !cpr.Find("/api/v1/people/"+id) {
			t.Fatalf("%s is not a well-formed id that reads as a CPR number", id)
		}
	}
	var out lines
	log := logs.JSON(&out)
	db := storetest.NewDB(t, faults)
	keys := auth.NewStore(db, 0)
	key, err := db.LoadOrCreateSecret(context.Background(), "cursor")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.LoadIDKey(context.Background()); err != nil {
		t.Fatal(err)
	}
	sealer, err := httpapi.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	h, err := families.Handler(httpapi.Config{Auth: keys, Sealer: sealer, Idempotency: idempotency.NewStore(db, key), Log: log,
		AccessLog: metrics.RequestLog(log, metrics.Dimensions{})}, db, &webhook.Deliverer{Store: webhook.NewStore(db, true)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second) // the function's deadline (9.5 s), shortened
		defer cancel()
		ctx = context.WithValue(ctx, faultKey{}, fault{kind: r.Header.Get("X-Fault"), path: r.URL.RequestURI()})
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer srv.Close()

	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for o := range 3 {
		org, err := keys.CreateOrg(context.Background(), "", fmt.Sprintf("Org %d", o), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		_, tok, err := keys.CreateKey(context.Background(), auth.KeyRequest{OrgID: org.ID, Mode: auth.ModeTest, Scopes: auth.Catalogue}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range spellings {
			for _, kind := range []string{"unavailable", "panic", "timeout", ""} {
				wg.Go(func() {
					path := "/api/v1/people/" + url.PathEscape(c) + "?email=" + url.QueryEscape(c)
					if i%2 == 1 {
						path = "/api/v1/matters?client_id=" + url.QueryEscape(c)
					}
					if kind == "panic" { // a CPR-shaped id is 404 and a CPR-shaped filter 422 before any store call: read a person
						path = "/api/v1/people/" + cprIDs[(o+i)%len(cprIDs)] + "?email=" + url.QueryEscape(c)
					}
					status, retry := do(t, srv.URL+path, tok.String(), kind)
					want := map[string]int{"unavailable": 503, "panic": 500, "timeout": 503, "": 404}[kind]
					if i%2 == 1 && kind == "" {
						want = 422
					}
					if status != want || (status == 503) != (retry != "") {
						t.Errorf("%s with fault %q: %d (Retry-After %q), want %d", path, kind, status, retry, want)
					}
					mu.Lock()
					counts[kind]++
					mu.Unlock()
				})
			}
		}
	}
	wg.Go(func() {
		if status, _ := do(t, srv.URL+"/api/v1/people/"+spellings[0], "pa_test_unknown", ""); status != 401 {
			t.Errorf("an unknown key: %d", status)
		}
	})
	wg.Wait()

	seen := map[string]int{}
	for _, l := range out.all() {
		if cpr.Find(l) {
			t.Errorf("a log line holds a CPR in clear: %s", l)
		}
		var rec struct{ Msg, Path, Err, Panic, Stack string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("not a JSON line: %s", l)
		}
		seen[rec.Msg]++
		if rec.Msg == "panic" && (rec.Stack == "" || !strings.Contains(rec.Panic, cpr.Marker)) {
			t.Errorf("a panic line without its stack or its (redacted) value: %s", l)
		}
		if rec.Msg == "store unavailable" && !strings.Contains(rec.Path, cpr.Marker) && !strings.Contains(rec.Path, "/matters") {
			t.Errorf("a store unavailable line without its (redacted) path: %s", l)
		}
		if rec.Msg == "internal error" && !strings.Contains(rec.Path, cpr.Marker) {
			t.Errorf("an internal error line without its (redacted) path: %s", l)
		}
	}
	n := 3 * len(spellings)
	if seen["store unavailable"] != 2*n || seen["panic"] != n || seen["internal error"] != n || seen["request"] != 4*n+1 {
		t.Errorf("lines by message: %v; want %d store unavailable (outage and timeout), %d panic and internal error, %d request", seen, 2*n, n, 4*n+1)
	}
	t.Logf("%d requests, lines by message: %v", 4*n+1, seen)
}

func do(t *testing.T, url, key, fault string) (int, string) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Fault", fault)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestAPanickingQueueRecordIsLoggedRedactedAndComesBack: a record whose
// handler panics (its value naming a CPR) is a batch item failure, the
// batch's other records are done, and the panic is a redacted line of the
// process's logger, not the runtime's report of a crash (app.SQSHandler).
func TestAPanickingQueueRecordIsLoggedRedactedAndComesBack(t *testing.T) {
	var out lines
	prev := slog.Default()
	slog.SetDefault(logs.JSON(&out)) // not parallel: the process's logger, as app.JSONLogs makes it
	defer slog.SetDefault(prev)
	var mu sync.Mutex
	done := map[string]bool{}
	h := app.SQSHandler(func(_ context.Context, m queue.Message) error {
		if strings.Contains(string(m.Body), "panic") {
			panic("a job for person " + spellings[0] + " went wrong")
		}
		mu.Lock()
		done[m.ID] = true
		mu.Unlock()
		return nil
	})
	var ev events.SQSEvent
	for i := range 6 {
		body := "fine"
		if i%3 == 0 {
			body = "panic"
		}
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprint(i), Body: body})
	}
	resp, err := h(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if strings.Join(failed, ",") != "0,3" || len(done) != 4 {
		t.Errorf("failed %v, done %v; want 0 and 3 failed, the other four done", failed, done)
	}
	panics := 0
	for _, l := range out.all() {
		if cpr.Find(l) {
			t.Errorf("a CPR in clear: %s", l)
		}
		if strings.Contains(l, `"msg":"message panicked"`) && strings.Contains(l, cpr.Marker) {
			panics++
		}
	}
	if panics != 2 {
		t.Errorf("%d panic lines, want 2: %q", panics, out.all())
	}
}

// apiClientCall reports whether a store call is the key's check (on an
// APICLIENT# item), which runs in goroutines of its own.
func apiClientCall(p any) bool {
	var key map[string]ddbtypes.AttributeValue
	switch in := p.(type) {
	case *dynamodb.GetItemInput:
		key = in.Key
	case *dynamodb.UpdateItemInput:
		key = in.Key
	}
	pk, _ := key["PK"].(*ddbtypes.AttributeValueMemberS)
	return pk != nil && strings.HasPrefix(pk.Value, "APICLIENT#")
}
