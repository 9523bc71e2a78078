package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/clock"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambdatest"
	"github.com/practice-api/practice-api/scripts/internal/localproc"
)

// The Runtime API is tested with this test binary as the bootstrap
// (lambdatest.Main).
func TestMain(m *testing.M) { lambdatest.Main(m) }

type answer struct {
	PID        int   `json:"pid"`
	DeadlineMS int64 `json:"deadline_ms"`
}

var reportStatus = regexp.MustCompile(`\tStatus: ([a-z]+)`)

func invoke(t *testing.T, f *lambda.Function, payload string, wait time.Duration) (lambda.Outcome, answer, error) {
	t.Helper()
	o, _, err := f.Invoke(context.Background(), []byte(payload), wait)
	var a answer
	if err == nil && o.Status == "ok" {
		if err := json.Unmarshal(o.Body, &a); err != nil {
			t.Fatalf("answer %q: %v", o.Body, err)
		}
	}
	return o, a, err
}

// TestRuntimeAPIRunsABootstrapAsLambdaDoes: warm reuse, the deadline from
// the timeout, errors, a crash, and a timeout that kills the process.
func TestRuntimeAPIRunsABootstrapAsLambdaDoes(t *testing.T) {
	t.Parallel()
	f, logs := lambdatest.Function(t, 2*time.Second, 0)
	before := time.Now()
	o, first, err := invoke(t, f, `{}`, 0)
	if err != nil || o.Status != "ok" {
		t.Fatalf("first invocation: %v %+v", err, o)
	}
	if d := time.UnixMilli(first.DeadlineMS).Sub(before); d < 1500*time.Millisecond || d > 2500*time.Millisecond {
		t.Errorf("the deadline was %v after the call, want the function's timeout (2s)", d)
	}
	if _, second, _ := invoke(t, f, `{}`, 0); second.PID != first.PID {
		t.Errorf("a second invocation started a new process (%d, then %d): no warm reuse", first.PID, second.PID)
	}
	if o, _, _ := invoke(t, f, `{"do":"fail"}`, 0); o.Status != "error" || !strings.Contains(string(o.Body), "asked to fail") {
		t.Errorf("a handler error: %+v", o)
	}
	if o, _, _ := invoke(t, f, `{"do":"exit"}`, 0); o.Status != "crashed" || o.ErrType != "Runtime.ExitError" {
		t.Errorf("a process that exits: %+v", o)
	}
	o, _, _ = invoke(t, f, `{"sleep":"5s"}`, 0)
	if o.Status != "timeout" || !strings.Contains(string(o.Body), "Task timed out after 2.00 seconds") {
		t.Errorf("past the timeout: %+v", o)
	}
	o, after, _ := invoke(t, f, `{}`, 0)
	if o.Status != "ok" || after.PID == first.PID {
		t.Errorf("after a timeout: %+v (pid %d, first %d)", o, after.PID, first.PID)
	}
	if localproc.Alive(first.PID) {
		t.Errorf("process %d, which crashed or timed out, is still alive", first.PID)
	}
	if got := f.Timeouts.Load(); got != 1 {
		t.Errorf("%d timeouts counted, want 1", got)
	}
	var statuses []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if lambdatest.ReportLine.MatchString(l) {
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
	t.Parallel()
	f, _ := lambdatest.Function(t, 5*time.Second, 2)
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
			case errors.Is(err, lambda.ErrThrottled):
				throttled++
			case err != nil || o.Status != "ok":
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
	t.Parallel()
	f, _ := lambdatest.Function(t, 5*time.Second, 0)
	if o, _, err := invoke(t, f, `{}`, 0); err != nil || o.Status != "ok" {
		t.Fatalf("the bootstrap did not run under its Runtime API: %+v %v", o, err)
	}
	var addr string
	for _, a := range f.RuntimeAPIs() {
		addr = a
	}
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
	t.Parallel()
	f, logs := lambdatest.Function(t, 5*time.Second, 0)
	f.Env = append(f.Env, "LOCALCLOUD_TEST_INIT_SLEEP=1500ms")
	f.InitLimit = 500 * time.Millisecond
	if o, _, err := invoke(t, f, `{}`, 0); err != nil || o.Status != "ok" {
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
	if o, _, err := invoke(t, f, `{}`, 0); err != nil || o.Status != "ok" || len(initDuration.FindAllString(logs.String(), -1)) != 1 {
		t.Fatalf("a warm invocation: %+v %v\n%s", o, err, logs.String())
	}
}

// TestMemorySizeIsEnforced: a process that touches more memory than its
// function's size dies as on Lambda (Runtime.ExitError, signal: killed),
// the invocation fails, and its REPORT line shows the whole size used;
// within its size it runs, and the next invocation gets a new process.
func TestMemorySizeIsEnforced(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/statm"); err != nil {
		t.Skip("no /proc here: the memory size is not enforced")
	}
	f, logs := lambdatest.Function(t, 10*time.Second, 0)
	f.Spec.MemoryMB = 128
	if o, _, err := invoke(t, f, `{"do":"alloc","mb":40}`, 0); err != nil || o.Status != "ok" {
		t.Fatalf("40 MB in a 128 MB function: %+v %v", o, err)
	}
	o, _, err := invoke(t, f, `{"do":"alloc","mb":200}`, 0)
	if err != nil || o.Status != "crashed" || o.ErrType != "Runtime.ExitError" || !strings.Contains(string(o.Body), "signal: killed") {
		t.Fatalf("200 MB in a 128 MB function: %+v %s %v", o, o.Body, err)
	}
	if !regexp.MustCompile(`REPORT RequestId: .*Memory Size: 128 MB\tMax Memory Used: 128 MB\tStatus: crashed\tError: .*Runtime.ExitError`).MatchString(logs.String()) {
		t.Fatalf("no REPORT line of the killed invocation:\n%s", logs.String())
	}
	if o, _, err := invoke(t, f, `{}`, 0); err != nil || o.Status != "ok" {
		t.Fatalf("the invocation after: %+v %v", o, err)
	}
}

// TestAHangIsInsideTheInvocation: a hang fault makes each invocation that
// starts under it last its delay, counted in its Duration (the REPORT
// line), or, past the timeout, time out; an invocation that started
// under the fault hangs on after it is lifted, and the next one does not.
func TestAHangIsInsideTheInvocation(t *testing.T) {
	t.Parallel()
	f, logs := lambdatest.Function(t, 2*time.Second, 0)
	// It hangs 1.5 s from its start and the fault is lifted 1.2 s after
	// the call: whenever it started before the lift, it is still hanging
	// then (a 100 ms wait for "it has started" was too short once, at
	// make test's load, and the invocation began after the lift).
	f.SetFault(&lambda.Fault{Kind: "hang", Delay: 1500 * time.Millisecond})
	hung := make(chan lambda.Outcome)
	go func() { o, _, _ := invoke(t, f, `{}`, 0); hung <- o }()
	time.Sleep(1200 * time.Millisecond)
	f.SetFault(nil)
	if o, _, err := invoke(t, f, `{}`, 0); err != nil || o.Status != "ok" {
		t.Fatalf("after the fault was lifted: %v %+v", err, o)
	}
	if o := <-hung; o.Status != "ok" {
		t.Fatalf("the hung invocation: %+v", o)
	}
	f.SetFault(&lambda.Fault{Kind: "hang", Delay: time.Hour})
	if o, _, _ := invoke(t, f, `{}`, 0); o.Status != "timeout" {
		t.Fatalf("a hang past the timeout: %+v", o)
	}
	var durations []float64
	for _, l := range strings.Split(logs.String(), "\n") {
		if m := regexp.MustCompile(`\tDuration: ([0-9.]+) ms`).FindStringSubmatch(l); m != nil {
			var ms float64
			fmt.Sscan(m[1], &ms)
			durations = append(durations, ms)
		}
	}
	// The one after the lift, the hung one, the one that timed out.
	sort.Float64s(durations)
	if len(durations) != 3 || durations[0] >= 1400 || durations[1] < 1500 || durations[2] < 2000 {
		t.Fatalf("durations %v ms: want the lifted one under 1400, the hung one 1500 or more, the timed-out one over 2000", durations)
	}
}

// TestAHangHoldsOnTheManualClock: on a manual clock (Function.Clock) a
// hung invocation ends when the clock passes its delay, not after that
// much real time, with the delay as its Duration; one whose hang passes
// the timeout times out when the clock passes the timeout (its process
// killed, its Duration the timeout); the clock's Advance returns once
// the invocation has ended (a participant while it holds).
func TestAHangHoldsOnTheManualClock(t *testing.T) {
	t.Parallel()
	f, logs := lambdatest.Function(t, 30*time.Second, 0)
	m := clock.NewManual(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC), time.Minute)
	f.Clock = m
	hold := func(delay time.Duration) chan lambda.Outcome {
		t.Helper()
		f.SetFault(&lambda.Fault{Kind: "hang", Delay: delay})
		out := make(chan lambda.Outcome, 1)
		go func() { o, _, _ := f.Invoke(context.Background(), []byte(`{}`), 0); out <- o }()
		for deadline := time.Now().Add(30 * time.Second); m.Sleeping() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the hung invocation never waited on the clock")
			}
		}
		return out
	}
	ended := func(out chan lambda.Outcome) (lambda.Outcome, bool) {
		select {
		case o := <-out:
			return o, true
		case <-time.After(10 * time.Second): // far less than the hang's real seconds
			return lambda.Outcome{}, false
		}
	}

	out := hold(26 * time.Second)
	if _, err := m.Advance(25*time.Second, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-out:
		t.Fatalf("the hang of 26 s ended after 25 s on the clock: %+v", o)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := m.Advance(time.Second, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if o, ok := ended(out); !ok || o.Status != "ok" {
		t.Fatalf("the hang of 26 s after 26 s on the clock: %+v (ended %v), want its answer", o, ok)
	}

	out = hold(time.Hour)
	if _, err := m.Advance(30*time.Second, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if o, ok := ended(out); !ok || o.Status != "timeout" || !strings.Contains(string(o.Body), "Task timed out after 30.00 seconds") {
		t.Fatalf("a hang past the timeout after 30 s on the clock: %+v (ended %v), want it timed out", o, ok)
	}
	if n := f.Timeouts.Load(); n != 1 {
		t.Errorf("timeouts %d, want 1", n)
	}
	var durations []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if m := regexp.MustCompile(`\tDuration: ([0-9.]+) ms.*\tStatus: ([a-z]+)`).FindStringSubmatch(l); m != nil {
			durations = append(durations, m[1]+" "+m[2])
		}
	}
	if got, want := strings.Join(durations, ", "), "26000.00 ok, 30000.00 timeout"; got != want {
		t.Errorf("REPORT durations %q, want %q (the clock's)", got, want)
	}
}
