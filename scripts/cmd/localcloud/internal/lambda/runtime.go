// Package lambda runs Lambda functions as Lambda does: each concurrent
// invocation a process of the function's own bootstrap, served by its own
// Lambda Runtime API, with the function's timeout, memory size, reserved
// concurrency and init limit, and Lambda's REPORT lines.
package lambda

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/clock"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"

	"github.com/google/uuid"
)

// Function runs one Lambda of the template: its bootstrap, one process per
// concurrent invocation up to its concurrency, each process served by its
// own Lambda Runtime API (the documented /2018-06-01/runtime endpoints) on
// a loopback port. A process is kept warm between invocations; one that
// runs past the function's timeout is killed and the invocation counts as
// timed out, as Lambda does.
type Function struct {
	Spec  *stack.Function
	Env   []string // its processes' environment
	arn   string
	Slots chan struct{} // concurrency: one token per running invocation
	out   *Logger

	mu     sync.Mutex
	idle   []*instance
	all    map[*instance]bool
	closed bool

	// Counts of its invocations, as CloudWatch's Lambda metrics count them.
	Invocations, ColdStarts, Errors, Timeouts, Throttles atomic.Int64

	// InitLimit bounds its processes' init (the package's InitLimit when
	// 0; tests shorten it).
	InitLimit time.Duration

	// Version is the version these processes run ("1": the template's);
	// AliasName the alias it is invoked through ("" when directly).
	Version, AliasName string
	// Metrics, when set, gets Lambda's invocation metrics of each call:
	// Invocations, Errors, Throttles, Duration per FunctionName, per
	// FunctionName and Resource (name:alias), and per those and
	// ExecutedVersion; and the account's ConcurrentExecutions.
	// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html
	Metrics *cloudwatch.Store

	// Clock, when set (localcloud's manual clock), is the time a hang
	// holds an invocation on: the hung invocation ends when the clock has
	// passed its hang's delay, or times out when it has passed the
	// function's timeout, however little real time went by, and its
	// Duration is the clock's. Unset, a hang holds in real time.
	Clock clock.Clock

	// Ended, when set, is called as each invocation that ran has ended
	// (whatever its outcome): it may have written to the table, and
	// localcloud's stream pollers look at once (eventsource.Bell).
	Ended func()

	fault atomic.Pointer[Fault]
}

// Fault is what a function is made to do for a fault campaign (the
// control endpoint's /localcloud/faults): crash every invocation (as a
// process that exits: Runtime.ExitError; Delay after it was made, when
// set, as a process that takes that long to die), be throttled (as when the
// account's concurrency is spent), be Delay slower to reach (slow: the
// wait is before the invocation, so the caller sees it and Lambda's
// Duration does not), or hang: each invocation that starts while the
// fault is on ends no sooner than Delay after its start (a call in it
// that does not answer), so its Duration is Delay, whatever its work
// took, and past the function's timeout it times out. Lifting a hang
// does not shorten the invocations already hanging. On a manual clock
// (Function.Clock) the hang's delay and the timeout are the clock's.
type Fault struct {
	Kind  string // crash, throttle, slow, hang; "" none
	Delay time.Duration
}

// SetFault puts a fault on the function (nil lifts it).
func (f *Function) SetFault(ft *Fault) { f.fault.Store(ft) }

// running counts the invocations in flight across every function: the
// account's ConcurrentExecutions.
var running atomic.Int64

// answeredKey carries OnAnswer's function in a context.
type answeredKey struct{}

// OnAnswer is ctx with f to call when an invocation made with it has its
// answer (or was refused): before a hang holds its end. A caller that
// waits for the function's work, not its end, leaves then (a scheduled
// invocation on the manual clock). f may be called more than once.
func OnAnswer(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, answeredKey{}, f)
}

func answered(ctx context.Context) {
	if f, ok := ctx.Value(answeredKey{}).(func()); ok {
		f()
	}
}

// now is the metrics' clock: the function's Clock, else the store's
// (the wall clock without either).
func (f *Function) now() time.Time {
	if f.Clock != nil {
		return f.Clock.Now()
	}
	if f.Metrics == nil {
		return time.Now()
	}
	return f.Metrics.Now()
}

// metric puts one of Lambda's metrics of this function, stamped at, the
// invocation's start: Lambda stamps its metrics with the time the function
// was invoked, not when the invocation ended ("The timestamp on a metric
// reflects when the function was invoked").
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics.html
func (f *Function) metric(name string, v float64, at time.Time) {
	if f.Metrics == nil {
		return
	}
	sets := []map[string]string{{"FunctionName": f.Spec.Name}}
	if f.AliasName != "" {
		res := f.Spec.Name + ":" + f.AliasName
		sets = append(sets, map[string]string{"FunctionName": f.Spec.Name, "Resource": res},
			map[string]string{"FunctionName": f.Spec.Name, "Resource": res, "ExecutedVersion": f.Version})
	}
	for _, d := range sets {
		f.Metrics.PutAt(cloudwatch.Metric{Namespace: "AWS/Lambda", Name: name, Dims: d}, v, at)
	}
}

// instance is one bootstrap process and its Runtime API.
type instance struct {
	fn      *Function
	cmd     *exec.Cmd
	ln      net.Listener
	srv     *http.Server
	work    chan *invocation // the next invocation for this process's GET /next
	exited  chan struct{}
	exitErr error

	mu      sync.Mutex
	current *invocation
	lastAt  time.Time // the start of the last invocation handed to it (began)
	initErr string

	oom  bool          // killed for passing the function's memory size
	busy chan struct{} // an invocation was handed to it (watchMemory resumes)

	started   time.Time
	ready     chan struct{} // closed at the process's first request for work: its init is over
	readyOnce sync.Once
	initDur   time.Duration
}

// invocation is one call of the function.
type invocation struct {
	at       time.Time // its start on the metrics' clock
	id       string
	payload  []byte
	deadline time.Time
	done     chan Outcome
	once     sync.Once
}

// Outcome is how an invocation ended.
type Outcome struct {
	Status  string // ok, error, timeout, crashed
	Body    []byte // the response, or the error document
	ErrType string
}

func (i *invocation) finish(o Outcome) { i.once.Do(func() { i.done <- o }) }

func New(spec *stack.Function, env []string, arn string, maxConcurrency int, out *Logger) *Function {
	n := spec.Reserved
	if n <= 0 {
		n = maxConcurrency
	}
	return &Function{Spec: spec, Env: env, arn: arn, Slots: make(chan struct{}, n), out: out, all: map[*instance]bool{}}
}

// ErrThrottled: every slot of the function is busy past the caller's
// patience (a synchronous caller gets Lambda's 429 TooManyRequests).
var ErrThrottled = errors.New("localcloud: the function's concurrency is used up")

// NoWait asks Invoke to refuse at once when every slot is busy.
const NoWait = -1

// Invoke runs one invocation and waits for its outcome. wait bounds the
// time spent waiting for a free slot (0: as long as ctx allows; NoWait:
// not at all).
func (f *Function) Invoke(ctx context.Context, payload []byte, wait time.Duration) (Outcome, string, error) {
	defer answered(ctx)
	leave := func() {}
	defer func() { leave() }() // a hold on the clock ends once the slot is free
	at := f.now()
	if o, done, err := f.beforeSlot(ctx, at); done {
		return o, "", err
	}
	if err := f.takeSlot(ctx, wait, at); err != nil {
		return Outcome{}, "", err
	}
	defer func() { <-f.Slots }()
	n := running.Add(1)
	defer running.Add(-1)
	if f.Metrics != nil {
		f.Metrics.Put(cloudwatch.Metric{Namespace: "AWS/Lambda", Name: "ConcurrentExecutions", Dims: map[string]string{}}, float64(n))
	}
	inst, cold, err := f.instance()
	if err == nil && cold {
		inst, err = f.awaitInit(inst)
	}
	if err != nil {
		return Outcome{}, "", err
	}
	inv := &invocation{at: at, id: uuid.NewString(), payload: payload, deadline: time.Now().Add(f.Spec.Timeout), done: make(chan Outcome, 1)}
	f.Invocations.Add(1)
	start := time.Now()
	hang := f.hanging()
	timer := time.NewTimer(time.Until(inv.deadline))
	defer timer.Stop()
	o := f.await(inst, inv, timer)
	var took time.Duration
	if hang != nil && f.Clock != nil {
		// A participant of the clock before the answer lets a scheduled
		// invocation's caller leave it: the clock stops at the hang's end.
		w := f.Clock.Join()
		leave = w.Leave
		answered(ctx)
		o, took = f.holdOnClock(ctx, w, inst, o, hang, at)
	} else {
		answered(ctx)
		o = f.hold(ctx, inst, o, hang, start, timer)
		took = time.Since(start)
	}
	inst.mu.Lock()
	inst.current = nil
	inst.mu.Unlock()
	f.count(o, took, at)
	f.report(inv.id, took, cold, o, inst)
	f.release(inst)
	if f.Ended != nil {
		f.Ended()
	}
	return o, inv.id, nil
}

// beforeSlot is what the function's fault makes of an invocation before it
// takes a slot: a throttle or a crash is its end (done, with its outcome
// or error), a slow function keeps the caller waiting first.
func (f *Function) beforeSlot(ctx context.Context, at time.Time) (o Outcome, done bool, err error) {
	ft := f.fault.Load()
	if ft == nil {
		return Outcome{}, false, nil
	}
	switch ft.Kind {
	case "throttle":
		f.Throttles.Add(1)
		f.metric("Throttles", 1, at)
		f.out.system(fmt.Sprintf("THROTTLED Function: %s\tReason: ConcurrentInvocationLimitExceeded (a fault)", f.Spec.Name))
		return Outcome{}, true, ErrThrottled
	case "crash":
		return f.crash(ctx, ft, at), true, nil
	case "slow":
		sleep(ctx, ft.Delay)
	}
	return Outcome{}, false, nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// crash is an invocation under a crash fault: a process that exits
// (Runtime.ExitError), after ft.Delay when set (one that takes that long
// to die), counted and reported as Lambda does.
func (f *Function) crash(ctx context.Context, ft *Fault, at time.Time) Outcome {
	if ft.Delay > 0 {
		sleep(ctx, ft.Delay)
	}
	f.Invocations.Add(1)
	f.Errors.Add(1)
	f.metric("Invocations", 1, at)
	f.metric("Errors", 1, at)
	o := Outcome{Status: "crashed", ErrType: "Runtime.ExitError", Body: []byte(`{"errorMessage":"Runtime exited with error: a fault","errorType":"Runtime.ExitError"}`)}
	f.out.system(fmt.Sprintf("REPORT RequestId: %s\tFunction: %s\tDuration: 0.00 ms\tBilled Duration: 1 ms\tMemory Size: %d MB\tStatus: crashed\tError: %s\tVersion: %s",
		uuid.NewString(), f.Spec.Name, f.Spec.MemoryMB, o.Body, f.Version))
	return o
}

// takeSlot takes one of the function's concurrency slots, waiting up to
// wait (0: as long as ctx allows; NoWait: not at all, which is throttled
// and counted as such).
func (f *Function) takeSlot(ctx context.Context, wait time.Duration, at time.Time) error {
	if wait == NoWait {
		select {
		case f.Slots <- struct{}{}:
			return nil
		default:
			f.Throttles.Add(1)
			f.metric("Throttles", 1, at)
			f.out.system(fmt.Sprintf("THROTTLED Function: %s\tReserved Concurrency: %d\tReason: ReservedFunctionConcurrentInvocationLimitExceeded", f.Spec.Name, cap(f.Slots)))
			return ErrThrottled
		}
	}
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	select {
	case f.Slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ErrThrottled
	}
}

// hanging is the hang fault on the function as an invocation starts (nil
// for none): lifting it later does not shorten that invocation.
func (f *Function) hanging() *Fault {
	if ft := f.fault.Load(); ft != nil && ft.Kind == "hang" {
		return ft
	}
	return nil
}

// await hands inv to inst's process and waits for its outcome: its answer,
// its timeout at timer (the process killed) or the process's exit.
func (f *Function) await(inst *instance, inv *invocation, timer *time.Timer) Outcome {
	inst.mu.Lock()
	inst.current, inst.lastAt = inv, inv.at
	inst.mu.Unlock()
	select {
	case inst.busy <- struct{}{}:
	default: // the watcher has one to take already
	}
	select {
	case inst.work <- inv:
	case <-inst.exited:
		inv.finish(inst.crashOutcome())
	}
	select {
	case o := <-inv.done:
		return o
	case <-timer.C:
		return f.timeout(inst)
	case <-inst.exited:
		select {
		case o := <-inv.done: // it answered, then exited
			return o
		default:
			return inst.crashOutcome()
		}
	}
}

// timeout ends an invocation past the function's timeout: Lambda stops the
// runtime. The process goes, and the next invocation starts a new one.
func (f *Function) timeout(inst *instance) Outcome {
	o := Outcome{Status: "timeout", ErrType: "Sandbox.Timedout",
		Body: fmt.Appendf(nil, `{"errorMessage":"Task timed out after %.2f seconds","errorType":"Sandbox.Timedout"}`, f.Spec.Timeout.Seconds())}
	inst.kill()
	<-inst.exited
	return o
}

// hold keeps an invocation under a hang fault (hang set) going: it ends
// hang.Delay after it started, or times out at its deadline (timer) as one
// that never answers does.
func (f *Function) hold(ctx context.Context, inst *instance, o Outcome, hang *Fault, start time.Time, timer *time.Timer) Outcome {
	if hang == nil || o.Status == "timeout" {
		return o
	}
	select {
	case <-time.After(time.Until(start.Add(hang.Delay))):
	case <-ctx.Done():
	case <-timer.C:
		return f.timeout(inst)
	}
	return o
}

// holdOnClock keeps an invocation under a hang fault going on the
// function's clock (w, a participant of it): it ends when the clock has
// passed hang.Delay from the invocation's start (at), or, when the
// function's timeout comes first, times out there as one that never
// answers does. It returns the outcome and the Duration on the clock:
// the hang's delay or the timeout, even when the clock had passed it
// before the invocation's work answered (a move the invocation did not
// hold); less only when ctx ended it first.
func (f *Function) holdOnClock(ctx context.Context, w clock.Waiter, inst *instance, o Outcome, hang *Fault, at time.Time) (Outcome, time.Duration) {
	end, timesOut := hang.Delay, false
	if hang.Delay >= f.Spec.Timeout {
		end, timesOut = f.Spec.Timeout, true
	}
	if o.Status == "timeout" { // its real deadline came first
		return o, f.Spec.Timeout
	}
	if !w.Wait(ctx, end-f.Clock.Now().Sub(at), nil) {
		return o, f.Clock.Now().Sub(at)
	}
	if timesOut {
		return f.timeout(inst), end
	}
	return o, end
}

// count counts an invocation's outcome and puts its metrics, stamped at
// its start.
func (f *Function) count(o Outcome, took time.Duration, at time.Time) {
	failed := 0.0
	switch o.Status {
	case "error", "crashed":
		f.Errors.Add(1)
		failed = 1
	case "timeout":
		f.Timeouts.Add(1)
		failed = 1
	}
	f.metric("Invocations", 1, at)
	f.metric("Errors", failed, at)
	f.metric("Duration", float64(took.Microseconds())/1000, at)
}

// report writes Lambda's REPORT line for an invocation.
func (f *Function) report(id string, took time.Duration, cold bool, o Outcome, inst *instance) {
	billed := took.Milliseconds() + 1
	line := fmt.Sprintf("REPORT RequestId: %s\tFunction: %s\tDuration: %.2f ms\tBilled Duration: %d ms\tMemory Size: %d MB",
		id, f.Spec.Name, float64(took.Microseconds())/1000, billed, f.Spec.MemoryMB)
	if mb := inst.maxMemoryMB(); mb > 0 {
		line += fmt.Sprintf("\tMax Memory Used: %d MB", mb)
	}
	if cold {
		inst.mu.Lock()
		line += fmt.Sprintf("\tInit Duration: %.2f ms", float64(inst.initDur.Microseconds())/1000)
		inst.mu.Unlock()
	}
	line += "\tStatus: " + o.Status
	if o.Status != "ok" {
		line += "\tError: " + strings.TrimSpace(string(o.Body))
	}
	if f.Version != "" {
		line += "\tVersion: " + f.Version
	}
	f.out.system(line)
}

// InitLimit bounds a process's init, from its start to its first request
// for work, as Lambda bounds an on-demand function's init phase.
const InitLimit = 10 * time.Second

// awaitInit waits for a new process's init. Past the function's init limit
// Lambda reports the init as timed out, stops it, and runs the init again
// as part of the invocation that needed it, under the function's timeout
// (a "suppressed init"): so does localcloud, with the same INIT_REPORT
// line. A process that exits during its init is the invocation's to
// report (a crash).
func (f *Function) awaitInit(inst *instance) (*instance, error) {
	limit := f.InitLimit
	if limit == 0 {
		limit = InitLimit
	}
	select {
	case <-inst.ready:
		return inst, nil
	case <-inst.exited:
		return inst, nil
	case <-time.After(limit):
	}
	f.out.system(fmt.Sprintf("INIT_REPORT Init Duration: %.2f ms\tPhase: init\tStatus: timeout", float64(time.Since(inst.started).Microseconds())/1000))
	inst.kill()
	<-inst.exited
	f.mu.Lock()
	delete(f.all, inst)
	f.mu.Unlock()
	return f.start()
}

// instance returns an idle warm process, or starts one (a cold start).
func (f *Function) instance() (*instance, bool, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, false, errors.New("localcloud: stopping")
	}
	for len(f.idle) > 0 {
		inst := f.idle[len(f.idle)-1]
		f.idle = f.idle[:len(f.idle)-1]
		select {
		case <-inst.exited:
			continue
		default:
			f.mu.Unlock()
			return inst, false, nil
		}
	}
	f.mu.Unlock()
	inst, err := f.start()
	if err != nil {
		return nil, true, err
	}
	f.ColdStarts.Add(1)
	return inst, true, nil
}

func (f *Function) release(inst *instance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-inst.exited:
		delete(f.all, inst)
		return
	default:
	}
	if f.closed {
		inst.kill()
		return
	}
	f.idle = append(f.idle, inst)
}

// start launches one bootstrap process with its own Runtime API.
func (f *Function) start() (*instance, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	inst := &instance{fn: f, ln: ln, work: make(chan *invocation), exited: make(chan struct{}), ready: make(chan struct{}), busy: make(chan struct{}, 1), started: time.Now()}
	// Only this process may reach its Runtime API: the API lives under a
	// secret path of its own, which only the process's environment holds
	// (another user of the machine cannot read it; a runtime client joins
	// AWS_LAMBDA_RUNTIME_API and /2018-06-01/… as Lambda's own do).
	token := secretToken()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", inst.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", inst.respond)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", inst.fail)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", inst.failInit)
	inst.srv = &http.Server{Handler: onlyUnder("/"+token, mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = inst.srv.Serve(ln) }()

	cmd := exec.Command(f.Spec.Bootstrap)
	cmd.Env = append(append([]string{}, f.Env...), "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String()+"/"+token)
	cmd.SysProcAttr = childAttrs()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		_ = inst.srv.Close()
		return nil, fmt.Errorf("start %s's bootstrap %s: %w", f.Spec.Name, f.Spec.Bootstrap, err)
	}
	inst.cmd = cmd
	var pipes sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		pipes.Go(func() {
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				f.out.appAt(sc.Text(), f.Spec.AppLevel, inst.began())
			}
		})
	}
	go inst.watchMemory(f.Spec.MemoryMB)
	go func() {
		pipes.Wait()
		inst.exitErr = cmd.Wait()
		_ = inst.srv.Close()
		close(inst.exited)
	}()
	f.mu.Lock()
	f.all[inst] = true
	f.mu.Unlock()
	return inst, nil
}

func (i *instance) crashOutcome() Outcome {
	i.mu.Lock()
	initErr := i.initErr
	i.mu.Unlock()
	if initErr != "" {
		return Outcome{Status: "crashed", ErrType: "Runtime.InitError", Body: []byte(initErr)}
	}
	msg := fmt.Sprintf(`{"errorMessage":"Runtime exited with error: %v","errorType":"Runtime.ExitError"}`, i.exitErr)
	return Outcome{Status: "crashed", ErrType: "Runtime.ExitError", Body: []byte(msg)}
}

// watchMemory enforces the function's memory size: Lambda's sandbox
// kills a runtime whose memory passes it (the invocation fails with
// Runtime.ExitError, "signal: killed", and its REPORT line shows the whole
// size used). localcloud reads the process's resident set every 20 ms
// while it initialises or runs an invocation, and kills it past the size;
// between invocations, when Lambda freezes the sandbox, it reads nothing
// (an idle stack's runtimes cost no wake-ups: 50 reads a second each
// before). Not an address-space limit (RLIMIT_AS): a Go
// runtime reserves over a gigabyte of address space at start and touches a
// few megabytes of it, so such a limit either stops every function or
// none; not a cgroup either, which needs a delegated cgroup v2 memory
// controller that most machines (and CI) do not give a user.
func (i *instance) watchMemory(limitMB int) {
	if limitMB <= 0 {
		return
	}
	path := fmt.Sprintf("/proc/%d/statm", i.cmd.Process.Pid)
	page := os.Getpagesize()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if !i.working() {
			tick.Stop()
			select {
			case <-i.exited:
				return
			case <-i.busy:
			}
			tick.Reset(20 * time.Millisecond)
		}
		select {
		case <-i.exited:
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return // gone, or no /proc here
		}
		fields := strings.Fields(string(b))
		if len(fields) < 2 {
			return
		}
		pages, _ := strconv.Atoi(fields[1])
		if pages*page > limitMB<<20 {
			i.mu.Lock()
			i.oom = true
			i.mu.Unlock()
			i.kill()
			return
		}
	}
}

// working tells whether the process initialises or runs an invocation
// (not frozen between invocations, as Lambda would have it).
func (i *instance) working() bool {
	select {
	case <-i.ready:
	default:
		return true // its init
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.current != nil
}

func (i *instance) kill() {
	if i.cmd != nil && i.cmd.Process != nil {
		_ = i.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// maxMemoryMB is the process's peak resident set (VmHWM), where /proc has it.
func (i *instance) maxMemoryMB() int {
	if i.cmd == nil || i.cmd.Process == nil {
		return 0
	}
	i.mu.Lock()
	oom := i.oom
	i.mu.Unlock()
	if oom {
		return i.fn.Spec.MemoryMB // all of it, as Lambda reports an out-of-memory end
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", i.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return (kb + 1023) / 1024
		}
	}
	return 0
}

// next hands the process its next invocation, with the headers the
// runtime client reads (request id, deadline, function ARN, trace id).
func (i *instance) next(w http.ResponseWriter, r *http.Request) {
	i.readyOnce.Do(func() {
		i.mu.Lock()
		i.initDur = time.Since(i.started)
		i.mu.Unlock()
		close(i.ready)
	})
	select {
	case inv := <-i.work:
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", i.fn.arn)
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-"+strconv.FormatInt(time.Now().Unix(), 16)+"-"+strings.ReplaceAll(uuid.NewString(), "-", "")[:24]+";Sampled=0")
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(inv.payload)
	case <-r.Context().Done():
	}
}

// began is the start, on the metrics' clock, of the invocation the
// process runs or ran last (zero before its first: a line of its init).
// A line the process wrote before it answered can reach the pipe's
// reader after the invocation ended: it is still that invocation's (a
// process runs one at a time).
func (i *instance) began() time.Time {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.lastAt
}

func (i *instance) invocation(id string) *invocation {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.current != nil && i.current.id == id {
		return i.current
	}
	return nil
}

// MaxSyncPayload is Lambda's limit on a synchronous invocation's event and
// on any invocation's response (6 MB; its error message says 6291556
// bytes).
const MaxSyncPayload = 6291556

func (i *instance) respond(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, MaxSyncPayload+1))
	_, _ = io.Copy(io.Discard, r.Body)
	inv := i.invocation(r.PathValue("id"))
	if inv == nil {
		http.Error(w, `{"errorMessage":"unknown or finished invocation","errorType":"InvalidRequestID"}`, http.StatusBadRequest)
		return
	}
	if len(body) > MaxSyncPayload {
		// Lambda fails the invocation and tells the runtime so.
		msg := fmt.Sprintf(`{"errorMessage":"Response payload size exceeded maximum allowed payload size (%d bytes).","errorType":"Function.ResponseSizeTooLarge"}`, MaxSyncPayload)
		inv.finish(Outcome{Status: "error", ErrType: "Function.ResponseSizeTooLarge", Body: []byte(msg)})
		http.Error(w, msg, http.StatusRequestEntityTooLarge)
		return
	}
	if t := r.Trailer.Get("Lambda-Runtime-Function-Error-Type"); t != "" { // a response stream that failed
		inv.finish(Outcome{Status: "error", ErrType: t, Body: []byte(r.Trailer.Get("Lambda-Runtime-Function-Error-Body"))})
	} else {
		inv.finish(Outcome{Status: "ok", Body: body})
	}
	w.WriteHeader(http.StatusAccepted)
}

func (i *instance) fail(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	inv := i.invocation(r.PathValue("id"))
	if inv == nil {
		http.Error(w, `{"errorMessage":"unknown or finished invocation","errorType":"InvalidRequestID"}`, http.StatusBadRequest)
		return
	}
	var e struct {
		Type string `json:"errorType"`
	}
	_ = json.Unmarshal(body, &e)
	inv.finish(Outcome{Status: "error", ErrType: e.Type, Body: body})
	w.WriteHeader(http.StatusAccepted)
}

func (i *instance) failInit(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	i.mu.Lock()
	i.initErr = string(body)
	i.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// Name is the function's name.
func (f *Function) Name() string { return f.Spec.Name }

// ARN is the function's ARN.
func (f *Function) ARN() string { return f.arn }

// Reserved is the function's reserved concurrency (0: none).
func (f *Function) Reserved() int { return f.Spec.Reserved }

// RuntimeAPIs are the addresses its processes' Runtime APIs listen on.
func (f *Function) RuntimeAPIs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for inst := range f.all {
		out = append(out, inst.ln.Addr().String())
	}
	return out
}

// Stop ends every process of the function.
func (f *Function) Stop() {
	f.mu.Lock()
	f.closed = true
	all := make([]*instance, 0, len(f.all))
	for inst := range f.all {
		all = append(all, inst)
	}
	f.mu.Unlock()
	for _, inst := range all {
		if inst.cmd != nil && inst.cmd.Process != nil {
			_ = inst.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, inst := range all {
		select {
		case <-inst.exited:
		case <-time.After(2 * time.Second):
			inst.kill()
			<-inst.exited
		}
	}
}

// secretToken is 128 random bits, hex: a per-process or per-run secret.
func secretToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// onlyUnder serves next under prefix and refuses every other path with a
// 403: a caller that does not know the prefix is not one of ours.
func onlyUnder(prefix string, next http.Handler) http.Handler {
	inner := http.StripPrefix(prefix, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, prefix+"/") {
			http.Error(w, "localcloud: not one of this localcloud's processes", http.StatusForbidden)
			return
		}
		inner.ServeHTTP(w, r)
	})
}
