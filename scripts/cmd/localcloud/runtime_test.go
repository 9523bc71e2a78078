package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/practice-api/practice-api/scripts/internal/localproc"
)

// The Runtime API is tested with this test binary as the bootstrap: run
// with LOCALCLOUD_TEST_BOOTSTRAP=1 it is a Lambda function on the real
// runtime client (aws-lambda-go), doing what each invocation asks.
func TestMain(m *testing.M) {
	if os.Getenv("LOCALCLOUD_TEST_BOOTSTRAP") == "1" {
		if d, err := time.ParseDuration(os.Getenv("LOCALCLOUD_TEST_INIT_SLEEP")); err == nil {
			time.Sleep(d) // a slow init
		}
		lambda.Start(func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in struct {
				Do      string `json:"do"`
				MB      int    `json:"mb"`
				Sleep   string `json:"sleep"`
				RawPath string `json:"rawPath"`
			}
			_ = json.Unmarshal(raw, &in)
			if in.RawPath != "" { // an API Gateway event
				return gatewayAnswer(in.RawPath, raw)
			}
			if bytes.Contains(raw, []byte(`"fail-me"`)) { // a stream batch that fails
				return nil, errors.New("asked to fail")
			}
			if bytes.Contains(raw, []byte(`"aws:sqs"`)) {
				return queueAnswer(raw)
			}
			if d, err := time.ParseDuration(in.Sleep); err == nil {
				time.Sleep(d)
			}
			deadline, _ := ctx.Deadline()
			switch in.Do {
			case "fail":
				return nil, errors.New("asked to fail")
			case "exit":
				os.Exit(3)
			case "alloc": // touch mb megabytes, and hold them a while
				b := make([]byte, in.MB<<20)
				for i := range b {
					b[i] = 1
				}
				time.Sleep(time.Second)
				return map[string]any{"pid": os.Getpid(), "held": len(b)}, nil
			}
			return map[string]any{"pid": os.Getpid(), "deadline_ms": deadline.UnixMilli()}, nil
		})
		return
	}
	os.Exit(m.Run())
}

func testFunction(t *testing.T, timeout time.Duration, reserved int) (*function, *bytes.Buffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var logs syncedBuffer
	spec := &functionSpec{id: "Probe", name: "probe", bootstrap: self, memoryMB: 128, timeout: timeout, reserved: reserved}
	f := newFunction(spec, append(os.Environ(), "LOCALCLOUD_TEST_BOOTSTRAP=1"), "arn:aws:lambda:"+localRegion+":"+localAccount+":function:probe",
		10, &lineLogger{name: "probe", w: &logWriter{w: &logs}})
	t.Cleanup(f.stop)
	return f, &logs.b
}

type syncedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

type answer struct {
	PID        int   `json:"pid"`
	DeadlineMS int64 `json:"deadline_ms"`
}

var reportStatus = regexp.MustCompile(`\tStatus: ([a-z]+)`)

func invoke(t *testing.T, f *function, payload string, wait time.Duration) (outcome, answer, error) {
	t.Helper()
	o, _, err := f.Invoke(context.Background(), []byte(payload), wait)
	var a answer
	if err == nil && o.status == "ok" {
		if err := json.Unmarshal(o.body, &a); err != nil {
			t.Fatalf("answer %q: %v", o.body, err)
		}
	}
	return o, a, err
}

// TestRuntimeAPIRunsABootstrapAsLambdaDoes: warm reuse, the deadline from
// the timeout, errors, a crash, and a timeout that kills the process.
func TestRuntimeAPIRunsABootstrapAsLambdaDoes(t *testing.T) {
	f, logs := testFunction(t, 2*time.Second, 0)
	before := time.Now()
	o, first, err := invoke(t, f, `{}`, 0)
	if err != nil || o.status != "ok" {
		t.Fatalf("first invocation: %v %+v", err, o)
	}
	if d := time.UnixMilli(first.DeadlineMS).Sub(before); d < 1500*time.Millisecond || d > 2500*time.Millisecond {
		t.Errorf("the deadline was %v after the call, want the function's timeout (2s)", d)
	}
	if _, second, _ := invoke(t, f, `{}`, 0); second.PID != first.PID {
		t.Errorf("a second invocation started a new process (%d, then %d): no warm reuse", first.PID, second.PID)
	}
	if o, _, _ := invoke(t, f, `{"do":"fail"}`, 0); o.status != "error" || !strings.Contains(string(o.body), "asked to fail") {
		t.Errorf("a handler error: %+v", o)
	}
	if o, _, _ := invoke(t, f, `{"do":"exit"}`, 0); o.status != "crashed" || o.errType != "Runtime.ExitError" {
		t.Errorf("a process that exits: %+v", o)
	}
	o, _, _ = invoke(t, f, `{"sleep":"5s"}`, 0)
	if o.status != "timeout" || !strings.Contains(string(o.body), "Task timed out after 2.00 seconds") {
		t.Errorf("past the timeout: %+v", o)
	}
	o, after, _ := invoke(t, f, `{}`, 0)
	if o.status != "ok" || after.PID == first.PID {
		t.Errorf("after a timeout: %+v (pid %d, first %d)", o, after.PID, first.PID)
	}
	if localproc.Alive(first.PID) {
		t.Errorf("process %d, which crashed or timed out, is still alive", first.PID)
	}
	if got := f.timeouts.Load(); got != 1 {
		t.Errorf("%d timeouts counted, want 1", got)
	}
	var statuses []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if reportLine.MatchString(l) {
			statuses = append(statuses, reportStatus.FindStringSubmatch(l)[1])
		}
	}
	if strings.Join(statuses, " ") != "ok ok error crashed timeout ok" {
		t.Errorf("REPORT statuses %v", statuses)
	}
}

// TestConcurrencyIsCappedByReservedConcurrency: with two reserved, three
// parallel invocations get two processes; the third caller, unwilling to
// wait, is throttled; a waiting caller gets the next free one.
func TestConcurrencyIsCappedByReservedConcurrency(t *testing.T) {
	f, _ := testFunction(t, 5*time.Second, 2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	pids, throttled := map[int]bool{}, 0
	for i := range 6 {
		wg.Go(func() {
			wait := 100 * time.Millisecond
			if i >= 4 {
				time.Sleep(300 * time.Millisecond)
				wait = 5 * time.Second // these wait for a slot
			}
			o, a, err := invoke(t, f, `{"sleep":"800ms"}`, wait)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, errThrottled):
				throttled++
			case err != nil || o.status != "ok":
				t.Errorf("invocation %d: %v %+v", i, err, o)
			default:
				pids[a.PID] = true
			}
		})
	}
	wg.Wait()
	if len(pids) != 2 || throttled != 2 {
		t.Fatalf("%d processes served, %d throttled; want 2 and 2", len(pids), throttled)
	}
}

// TestRuntimeAPIAnswersOnlyItsProcess: a process's Runtime API answers
// under the secret path its environment names, and refuses a caller on the
// same port who does not know it.
func TestRuntimeAPIAnswersOnlyItsProcess(t *testing.T) {
	f, _ := testFunction(t, 5*time.Second, 0)
	if o, _, err := invoke(t, f, `{}`, 0); err != nil || o.status != "ok" {
		t.Fatalf("the bootstrap did not run under its Runtime API: %+v %v", o, err)
	}
	f.mu.Lock()
	var addr string
	for inst := range f.all {
		addr = inst.ln.Addr().String()
	}
	f.mu.Unlock()
	for _, path := range []string{"/2018-06-01/runtime/invocation/next", "/x/2018-06-01/runtime/invocation/next"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s by a stranger: %d", path, resp.StatusCode)
		}
	}
}

var initDuration = regexp.MustCompile(`REPORT RequestId: .*\tInit Duration: ([0-9.]+) ms`)

// TestInitIsBoundedAndReported: a cold start's REPORT line carries its
// Init Duration; an init past the limit is reported as timed out
// (INIT_REPORT … Phase: init Status: timeout) and run again within the
// invocation, under the function's timeout, as Lambda's suppressed init.
func TestInitIsBoundedAndReported(t *testing.T) {
	f, logs := testFunction(t, 5*time.Second, 0)
	f.env = append(f.env, "LOCALCLOUD_TEST_INIT_SLEEP=1500ms")
	f.initLimit = 500 * time.Millisecond
	if o, _, err := invoke(t, f, `{}`, 0); err != nil || o.status != "ok" {
		t.Fatalf("an invocation after a suppressed init: %+v %v", o, err)
	}
	out := logs.String()
	if !regexp.MustCompile(`INIT_REPORT Init Duration: [0-9.]+ ms\tPhase: init\tStatus: timeout`).MatchString(out) {
		t.Fatalf("no INIT_REPORT of the timed-out init:\n%s", out)
	}
	m := initDuration.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no Init Duration in the REPORT line:\n%s", out)
	}
	if ms, _ := strconv.ParseFloat(m[1], 64); ms < 1500 {
		t.Fatalf("Init Duration %s ms, the init slept 1500 ms", m[1])
	}
	if o, _, err := invoke(t, f, `{}`, 0); err != nil || o.status != "ok" || len(initDuration.FindAllString(logs.String(), -1)) != 1 {
		t.Fatalf("a warm invocation: %+v %v\n%s", o, err, logs.String())
	}
}

// TestMemorySizeIsEnforced: a process that touches more memory than its
// function's size dies as on Lambda (Runtime.ExitError, signal: killed),
// the invocation fails, and its REPORT line shows the whole size used;
// within its size it runs, and the next invocation gets a new process.
func TestMemorySizeIsEnforced(t *testing.T) {
	if _, err := os.Stat("/proc/self/statm"); err != nil {
		t.Skip("no /proc here: the memory size is not enforced")
	}
	f, logs := testFunction(t, 10*time.Second, 0)
	f.spec.memoryMB = 128
	if o, _, err := invoke(t, f, `{"do":"alloc","mb":40}`, 0); err != nil || o.status != "ok" {
		t.Fatalf("40 MB in a 128 MB function: %+v %v", o, err)
	}
	o, _, err := invoke(t, f, `{"do":"alloc","mb":200}`, 0)
	if err != nil || o.status != "crashed" || o.errType != "Runtime.ExitError" || !strings.Contains(string(o.body), "signal: killed") {
		t.Fatalf("200 MB in a 128 MB function: %+v %s %v", o, o.body, err)
	}
	if !regexp.MustCompile(`REPORT RequestId: .*Memory Size: 128 MB\tMax Memory Used: 128 MB\tStatus: crashed\tError: .*Runtime.ExitError`).MatchString(logs.String()) {
		t.Fatalf("no REPORT line of the killed invocation:\n%s", logs.String())
	}
	if o, _, err := invoke(t, f, `{}`, 0); err != nil || o.status != "ok" {
		t.Fatalf("the invocation after: %+v %v", o, err)
	}
}
