// Package localproc starts a local runtime (scripts/devserver,
// scripts/localcloud) as a process for a test, as LOCAL-CONTRACT.md
// describes it: on free ports, reading the demo_key line on stdout and
// "ready <base_url>" on stderr. Its engine is the run's shared DynamoDB
// Local (STORETEST_DYNAMODB_ENDPOINT, which make test sets), in a table of
// its own, or, when the run shares none or the test names an engine of
// its own (OwnEngine, LOCAL_DYNAMODB_DIR, DYNAMODB_ENDPOINT), the one the
// runtime starts itself.
package localproc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/practice-api/practice-api/scripts/internal/gobin"
	"github.com/practice-api/practice-api/shared/store/ddblocal"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// Proc is a running local runtime.
type Proc struct {
	Cmd       *exec.Cmd
	Base      string // the ready line's URL
	DemoKey   string
	EnginePID int           // from the "dynamodb local started" line; 0 on the shared engine or DYNAMODB_ENDPOINT
	Dynamo    string        // host:port of its engine (LOCAL_DYNAMODB_ADDR, or the shared engine's)
	Table     string        // its table on the shared engine ("" when it runs on an engine of its own)
	Exited    chan struct{} // closed when the process has exited, with its status in ExitErr
	ExitErr   error

	mu    sync.Mutex
	lines []string // stderr
}

// Lines are the stderr lines so far.
func (p *Proc) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Logs is stderr so far, a line each.
func (p *Proc) Logs() string {
	lines := p.Lines()
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// FreeAddr is a loopback address with a port nobody listens on.
func FreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

var (
	buildMu sync.Mutex
	built   = map[string]string{} // package dir -> binary
)

// Main runs the test binary's tests (m.Run) and then removes the
// executables Build made for them, returning m.Run's code: a package whose
// tests call Build has `func TestMain(m *testing.M) { os.Exit(localproc.Main(m)) }`.
// Without it every run left a 25–30 MB binary per package in the temp
// folder (make test three of them), which filled a shared machine's disk.
func Main(m *testing.M) int {
	code := m.Run()
	buildMu.Lock()
	defer buildMu.Unlock()
	for name, bin := range built {
		_ = os.RemoveAll(filepath.Dir(bin))
		delete(built, name)
	}
	return code
}

// Build compiles the main package in the current directory once per test
// binary and returns the executable's path (in a folder of its own that
// Main removes when the tests end).
func Build(t *testing.T, name string) string {
	t.Helper()
	skipShort(t)
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := built[name]; ok {
		return bin
	}
	dir, err := os.MkdirTemp("", name+"-test")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := gobin.Build(context.Background(), ".", ".", bin, nil); err != nil {
		t.Fatal(err)
	}
	built[name] = bin
	return bin
}

// StartOnOwnEngine is Start with a DynamoDB Local of the process's own
// (OwnEngine), tried up to three times: the engine's port is chosen free,
// but on a busy machine another process's listener can take it while the
// JVM starts (the engine's BindException, "Address already in use", or
// another server answering the runtime's first table call), and each
// attempt takes another port.
func StartOnOwnEngine(t *testing.T, binary string, within time.Duration, env ...string) (*Proc, error) {
	t.Helper()
	return startTrying(t, binary, within, "on an engine of its own", func(error) bool { return true },
		func() []string { return append(slices.Clip(env), OwnEngine(t)) })
}

// StartTryingPorts is Start, tried again on other ports (up to three
// times) when the process exits because a port it was given was taken
// meanwhile ("address already in use"): the ports Start chooses are free
// when chosen, and a process that builds before it binds (localcloud's
// first start in a fresh clone) leaves another time to take one. Any
// other failure is returned at once.
func StartTryingPorts(t *testing.T, binary string, within time.Duration, env ...string) (*Proc, error) {
	t.Helper()
	return startTrying(t, binary, within, "", func(err error) bool { return strings.Contains(err.Error(), "address already in use") },
		func() []string { return env })
}

// startTrying starts binary with env() (called again for each attempt, so
// that its ports are chosen again) up to three times while again says an
// attempt's error is worth another.
func startTrying(t *testing.T, binary string, within time.Duration, what string, again func(error) bool, env func() []string) (*Proc, error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, err := Start(t, binary, within, env()...)
		if err == nil || attempt == 3 || !again(err) {
			return p, err
		}
		if what != "" {
			what = " " + strings.TrimPrefix(what, " ")
		}
		t.Logf("%s did not start%s (attempt %d of 3), trying other ports: %v", filepath.Base(binary), what, attempt, err)
	}
}

// OwnEngine is an entry for Start's env that gives the process a DynamoDB
// Local of its own on a free port, even when the run shares one: for the
// tests of a runtime starting, keeping and stopping its own engine.
func OwnEngine(t *testing.T) string { return "LOCAL_DYNAMODB_ADDR=" + FreeAddr(t) }

// namesEngine reports whether env chooses the process's engine.
func namesEngine(env []string) bool {
	for _, kv := range env {
		for _, k := range []string{"LOCAL_DYNAMODB_ADDR=", "LOCAL_DYNAMODB_DIR=", "DYNAMODB_ENDPOINT="} {
			if strings.HasPrefix(kv, k) {
				return true
			}
		}
	}
	return false
}

// Start runs binary with env added to the test's (after the defaults:
// the API on a port it binds itself, named in its ready line; the run's shared engine in a table of its own, or a DynamoDB
// Local of its own with its log in the test's temp folder) and waits up to
// within for ready. It returns an error when the
// process exits before ready; the test fails when it is not ready in time
// or prints no demo key. The process is stopped (SIGTERM, then SIGKILL
// after 20 s) when the test ends.
func Start(t *testing.T, binary string, within time.Duration, env ...string) (*Proc, error) {
	t.Helper()
	skipShort(t)
	p := &Proc{Dynamo: FreeAddr(t), Exited: make(chan struct{})}
	p.Cmd = exec.Command(binary)
	p.Cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT=", "LISTEN_ADDR=127.0.0.1:0", "LOCAL_DYNAMODB_ADDR="+p.Dynamo,
		"LOCAL_DYNAMODB_LOG="+filepath.Join(t.TempDir(), "engine.log"),
		"LOCAL_DYNAMODB_JAVA_OPTS="+strings.Join(ddblocal.ShortRun, " ")) // a test's engine lives a minute

	if shared := storetest.Shared(); shared != "" && !namesEngine(env) {
		p.Table = storetest.TableName("lp")
		p.Dynamo = strings.TrimPrefix(shared, "http://")
		p.Cmd.Env = append(p.Cmd.Env, "DYNAMODB_ENDPOINT="+shared, "TABLE_NAME="+p.Table)
	}
	for _, kv := range env {
		if addr, ok := strings.CutPrefix(kv, "LOCAL_DYNAMODB_ADDR="); ok {
			p.Dynamo = addr
		}
	}
	p.Cmd.Env = append(p.Cmd.Env, env...)
	stdout, _ := p.Cmd.StdoutPipe()
	stderr, _ := p.Cmd.StderrPipe()
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.Exited:
		case <-time.After(20 * time.Second):
			_ = p.Cmd.Process.Kill()
		}
		if p.Table != "" { // the shared engine keeps the run's tables in memory: free this one
			db := storetest.Plain(t, p.Table)
			_, _ = db.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &p.Table})
		}
	})
	ready, demo := make(chan string, 1), make(chan string, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var l struct {
				Msg string `json:"msg"`
				PID int    `json:"pid"`
			}
			p.mu.Lock()
			p.lines = append(p.lines, line)
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "dynamodb local started" {
				p.EnginePID = l.PID // before ready: the test reads it after
			}
			p.mu.Unlock()
			if url, ok := strings.CutPrefix(line, "ready "); ok {
				ready <- url
			}
		}
	})
	notKey := make(chan string, 1)
	wg.Go(func() {
		// The first line on stdout is the demo key, as the README promises
		// (`make run | head -1 | jq`): anything else first is a failure.
		sc := bufio.NewScanner(stdout)
		for first := true; sc.Scan(); first = false {
			var d struct {
				DemoKey string `json:"demo_key"`
			}
			switch {
			case !first:
			case json.Unmarshal(sc.Bytes(), &d) == nil && d.DemoKey != "":
				demo <- d.DemoKey
			default:
				notKey <- sc.Text()
			}
		}
	})
	go func() { wg.Wait(); p.ExitErr = p.Cmd.Wait(); close(p.Exited) }()
	name := filepath.Base(binary)
	select {
	case p.Base = <-ready:
	case <-p.Exited:
		return p, fmt.Errorf("%s exited before ready (%v):\n%s", name, p.ExitErr, p.Logs())
	case <-time.After(within):
		t.Fatalf("%s not ready after %v:\n%s", name, within, p.Logs())
	}
	select {
	case p.DemoKey = <-demo:
	case line := <-notKey:
		t.Fatalf("the first line on stdout is %q, not the demo_key line", line)
	case <-time.After(5 * time.Second):
		t.Fatal("no demo key on stdout")
	}
	return p, nil
}

// Alive reports whether pid is a live process. A zombie waiting for its
// reaper counts as gone: it holds no port and no memory. Without /proc
// (macOS), the signal check is all there is.
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		_, noProc := os.Stat("/proc/self")
		return noProc != nil
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// skipShort skips a test that runs a whole local runtime (and its engine,
// on Java) when the loop is the fast one (-short, make unit).
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a whole local runtime on DynamoDB Local (Java): skipped with -short; make test runs it")
	}
}
