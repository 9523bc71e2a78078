package main_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The devserver as a process: these tests build it once and run it as
// `make run` does, on free ports, and look at it from outside.

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

func devserverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "devserver-test")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "devserver")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a running devserver.
type proc struct {
	cmd       *exec.Cmd
	base      string // ready URL
	demoKey   string
	enginePID int
	dynamo    string        // LOCAL_DYNAMODB_ADDR
	exited    chan struct{} // closed when the process has exited, with its status in exitErr
	exitErr   error
	mu        sync.Mutex
	stderr    strings.Builder
}

func (p *proc) logs() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stderr.String() }

// start runs the devserver with env added to the test's and waits for
// ready (or for it to exit, which start returns as an error).
func start(t *testing.T, env ...string) (*proc, error) {
	t.Helper()
	p := &proc{dynamo: freeAddr(t), exited: make(chan struct{})}
	p.cmd = exec.Command(devserverBinary(t))
	p.cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT=", "LISTEN_ADDR="+freeAddr(t), "LOCAL_DYNAMODB_ADDR="+p.dynamo,
		"LOCAL_DYNAMODB_LOG="+filepath.Join(t.TempDir(), "engine.log"))
	p.cmd.Env = append(p.cmd.Env, env...)
	stdout, _ := p.cmd.StdoutPipe()
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	ready, demo := make(chan string, 1), make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			var l struct {
				Msg string `json:"msg"`
				PID int    `json:"pid"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "dynamodb local started" {
				p.mu.Lock()
				p.enginePID = l.PID
				p.mu.Unlock()
			}
			if url, ok := strings.CutPrefix(line, "ready "); ok {
				ready <- url
			}
		}
	}()
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var d struct {
				DemoKey string `json:"demo_key"`
			}
			if json.Unmarshal(sc.Bytes(), &d) == nil && d.DemoKey != "" {
				demo <- d.DemoKey
			}
		}
	}()
	go func() { wg.Wait(); p.exitErr = p.cmd.Wait(); close(p.exited) }()
	select {
	case p.base = <-ready:
	case <-p.exited:
		return p, fmt.Errorf("devserver exited before ready (%v):\n%s", p.exitErr, p.logs())
	case <-time.After(2 * time.Minute):
		t.Fatalf("devserver not ready after 2 minutes:\n%s", p.logs())
	}
	select {
	case p.demoKey = <-demo:
	case <-time.After(5 * time.Second):
		t.Fatal("no demo key on stdout")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	external := false
	for _, kv := range env {
		external = external || (strings.HasPrefix(kv, "DYNAMODB_ENDPOINT=") && kv != "DYNAMODB_ENDPOINT=")
	}
	if (p.enginePID != 0) == external {
		t.Fatalf("engine pid %d with DYNAMODB_ENDPOINT set: %v\n%s", p.enginePID, external, p.stderr.String())
	}
	return p, nil
}

// alive reports whether pid is a live process (a zombie waiting for a
// reaper counts as gone: it holds no port and no memory).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// waitGone waits until the engine's process is gone and nothing answers on
// its address (a thread-group leader can show as a zombie while its other
// threads still close their sockets, so both are polled).
func waitGone(t *testing.T, p *proc) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		listening := false
		if c, err := net.DialTimeout("tcp", p.dynamo, time.Second); err == nil {
			c.Close()
			listening = true
		}
		running := alive(p.enginePID)
		if !running && !listening {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine outlived the devserver: pid %d running %v, %s answering %v", p.enginePID, running, p.dynamo, listening)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getJSON(t *testing.T, url, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("GET %s: not JSON: %s", url, raw)
	}
	return resp.StatusCode, body
}

func TestKillNineLeavesNoEngine(t *testing.T) {
	p, err := start(t)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := getJSON(t, p.base+"/matters", p.demoKey); code != 200 {
		t.Fatalf("GET /matters: %d", code)
	}
	if !alive(p.enginePID) {
		t.Fatalf("engine pid %d is not running", p.enginePID)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	waitGone(t, p)
}

func TestSignalsStopTheEngine(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p, err := start(t)
			if err != nil {
				t.Fatal(err)
			}
			_ = p.cmd.Process.Signal(sig)
			select {
			case <-p.exited:
				if p.exitErr != nil {
					t.Fatalf("devserver exit after %v: %v\n%s", sig, p.exitErr, p.logs())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("devserver did not stop")
			}
			waitGone(t, p)
		})
	}
}

func TestTakenPortsAreClearErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct{ env, want string }{
		{"LOCAL_DYNAMODB_ADDR", "LOCAL_DYNAMODB_ADDR"},
		{"LISTEN_ADDR", "LISTEN_ADDR"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			p, err := start(t, tc.env+"="+taken.Addr().String())
			if err == nil {
				t.Fatal("the devserver started on a taken port")
			}
			if <-p.exited; p.exitErr == nil {
				t.Fatal("exit status 0 on a taken port")
			}
			logs := p.logs()
			if !strings.Contains(logs, taken.Addr().String()) || !strings.Contains(logs, "port taken") || !strings.Contains(logs, tc.want) {
				t.Fatalf("the message does not name the address, the cause and the setting:\n%s", logs)
			}
		})
	}
}

func TestDataDirKeepsDataAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	count := func(p *proc, key, path string) int {
		n := 0
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		url := p.base + path + sep + "per_page=100"
		for url != "" {
			code, body := getJSON(t, url, key)
			if code != 200 {
				t.Fatalf("GET %s: %d %v", url, code, body)
			}
			n += len(body["data"].([]any))
			next, _ := body["links"].(map[string]any)["next"].(string)
			url = next
		}
		return n
	}
	first, err := start(t, "LOCAL_DYNAMODB_DIR="+dir)
	if err != nil {
		t.Fatal(err)
	}
	matters := count(first, first.demoKey, "/matters")
	if matters == 0 {
		t.Fatal("the demo seed wrote no matters")
	}
	req, _ := http.NewRequest(http.MethodPost, first.base+"/companies",
		strings.NewReader(`{"name":"Vedvarende ApS","cvr":"31415926"}`))
	req.Header.Set("Authorization", "Bearer "+first.demoKey)
	req.Header.Set("Idempotency-Key", "persist-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("POST /companies: %v %v", err, resp)
	}
	resp.Body.Close()
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	<-first.exited
	waitGone(t, first)

	second, err := start(t, "LOCAL_DYNAMODB_DIR="+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.cmd.Process.Signal(syscall.SIGTERM); <-second.exited }()
	if got := count(second, second.demoKey, "/matters"); got != matters {
		t.Fatalf("after a restart: %d matters, want the same %d (the demo seed ran twice?)", got, matters)
	}
	if got := count(second, first.demoKey, "/companies?cvr=31415926"); got != 1 {
		t.Fatalf("the company written before the restart: %d found with the first key", got)
	}
}

func TestDynamoDBEndpointReplacesTheEngine(t *testing.T) {
	first, err := start(t)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.cmd.Process.Signal(syscall.SIGTERM); <-first.exited }()
	// A second devserver on the first one's engine, in a table of its own:
	// it starts no engine (start checks that it logged none) and serves.
	second, err := start(t, "DYNAMODB_ENDPOINT=http://"+first.dynamo, "TABLE_NAME=second")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := getJSON(t, second.base+"/matters", second.demoKey); code != 200 || len(body["data"].([]any)) == 0 {
		t.Fatalf("GET /matters on the second devserver: %d %v", code, body)
	}
	_ = second.cmd.Process.Signal(syscall.SIGTERM)
	<-second.exited
	// Stopping it left the first one's engine running.
	if code, _ := getJSON(t, first.base+"/matters", first.demoKey); code != 200 {
		t.Fatalf("the first devserver after the second stopped: %d", code)
	}
}

// TestATrickledBodyDoesNotHoldTheServer: a client that sends a create's
// body a byte at a time, far slower than any real client, gets a 400 when
// the read timeout ends the request, and the connection is closed: it
// cannot hold the server (REQUEST_READ_TIMEOUT, 30 s by default).
func TestATrickledBodyDoesNotHoldTheServer(t *testing.T) {
	p, err := start(t, "REQUEST_READ_TIMEOUT=2s")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(p.base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"name":"Anne","email":"trickle@example.dk"}`
	fmt.Fprintf(conn, "POST /api/v1/people HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nIdempotency-Key: trickle\r\nContent-Length: %d\r\n\r\n",
		u.Host, p.demoKey, len(body))
	began := time.Now()
	go func() { // one byte every 700 ms: the body would take 30 s
		for i := range len(body) {
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
			time.Sleep(700 * time.Millisecond)
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	took := time.Since(began)
	if resp.StatusCode != 400 || !strings.Contains(string(raw), "message") || took > 6*time.Second {
		t.Fatalf("after %s: %d %s", took, resp.StatusCode, raw)
	}
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection stays open after the timeout")
	}
	t.Logf("a trickled body answered %d after %s", resp.StatusCode, took.Round(100*time.Millisecond))
}
