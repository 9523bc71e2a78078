// Command soak runs a local runtime for SOAK_MINUTES (default 10) the way
// a bad day would: several organisations import and read at once, each
// subscribed to a loopback webhook receiver that flaps (answers 500, then
// hangs past the delivery timeout, then recovers), and every
// SOAK_KILL_EVERY (default 2m) something is killed with SIGKILL. With
// SOAK_TARGET=devserver (the default) that is the devserver, started again
// on the same data; with SOAK_TARGET=localcloud it is, in turn, one
// process of the delivery worker, of the dispatcher, of the matters
// function (each mid-batch or mid-request, wherever it is), and the whole
// stack, started again on the same LOCAL_DYNAMODB_DIR. After the load, one
// organisation's receiver fails until its endpoint is disabled (20
// failures in a row), and the endpoint is turned back on with replay_since,
// as the runbook says. Then the receiver stays up until every event is
// delivered (or SOAK_DRAIN, default 5m, runs out), and it prints one JSON
// report and exits 1 on any problem:
//
//   - missing: resources answered 201 (or a 200 replay) that are not there;
//   - duplicates: resources created twice;
//   - undelivered: events of created resources never delivered (every
//     matter and time entry listed at the end, whether or not its create
//     was answered);
//   - bad_signatures: deliveries whose signature did not verify;
//   - server_errors_outside_restarts: 5xx answers while nothing was killed;
//   - unexplained redeliveries: an attempt received twice with no kill in
//     the seconds after its first copy (a killed sender may send its
//     attempt again: that is counted, not failed);
//   - problems: a create refused or never answered, a listing that failed,
//     an endpoint still disabled, the disable phase not reaching its
//     threshold.
//
// Only loopback is ever contacted, and every loop is bounded.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/scripts/internal/gobin"
	"github.com/practice-api/practice-api/shared/webhook/signature"
)

func main() {
	report, err := run()
	if report != nil {
		b, _ := json.MarshalIndent(report, "", "  ")
		fmt.Println(string(b))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func durationEnv(name string, def time.Duration, minutes bool) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	if minutes {
		var n float64
		if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
			return 0, fmt.Errorf("%s must be a positive number of minutes, got %q", name, v)
		}
		return time.Duration(n * float64(time.Minute)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s must be a Go duration such as 2m, got %q", name, v)
	}
	return d, nil
}

// Report is what the soak found.
type Report struct {
	Target                  string  `json:"target"`
	Minutes                 float64 `json:"minutes"`
	Organisations           int     `json:"organisations"`
	Restarts                int     `json:"restarts"`
	FunctionProcessesKilled int64   `json:"function_processes_killed"`
	Requests                int64   `json:"requests"`
	Created                 int     `json:"created"`
	EventsExpected          int     `json:"events_expected"`
	EventsDelivered         int     `json:"events_delivered"`
	DeliveriesReceived      int64   `json:"deliveries_received"`
	ReceiverFailures        int64   `json:"receiver_answered_500_or_hung"`
	ServerErrorsInRestarts  int64   `json:"server_errors_during_restarts"`
	Missing                 int     `json:"missing"`
	Duplicates              int     `json:"duplicates"`
	Undelivered             int     `json:"undelivered"`
	BadSignatures           int     `json:"bad_signatures"`
	// AttemptsRedelivered counts attempts received twice: a worker killed
	// between the POST and its record leaves the outcome unknown, and the
	// attempt is sent again (at least once, as the API promises). Counted;
	// a failure only when no kill came in the seconds after the first copy
	// (RedeliveredUnexplained).
	AttemptsRedelivered         int     `json:"attempts_redelivered"`
	RedeliveredUnexplained      int     `json:"attempts_redelivered_without_a_kill"`
	DisablePhase                string  `json:"disable_phase"`
	ServerErrorsOutsideRestarts int64   `json:"server_errors_outside_restarts"`
	DrainSeconds                float64 `json:"drain_seconds"`
	EndpointsDisabled           int     `json:"endpoints_disabled"`
	// StuckSending counts delivery attempts still claimed ("sending") past
	// their lease once everything is delivered: a sender that died and
	// whose job nothing will bring back.
	StuckSending int      `json:"stuck_sending"`
	Problems     []string `json:"problems,omitempty"`
}

func (r *Report) failed() bool {
	return r.Missing+r.Duplicates+r.Undelivered+r.BadSignatures+r.RedeliveredUnexplained+r.EndpointsDisabled > 0 ||
		r.ServerErrorsOutsideRestarts > 0 || r.StuckSending > 0 || len(r.Problems) > 0
}

// settings are the soak's, from its environment (SOAK_*).
type settings struct {
	minutes, killEvery, drain time.Duration
	target                    string
	orgs                      int
}

func settingsFromEnv() (settings, error) {
	var s settings
	var err error
	if s.minutes, err = durationEnv("SOAK_MINUTES", 10*time.Minute, true); err != nil {
		return s, err
	}
	if s.killEvery, err = durationEnv("SOAK_KILL_EVERY", 2*time.Minute, false); err != nil {
		return s, err
	}
	if s.drain, err = durationEnv("SOAK_DRAIN", 5*time.Minute, false); err != nil {
		return s, err
	}
	switch s.target = os.Getenv("SOAK_TARGET"); s.target {
	case "":
		s.target = "devserver"
	case "devserver", "localcloud":
	default:
		return s, fmt.Errorf("SOAK_TARGET must be devserver or localcloud, got %q", s.target)
	}
	s.orgs = 4
	if v := os.Getenv("SOAK_ORGS"); v != "" {
		if _, err := fmt.Sscan(v, &s.orgs); err != nil || s.orgs < 1 || s.orgs > 50 {
			return s, fmt.Errorf("SOAK_ORGS must be 1 to 50")
		}
	}
	return s, nil
}

func run() (*Report, error) {
	set, err := settingsFromEnv()
	if err != nil {
		return nil, err
	}
	minutes, killEvery, drain, target, orgs := set.minutes, set.killEvery, set.drain, set.target, set.orgs
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "soak")
	if err != nil {
		return nil, err
	}
	keep := false // a failed soak keeps its folder: the logs and the data explain it
	defer func() {
		if !keep {
			os.RemoveAll(work)
		}
	}()
	logf("building the %s and the admin tool", target)
	for _, name := range []string{target, "admin"} {
		// Out of go's cache of executables: a second run links nothing.
		if err := gobin.Build(context.Background(), root, "./scripts/cmd/"+name, filepath.Join(work, name), nil); err != nil {
			return nil, fmt.Errorf("build %s: %w", name, err)
		}
	}

	rcv, err := newReceiver(filepath.Join(work, "ca.pem"))
	if err != nil {
		return nil, err
	}
	defer rcv.srv.Close()

	srv := &server{name: target, root: root, bin: filepath.Join(work, target), listen: freeAddr(), dynamo: freeAddr(), logPath: filepath.Join(work, target+".log"),
		env: []string{"LOCAL_DYNAMODB_DIR=" + filepath.Join(work, "data"), "TABLE_NAME=soak", "SEED_DEMO=0", "DYNAMODB_ENDPOINT=",
			"RATE_LIMIT_PER_MINUTE=100000", "WEBHOOK_CA_FILE=" + rcv.caFile, "WEBHOOK_RETRY_SCHEDULE=1s,3s,8s,20s",
			"LOCAL_DYNAMODB_LOG=" + filepath.Join(work, "engine.log")}}
	if err := srv.start(); err != nil {
		return nil, err
	}
	defer srv.stop()
	base := "http://" + srv.listen + "/api/v1"
	rep := &Report{Target: target, Minutes: minutes.Minutes(), Organisations: orgs}
	hc := &http.Client{Timeout: 20 * time.Second}
	var clients []*client
	for i := range orgs {
		c, err := newClient(i, base, hc, srv, filepath.Join(work, "admin"), rcv)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}

	ctx, cancel := context.WithTimeout(context.Background(), minutes)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { c.work(ctx) })
	}
	wg.Go(func() { rcv.flap(ctx) })
	wg.Go(func() { srv.kill(ctx, killEvery) })
	wg.Wait()
	rcv.mode.Store(modeOK)
	rep.Restarts = int(srv.restarts.Load())
	rep.FunctionProcessesKilled = srv.functionKills.Load()

	// The disable phase: one organisation's receiver fails until its
	// endpoint is disabled, then the endpoint is turned back on with
	// replay_since, as the runbook says; the drain below then needs every
	// event of the phase, which only the replay sends.
	rep.DisablePhase = clients[0].disablePhase(rcv)
	if !strings.HasPrefix(rep.DisablePhase, "recovered") {
		rep.Problems = append(rep.Problems, "disable phase: "+rep.DisablePhase)
	}

	// Every created resource is there, once; and every matter and time
	// entry there, answered or not (a create whose answer was lost still
	// raised its event), must reach the receiver.
	expected := map[string]string{} // resource id -> org
	for _, c := range clients {
		missing, dups, problems, listed := c.verify()
		rep.Missing += missing
		rep.Duplicates += dups
		rep.Problems = append(rep.Problems, problems...)
		for _, id := range append(c.eventSources(), append(listed["matter"], listed["time_entry"]...)...) {
			expected[id] = c.org
		}
	}
	rep.drain(rcv, expected, drain)
	stuck, err := stuckSending(context.Background(), "http://"+srv.dynamo, "soak")
	if err != nil {
		rep.Problems = append(rep.Problems, "reading the delivery claims: "+err.Error())
	}
	rep.StuckSending = stuck
	var examples []string
	rep.AttemptsRedelivered, rep.RedeliveredUnexplained, rep.BadSignatures, rep.DeliveriesReceived, rep.ReceiverFailures, examples = rcv.stats(func(first time.Time) bool {
		return srv.killedWithin(first, 0, 30*time.Second) // the sender died before it recorded the attempt
	})
	rep.Problems = append(rep.Problems, examples...)

	for _, c := range clients {
		rep.add(c)
	}
	if rep.failed() {
		keep = true
		return rep, fmt.Errorf("the soak found problems; the %s's log, the answers it gave and its data are in %s", target, work)
	}
	return rep, nil
}

// kill kills the target every interval until ctx ends: under localcloud
// single function processes in turn, then the whole stack; the devserver
// whole.
func (s *server) kill(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	victims := []string{"stack"}
	if s.name == "localcloud" {
		victims = []string{"delivery", "dispatcher", "matters", "stack"}
	}
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch v := victims[i%len(victims)]; v {
		case "stack":
			logf("kill -9 the %s", s.name)
			if err := s.restart(); err != nil {
				logf("restart: %v", err)
			}
		default:
			n := s.killFunction(v)
			logf("kill -9 %d process(es) of the %s function", n, v)
		}
	}
}

// drain waits, at most drain, for every expected event to reach the
// receiver, and counts those that did not.
func (rep *Report) drain(rcv *receiver, expected map[string]string, drain time.Duration) {
	rep.EventsExpected = len(expected)
	logf("load over; waiting for every event to be delivered (at most %s)", drain)
	began := time.Now()
	for time.Since(began) < drain {
		if rcv.deliveredCount(expected) == len(expected) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	rep.DrainSeconds = time.Since(began).Round(time.Second).Seconds()
	rep.EventsDelivered = rcv.deliveredCount(expected)
	rep.Undelivered = len(expected) - rep.EventsDelivered
	if rep.Undelivered > 0 {
		n := 0
		for id := range expected {
			if !rcv.delivered(id) && n < 5 {
				rep.Problems = append(rep.Problems, "never delivered: the event of "+id)
				n++
			}
		}
	}
}

// add counts c's part of the report: its endpoint still on, what it
// created and asked, the errors it met.
func (rep *Report) add(c *client) {
	if status, m := c.do("GET", "/webhooks", "", ""); status == 200 {
		for _, ep := range m["data"].([]any) {
			if ep.(map[string]any)["is_active"] != true {
				rep.EndpointsDisabled++
				rep.Problems = append(rep.Problems, fmt.Sprintf("org %d: its endpoint is disabled at the end, after %v consecutive failures", c.n, ep.(map[string]any)["consecutive_failures"]))
			}
		}
	} else {
		rep.Problems = append(rep.Problems, fmt.Sprintf("org %d: listing its webhooks answered %d", c.n, status))
	}
	rep.Created += c.created()
	rep.Requests += c.requests.Load()
	rep.ServerErrorsOutsideRestarts += c.errOutside.Load()
	rep.ServerErrorsInRestarts += c.errInside.Load()
	rep.Problems = append(rep.Problems, c.problemList()...)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+" "+format+"\n", args...)
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// server is the runtime's process (the devserver or localcloud),
// restarted on the same ports and data.
type server struct {
	name, root                   string // devserver or localcloud; the repository (localcloud synthesizes there)
	bin, listen, dynamo, logPath string
	env                          []string
	mu                           sync.Mutex
	cmd                          *exec.Cmd
	template                     string // localcloud's, from its ready line
	down                         atomic.Bool
	downSince, upAt              atomic.Int64 // unix nanos of the last kill and the last ready
	restarts                     atomic.Int64
	kills                        []time.Time // every kill, of the stack or of a function's process
	functionKills                atomic.Int64
}

func (s *server) start() error {
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var lastErr error
	for attempt := range 30 { // the killed engine may hold its port for a moment
		cmd := exec.Command(s.bin)
		cmd.Dir = s.root
		cmd.Env = append(append(os.Environ(), s.env...), "LISTEN_ADDR="+s.listen, "LOCAL_DYNAMODB_ADDR="+s.dynamo)
		stderr, _ := cmd.StderrPipe()
		cmd.Stdout = logFile
		if err := cmd.Start(); err != nil {
			return err
		}
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			sent := false
			for sc.Scan() {
				line := sc.Text()
				fmt.Fprintln(logFile, line)
				var l struct {
					Msg, Template string
				}
				if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "localcloud ready" {
					s.mu.Lock()
					s.template = l.Template
					s.mu.Unlock()
				}
				if !sent && strings.HasPrefix(line, "ready ") {
					ready <- true
					sent = true
				}
			}
			if !sent {
				ready <- false
			}
		}()
		select {
		case ok := <-ready:
			if ok {
				s.mu.Lock()
				s.cmd = cmd
				s.mu.Unlock()
				s.upAt.Store(time.Now().UnixNano())
				s.down.Store(false)
				return nil
			}
			_ = cmd.Wait()
			lastErr = fmt.Errorf("%s exited before ready (attempt %d; see %s)", s.name, attempt+1, s.logPath)
		case <-time.After(5 * time.Minute): // localcloud's first start builds and synthesizes
			_ = cmd.Process.Kill()
			return fmt.Errorf("%s not ready after 5 minutes; see %s", s.name, s.logPath)
		}
		time.Sleep(time.Second)
	}
	return lastErr
}

// restart kills the runtime with SIGKILL (its engine and, for localcloud,
// its function processes go with it) and starts it again.
func (s *server) restart() error {
	s.down.Store(true)
	s.downSince.Store(time.Now().UnixNano())
	s.mu.Lock()
	cmd := s.cmd
	s.kills = append(s.kills, time.Now())
	s.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	s.restarts.Add(1)
	return s.start()
}

func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
		}
	}
}

// inRestart reports whether t falls in a restart window: from a kill of
// the stack until a few seconds after it was ready again, or the seconds
// after a function's process was killed (a request it was serving answers
// 500, as API Gateway answers for a crashed Lambda).
func (s *server) inRestart(t time.Time) bool {
	if s.down.Load() {
		return true
	}
	down, up := time.Unix(0, s.downSince.Load()), time.Unix(0, s.upAt.Load())
	if s.restarts.Load() > 0 && !t.Before(down) && t.Before(up.Add(3*time.Second)) {
		return true
	}
	return s.killedWithin(t, 0, 3*time.Second)
}

// killedWithin reports whether a kill came between t-before and t+after.
func (s *server) killedWithin(t time.Time, before, after time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.kills {
		if !k.Before(t.Add(-before)) && !k.After(t.Add(after)) {
			return true
		}
	}
	return false
}

// killFunction SIGKILLs every running process of one of localcloud's
// functions (found as its children running that function's bootstrap,
// from the template's assets), wherever it is in its work, and returns how
// many it killed. localcloud starts new ones as invocations need them.
func (s *server) killFunction(name string) int {
	s.mu.Lock()
	cmd, tpl := s.cmd, s.template
	s.mu.Unlock()
	if cmd == nil || tpl == "" {
		return 0
	}
	raw, err := os.ReadFile(tpl)
	if err != nil {
		return 0
	}
	var t struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				Description string
				Code        struct{ S3Key string }
			}
		}
	}
	if json.Unmarshal(raw, &t) != nil {
		return 0
	}
	var asset string
	for _, r := range t.Resources {
		if r.Type == "AWS::Lambda::Function" && r.Properties.Description == "practice-api "+name {
			asset = filepath.Join(filepath.Dir(tpl), "asset."+strings.TrimSuffix(r.Properties.Code.S3Key, ".zip"))
		}
	}
	if asset == "" {
		return 0
	}
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		pid := 0
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: the comm may hold spaces, so read after its ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != fmt.Sprint(cmd.Process.Pid) {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if strings.HasPrefix(exe, asset+string(filepath.Separator)) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	if n > 0 {
		s.mu.Lock()
		s.kills = append(s.kills, time.Now())
		s.mu.Unlock()
		s.functionKills.Add(int64(n))
	}
	return n
}

// Receiver modes.
const (
	modeOK int32 = iota
	modeFail
	modeHang
)

// receiver is the loopback HTTPS subscriber of every organisation: it
// verifies each delivery's signature with its organisation's secret and
// counts deliveries by (event, attempt).
type receiver struct {
	srv                *httptest.Server
	caFile             string
	mode               atomic.Int32
	mu                 sync.Mutex
	secrets            map[string]string    // org -> secret
	attempts           map[string]int       // event id + "#" + replay id + "#" + attempt -> times received
	first              map[string]time.Time // the same key -> when first received
	failing            map[string]bool      // org -> its endpoint answers 500 (the disable phase)
	done               map[string]bool      // resource id -> delivered (answered 2xx)
	received, failures atomic.Int64
	badSignature       atomic.Int64
}

func newReceiver(caFile string) (*receiver, error) {
	r := &receiver{caFile: caFile, secrets: map[string]string{}, attempts: map[string]int{}, first: map[string]time.Time{},
		failing: map[string]bool{}, done: map[string]bool{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	r.srv.StartTLS()
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	return r, os.WriteFile(caFile, pemBytes, 0o600)
}

func (r *receiver) url(org string) string { return r.srv.URL + "/hooks/" + org }

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	r.received.Add(1)
	org := strings.TrimPrefix(req.URL.Path, "/hooks/")
	r.mu.Lock()
	secret := r.secrets[org]
	// An attempt is the event's, in its own series or a replay's (a replay
	// sends the event again on purpose, numbered from 1).
	key := req.Header.Get("Service-Event-Id") + "#" + req.Header.Get("Service-Replay-Id") + "#" + req.Header.Get("Service-Delivery-Attempt")
	r.attempts[key]++
	if r.attempts[key] == 1 {
		r.first[key] = time.Now()
	}
	failing := r.failing[org]
	r.mu.Unlock()
	if failing {
		r.failures.Add(1)
		http.Error(w, "down for this organisation", http.StatusInternalServerError)
		return
	}
	switch r.mode.Load() {
	case modeFail:
		r.failures.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
		return
	case modeHang:
		r.failures.Add(1)
		select { // past the 10 s the service waits for an answer
		case <-time.After(12 * time.Second):
		case <-req.Context().Done():
		}
		return
	}
	if signature.Verify(secret, req.Header.Get(signature.Header), body, time.Now(), signature.DefaultTolerance) != nil {
		r.badSignature.Add(1)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev struct {
		Data map[string]struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	r.mu.Lock()
	for _, v := range ev.Data {
		r.done[v.ID] = true
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// flap cycles the receiver: 20 s up, 2 s answering 500, 2 s hanging. At
// the soak's pace (about 1.5 events a second per organisation) an outage
// fails fewer than 20 attempts in a row, so no endpoint is disabled: the
// spec stops deliveries to a disabled endpoint, and the soak is about
// what must get through.
func (r *receiver) flap(ctx context.Context) {
	for {
		for _, step := range []struct {
			mode int32
			d    time.Duration
		}{{modeOK, 20 * time.Second}, {modeFail, 2 * time.Second}, {modeHang, 2 * time.Second}} {
			r.mode.Store(step.mode)
			select {
			case <-ctx.Done():
				r.mode.Store(modeOK)
				return
			case <-time.After(step.d):
			}
		}
	}
}

func (r *receiver) delivered(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done[id]
}

func (r *receiver) deliveredCount(expected map[string]string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id := range expected {
		if r.done[id] {
			n++
		}
	}
	return n
}

// stats counts attempts received twice, and of those the ones no kill
// explains (explained: whether a kill came soon after the first copy).
func (r *receiver) stats(explained func(first time.Time) bool) (twice, unexplained, badSignatures int, received, failures int64, examples []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, n := range r.attempts {
		if n > 1 {
			twice++
			if !explained(r.first[key]) {
				unexplained++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("attempt %s received %d times, first at %s, with no kill in the 30 s after", key, n, r.first[key].Format("15:04:05.000")))
				}
			}
		}
	}
	return twice, unexplained, int(r.badSignature.Load()), r.received.Load(), r.failures.Load(), examples
}

// client is one organisation's integrator: it imports companies, clients,
// matters and time entries and reads them back, retrying what failed with
// the same Idempotency-Key and body, as the docs tell integrators to.
type client struct {
	n                     int
	org, key, base        string
	hc                    *http.Client
	srv                   *server
	requests              atomic.Int64
	errOutside, errInside atomic.Int64
	mu                    sync.Mutex
	ids                   map[string][]string // kind -> ids answered 201/200
	traceFile             *os.File
	problems              []string
	seq                   int
}

func newClient(n int, base string, hc *http.Client, srv *server, admin string, rcv *receiver) (*client, error) {
	run := func(args ...string) (map[string]any, error) {
		cmd := exec.Command(admin, args...)
		cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT=http://"+srv.dynamo, "TABLE_NAME=soak")
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("admin %v: %v", args, err)
		}
		var m map[string]any
		return m, json.Unmarshal(out, &m)
	}
	org, err := run("org", "create", "--name", fmt.Sprintf("Soak %d", n))
	if err != nil {
		return nil, err
	}
	key, err := run("key", "create", "--org", org["id"].(string), "--mode", "test",
		"--scopes", "matters:read,matters:write,clients:read,clients:write,parties:write,time:read,time:write,webhooks:manage")
	if err != nil {
		return nil, err
	}
	c := &client{n: n, org: org["id"].(string), key: key["key"].(string), base: base, hc: hc, srv: srv, ids: map[string][]string{}}
	c.traceFile, _ = os.OpenFile(filepath.Join(filepath.Dir(srv.logPath), "answers.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	status, body := c.do("POST", "/webhooks", "", fmt.Sprintf(`{"url":%q,"event_types":["matter.created","time_entry.created"]}`, rcv.url(c.org)))
	if status != 201 {
		return nil, fmt.Errorf("subscribe: %d %v", status, body)
	}
	rcv.mu.Lock()
	rcv.secrets[c.org] = body["secret"].(string)
	rcv.mu.Unlock()
	return c, nil
}

// do sends one request, once; status 0 means no answer.
func (c *client) do(method, path, idem, body string) (int, map[string]any) {
	url := path
	if !strings.HasPrefix(path, "http") {
		url = c.base + path
	}
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.key)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	c.requests.Add(1)
	at := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		if c.srv.inRestart(at) || c.srv.inRestart(time.Now()) {
			c.errInside.Add(1)
		} else {
			c.errOutside.Add(1)
			c.problem("%s %s answered %d outside a restart: %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
		}
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

func (c *client) problem(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.problems) < 5 {
		c.problems = append(c.problems, fmt.Sprintf("org %d: ", c.n)+fmt.Sprintf(format, args...))
	}
}

// trace notes one exchange in the soak's folder (answers.log), for the
// forensics of a failed run.
func (c *client) trace(format string, args ...any) {
	if c.traceFile != nil {
		fmt.Fprintf(c.traceFile, "org %d %s\n", c.n, fmt.Sprintf(format, args...))
	}
}

func (c *client) problemList() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.problems
}

// create sends a create until it is answered 201 or 200, retrying with the
// same key and body after no answer, a 5xx or a 409 "still running"; it
// returns "" when the create was refused (a bug here: every body is valid).
func (c *client) create(kind, path, idem, body string) string {
	for range 200 { // bounded: 200 tries, about two minutes of waiting
		status, m := c.do("POST", path, idem, body)
		c.trace("%s %s key=%s -> %d %v", time.Now().Format("15:04:05.000"), path, idem, status, m["data"])
		switch {
		case status == 201 || status == 200:
			id, _ := m["data"].(map[string]any)["id"].(string)
			c.mu.Lock()
			c.ids[kind] = append(c.ids[kind], id)
			c.mu.Unlock()
			return id
		case status == 0 || status >= 500 || status == 409 || status == 429:
			time.Sleep(500 * time.Millisecond)
		default:
			c.problem("%s %s refused with %d: %v", path, body, status, m)
			return ""
		}
	}
	c.problem("%s %s never answered", path, body)
	return ""
}

func (c *client) work(ctx context.Context) {
	rng := rand.New(rand.NewPCG(uint64(c.n), 99))
	for ctx.Err() == nil {
		c.seq++
		tag := fmt.Sprintf("soak-%d-%d", c.n, c.seq)
		co := c.create("company", "/companies", tag, fmt.Sprintf(`{"name":"Soak %s ApS","cvr":"%08d"}`, tag, 10000000+c.n*1000000+c.seq))
		if co == "" {
			continue
		}
		cl := c.create("client", "/clients", tag, fmt.Sprintf(`{"company_id":%q}`, co))
		if cl == "" {
			continue
		}
		m := c.create("matter", "/matters", tag, fmt.Sprintf(`{"client_id":%q,"title":%q,"hourly_rate":100000}`, cl, tag))
		if m == "" {
			continue
		}
		for i := range 2 {
			c.create("time_entry", "/time-entries", fmt.Sprintf("%s-%d", tag, i),
				fmt.Sprintf(`{"matter_id":%q,"date":"2025-03-%02d","duration_minutes":%d,"description":"%s-%d"}`, m, 1+i, 30+rng.IntN(90), tag, i))
		}
		c.do("GET", "/matters?per_page=20", "", "")
		c.do("GET", "/time-entries?matter_id="+m, "", "")
		// An integrator's pace: a matter and its hours every two seconds or so.
		time.Sleep(time.Duration(1500+rng.IntN(1000)) * time.Millisecond)
	}
}

func (c *client) created() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ids := range c.ids {
		n += len(ids)
	}
	return n
}

// eventSources are the resources whose creation raised an event the
// receiver subscribed to.
func (c *client) eventSources() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(append([]string{}, c.ids["matter"]...), c.ids["time_entry"]...)
}

// verify lists every collection and compares it with what was answered:
// an id answered but not listed is missing; a listed item no answer named,
// or two items with one source tag, is a duplicate.
func (c *client) verify() (missing, dups int, problems []string, listed map[string][]string) {
	listed = map[string][]string{}
	for kind, path := range map[string]string{"company": "/companies", "client": "/clients", "matter": "/matters", "time_entry": "/time-entries"} {
		count := map[string]int{}
		next := path + "?per_page=100"
		for pages := 0; next != "" && pages < 1000; pages++ {
			var status int
			var m map[string]any
			for range 20 {
				if status, m = c.do("GET", next, "", ""); status == 200 {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if status != 200 {
				return 0, 0, []string{fmt.Sprintf("org %d: listing %s failed: %d", c.n, path, status)}, listed
			}
			for _, v := range m["data"].([]any) {
				id := v.(map[string]any)["id"].(string)
				if count[id]++; count[id] == 1 {
					listed[kind] = append(listed[kind], id)
				}
			}
			next, _ = m["links"].(map[string]any)["next"].(string)
		}
		c.mu.Lock()
		answered := map[string]bool{}
		for _, id := range c.ids[kind] {
			answered[id] = true
		}
		c.mu.Unlock()
		for id := range answered {
			if count[id] == 0 {
				missing++
				problems = append(problems, fmt.Sprintf("org %d: %s %s was answered 201 but is not listed", c.n, kind, id))
			}
		}
		for id, n := range count {
			if !answered[id] || n > 1 {
				dups++
				problems = append(problems, fmt.Sprintf("org %d: %s %s was created although no answer named it (a duplicate)", c.n, kind, id))
			}
		}
	}
	if len(problems) > 5 {
		problems = problems[:5]
	}
	return missing, dups, problems, listed
}

// disablePhase fails this organisation's receiver until its endpoint is
// disabled (matters every half second, at most three minutes), answers
// again, and turns the endpoint back on with replay_since two minutes
// before the phase (the retries the disable dropped included), as the
// runbook does. It says how it went: "recovered: …" or what failed.
func (c *client) disablePhase(rcv *receiver) string {
	since := time.Now().UTC().Add(-2 * time.Minute)
	status, m := c.do("GET", "/webhooks", "", "")
	if status != 200 || len(m["data"].([]any)) == 0 {
		return fmt.Sprintf("listing the webhooks answered %d", status)
	}
	id := m["data"].([]any)[0].(map[string]any)["id"].(string)
	c.mu.Lock()
	clients := c.ids["client"]
	c.mu.Unlock()
	if len(clients) == 0 {
		return "no client to make matters for"
	}
	setFailing := func(on bool) {
		rcv.mu.Lock()
		rcv.failing[c.org] = on
		rcv.mu.Unlock()
	}
	setFailing(true)
	logf("disable phase: org %d's receiver fails until its endpoint is disabled", c.n)
	disabled, made := false, 0
	for deadline := time.Now().Add(3 * time.Minute); !disabled && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		c.seq++
		tag := fmt.Sprintf("soak-%d-off-%d", c.n, c.seq)
		if c.create("matter", "/matters", tag, fmt.Sprintf(`{"client_id":%q,"title":%q}`, clients[len(clients)-1], tag)) != "" {
			made++
		}
		if status, m := c.do("GET", "/webhooks/"+id, "", ""); status == 200 {
			disabled = m["data"].(map[string]any)["is_active"] == false
		}
	}
	setFailing(false)
	if !disabled {
		return fmt.Sprintf("the endpoint was not disabled after 3 minutes of failures (%d matters)", made)
	}
	status, m = c.do("PATCH", "/webhooks/"+id, "", fmt.Sprintf(`{"is_active":true,"replay_since":%q}`, since.Format(time.RFC3339)))
	if status != 200 {
		return fmt.Sprintf("turning it back on with replay_since answered %d: %v", status, m)
	}
	logf("disable phase: disabled after %d matters; turned back on, replaying since %s: %v", made, since.Format(time.RFC3339), m["replay"])
	return fmt.Sprintf("recovered: disabled after %d matters failed to arrive, turned back on with replay_since %s (replay %v)", made, since.Format(time.RFC3339), m["replay"])
}

// stuckSending scans the table (the soak's own, small) for delivery
// attempts still claimed ("sending", s_<slot>) past their lease (l_<slot>,
// unix seconds) of events not delivered (in that series).
func stuckSending(ctx context.Context, endpoint, table string) (int, error) {
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("soak", "soak", "")})
	now := time.Now().Unix()
	stuck := 0
	deliveries, err := expression.NewBuilder().WithFilter(expression.Name("kind").Equal(expression.Value("webhook_event_deliveries"))).Build()
	if err != nil {
		return 0, err
	}
	var start map[string]ddbtypes.AttributeValue
	for {
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start,
			FilterExpression: deliveries.Filter(), ExpressionAttributeNames: deliveries.Names(), ExpressionAttributeValues: deliveries.Values()})
		if err != nil {
			return stuck, err
		}
		for _, item := range out.Items {
			if _, delivered := item["delivered_at"]; delivered {
				continue // a claim left behind after the event got through is harmless
			}
			for name, v := range item {
				slot, ok := strings.CutPrefix(name, "s_")
				sv, isS := v.(*ddbtypes.AttributeValueMemberS)
				if !ok || !isS || sv.Value != "sending" {
					continue
				}
				var lease int64
				if lv, ok := item["l_"+slot].(*ddbtypes.AttributeValueMemberN); ok {
					_, _ = fmt.Sscan(lv.Value, &lease)
				}
				if i := strings.LastIndexByte(slot, 'a'); strings.HasPrefix(slot, "r") && i > 1 { // r<replay>a<attempt>
					if _, done := item["rd_"+slot[1:i]]; done {
						continue // that replay's send got through
					}
				}
				if lease < now {
					stuck++
				}
			}
		}
		if start = out.LastEvaluatedKey; start == nil {
			return stuck, nil
		}
	}
}
