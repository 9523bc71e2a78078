// Package e2e is the black-box suite: it drives a running API over HTTP and
// mints keys with scripts/admin against the API's table. By default it
// starts scripts/devserver itself on free ports; E2E_SERVER=localcloud
// starts scripts/localcloud instead (the same contract: the deployed
// template's own bootstraps serve); set E2E_BASE_URL, E2E_DYNAMODB_ENDPOINT
// and E2E_TABLE_NAME to aim it at LocalStack or a deployed stage.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/modroot"
	"github.com/practice-api/practice-api/shared/openapi/conformance"
)

// target is the API under test.
type target struct {
	base     string // ends with /api/v1
	dynamo   string // DynamoDB endpoint for scripts/admin
	table    string
	demoKey  string // set only when the suite started the devserver
	local    *exec.Cmd
	root     string
	server   string // scripts/<server>: devserver or localcloud
	localEnv []string
	logs     syncBuffer // the server's stderr
}

// syncBuffer is a bytes.Buffer safe for one writer and readers. Every
// line, access lines included, is also searched for the watched strings.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	watched []string
	hits    []string // lines holding a watched string
}

// watch starts looking for each of needles in every line written from now.
func (s *syncBuffer) watch(needles ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watched = append(s.watched, needles...)
}

// watchedLines returns the lines that held a watched string.
func (s *syncBuffer) watchedLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hits)
}

func (s *syncBuffer) WriteString(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.watched {
		if strings.Contains(v, n) {
			s.hits = append(s.hits, v)
			break
		}
	}
	if !strings.Contains(v, `"msg":"request"`) && !strings.Contains(v, `"msg":"api gateway"`) { // access lines are many and tell little
		s.b.WriteString(v)
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var api *target

// checker holds every exchange of the suite against the OpenAPI document;
// httpClient is the suite's client, checked.
var (
	checker    *conformance.Checker
	httpClient = http.DefaultClient
)

// checkConformance reports the suite's OpenAPI mismatches; a mismatch fails
// the run.
func checkConformance(code int) int {
	probs := checker.Problems()
	for _, p := range probs {
		fmt.Fprintln(os.Stderr, "OpenAPI mismatch:", p)
	}
	fmt.Fprintf(os.Stderr, "e2e: %d exchanges checked against the OpenAPI document, %d mismatches\n", checker.Exchanges(), len(probs))
	if len(probs) > 0 && code == 0 {
		return 1
	}
	return code
}

func repoRoot() string {
	root, err := modroot.Find()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	return root
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped with -short (it starts a whole runtime); make test runs it")
		os.Exit(0)
	}
	api = &target{root: repoRoot(), server: "devserver"}
	switch s := os.Getenv("E2E_SERVER"); s {
	case "", "devserver":
	case "localcloud":
		api.server = s
	default:
		fmt.Fprintf(os.Stderr, "e2e: E2E_SERVER must be devserver or localcloud, got %q\n", s)
		os.Exit(2)
	}
	var err error
	if checker, err = conformance.New(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	httpClient = &http.Client{Transport: checker.Transport(nil)}
	if base := os.Getenv("E2E_BASE_URL"); base != "" {
		api.base = strings.TrimRight(base, "/")
		api.dynamo = os.Getenv("E2E_DYNAMODB_ENDPOINT")
		api.table = os.Getenv("E2E_TABLE_NAME")
		os.Exit(checkConformance(m.Run()))
	}
	stopReceiver, err := startReceiver()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	// Short retries and a short feed settle time (events in GET /events 2 s
	// after they happen instead of 10): the suite's waits stay short.
	stop, err := api.startDevserver([]string{"WEBHOOK_CA_FILE=" + rcv.ca, "WEBHOOK_RETRY_SCHEDULE=1s,1s,1s,1s", "EVENT_FEED_SETTLE=2s"})
	if err != nil {
		stopReceiver()
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := checkConformance(m.Run())
	stop()
	stopReceiver()
	if code != 0 { // the devserver's errors explain most failures
		for _, l := range strings.Split(api.logs.String(), "\n") {
			if strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, `"level":"WARN"`) {
				fmt.Fprintln(os.Stderr, api.server+":", l)
			}
		}
	}
	os.Exit(code)
}

// startDevserver runs scripts/<server> on free ports and waits for ready.
func (t *target) startDevserver(extraEnv []string) (stop func(), err error) {
	// The API binds a free port itself (its ready line names it); only an
	// engine of its own needs a port picked here.
	listen, dyn := "127.0.0.1:0", freeAddr()
	t.table = "e2e"
	t.dynamo = "http://" + dyn
	engine := "DYNAMODB_ENDPOINT="
	if shared := os.Getenv("STORETEST_DYNAMODB_ENDPOINT"); shared != "" {
		// make test's one engine for the run (scripts/cmd/withengine), in
		// a table of this run's own: the suite runs on both runtimes at once.
		t.table = fmt.Sprintf("e2e-%s-%d", t.server, os.Getpid())
		t.dynamo = shared
		engine += shared
	}
	t.localEnv = append(os.Environ(), "LISTEN_ADDR="+listen, "LOCAL_DYNAMODB_ADDR="+dyn, "TABLE_NAME="+t.table,
		"RATE_LIMIT_PER_MINUTE=100000", "LOCAL_DYNAMODB_JAVA_OPTS=-XX:TieredStopAtLevel=1", engine)
	t.localEnv = append(t.localEnv, extraEnv...)
	cmd := exec.Command(filepath.Join(t.root, "scripts", t.server))
	cmd.Env = t.localEnv
	cmd.Dir = t.root
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready, closed := make(chan string, 1), make(chan struct{})
	logs := &t.logs
	go func() {
		defer close(closed) // stderr ends when the server exits
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "ready ") {
				ready <- strings.TrimPrefix(line, "ready ")
			}
			logs.WriteString(line + "\n")
		}
	}()
	demo := make(chan string, 1)
	go func() {
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
	select {
	case t.base = <-ready:
	case <-closed: // it stopped before ready (localcloud refusing a template, say): say so now, not in 4 minutes
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s exited before ready:\n%s", t.server, logs.String())
	case <-time.After(10 * time.Minute):
		// The first run compiles the server; localcloud also builds the
		// bootstraps and synthesizes the stack, after waiting for the build
		// folder's lock while localcloud's own tests do the same beside it
		// (make test runs both at once): under a load of 45 on two cores
		// that took over 4 minutes. A server that exits is reported at once.
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s not ready after 10 minutes:\n%s", t.server, logs.String())
	}
	select {
	case t.demoKey = <-demo:
	case <-time.After(5 * time.Second):
		return nil, fmt.Errorf("%s printed no demo key", t.server)
	}
	t.local = cmd
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	}, nil
}

// admin runs scripts/admin against the target's table and decodes its one
// JSON object; failures return the decoded {"error"} and a non-nil error.
func admin(t testing.TB, args ...string) (map[string]any, error) {
	t.Helper()
	// --yes: against a deployed stage's table the tool would otherwise ask
	// before writing, and a test has no terminal to answer on.
	cmd := exec.Command(filepath.Join(api.root, "scripts", "admin"), append(slices.Clone(args), "--yes")...)
	cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT="+api.dynamo, "TABLE_NAME="+api.table)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out map[string]any
	if runErr != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil || out["error"] == nil {
			t.Fatalf("admin %v failed without a JSON error: %v\n%s", args, runErr, stderr.String())
		}
		return out, fmt.Errorf("admin %v: %v", args, out["error"])
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		t.Fatalf("admin %v printed no single JSON object: %q", args, stdout.String())
	}
	return out, nil
}

func mustAdmin(t testing.TB, args ...string) map[string]any {
	t.Helper()
	out, err := admin(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func get(t *testing.T, path, key string) response {
	t.Helper()
	return do(t, "GET", path, key, "", "")
}

// do sends a request to the target: path below the base URL (or a full
// URL), an optional bearer key, Idempotency-Key and body.
func do(t testing.TB, method, path, key, idem, body string) response {
	t.Helper()
	url := path
	if !strings.HasPrefix(path, "http") {
		url = api.base + path
	}
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 || resp.StatusCode != 204 { // a 204 has no body
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: not JSON: %s", method, path, raw)
		}
	}
	return r
}

// post sends a create with an Idempotency-Key.
func post(t *testing.T, path, key, idem, body string) response {
	t.Helper()
	return postT(t, path, key, idem, body)
}

// retryWait is how long to wait before sending again what r answered
// 503: its Retry-After (1–10 s), else a second.
func retryWait(r response) time.Duration {
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err == nil && s > 0 && s <= 10 {
		return time.Duration(s) * time.Second
	}
	return time.Second
}

// again sends a request that is not a create (no Idempotency-Key) once
// more when the API answered it 503, after its Retry-After, up to five
// times, as the spec tells integrators to: beside make test's other tiers
// the store misses its deadline now and then. A test that uses it must
// hold if the 503'd request took effect all the same.
func again(t testing.TB, send func() response) response {
	t.Helper()
	r := send()
	for try := 1; r.status == http.StatusServiceUnavailable && try < 5; try++ {
		wait := retryWait(r)
		t.Logf("answered 503 (%s); again in %s", r.raw, wait)
		time.Sleep(wait)
		r = send()
	}
	return r
}

// postT is post for tests and benchmarks; idem "" sends no Idempotency-Key.
// A create with a key that is answered 503 (the store did not answer in
// time: beside make test's other tiers it happens) is sent again with the
// same key after its Retry-After, as the spec tells integrators to, up to
// five times: the suite tests the API's answers, not the machine's load.
func postT(t testing.TB, path, key, idem, body string) response {
	t.Helper()
	r := do(t, "POST", path, key, idem, body)
	for try := 1; idem != "" && r.status == http.StatusServiceUnavailable && try < 5; try++ {
		wait := retryWait(r)
		t.Logf("POST %s answered 503 (%s); again with the same Idempotency-Key in %s", path, r.raw, wait)
		time.Sleep(wait)
		r = do(t, "POST", path, key, idem, body)
		if r.status == http.StatusOK && r.header.Get("Idempotent-Replayed") == "true" {
			// The 503's transaction committed after its deadline, and
			// the retry is its replay (the spec's 200): the create the
			// test asked for happened once, with the original's 201.
			t.Logf("POST %s: the retry replayed the create that had committed after its 503", path)
			r.status = http.StatusCreated
		}
	}
	return r
}
