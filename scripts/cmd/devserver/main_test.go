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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/internal/localproc"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/procnet"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// The devserver as a process: these tests build it once and run it as
// `make run` does, on free ports, and look at it from outside. Each runs
// on the run's shared engine in a table of its own (localproc), except
// those about the devserver's own engine: that it stops with the
// devserver on every signal and on SIGKILL, that a taken engine port is a
// clear error, and that LOCAL_DYNAMODB_DIR keeps data across restarts.
// They run in parallel: they mostly wait on processes.

type proc = localproc.Proc

// start runs the devserver with env added to the test's and waits for
// ready (or for it to exit, which start returns as an error).
func start(t *testing.T, env ...string) (*proc, error) {
	t.Helper()
	p, err := localproc.Start(t, localproc.Build(t, "devserver"), 2*time.Minute, env...)
	return checkEngine(t, p, err, env)
}

// startOnItsOwnEngine starts the devserver (as start does) with a DynamoDB
// Local of its own (localproc.StartOnOwnEngine: tried again on another
// port when the engine's was taken while the JVM started).
func startOnItsOwnEngine(t *testing.T) (*proc, error) {
	t.Helper()
	p, err := localproc.StartOnOwnEngine(t, localproc.Build(t, "devserver"), 2*time.Minute)
	return checkEngine(t, p, err, nil)
}

// checkEngine: a devserver on an engine given to it (the run's shared
// one, DYNAMODB_ENDPOINT) started none, and one without started its own.
func checkEngine(t *testing.T, p *proc, err error, env []string) (*proc, error) {
	t.Helper()
	if err != nil {
		return p, err
	}
	external := p.Table != "" // on the run's shared engine
	for _, kv := range env {
		external = external || (strings.HasPrefix(kv, "DYNAMODB_ENDPOINT=") && kv != "DYNAMODB_ENDPOINT=")
	}
	if (p.EnginePID != 0) == external {
		t.Fatalf("engine pid %d with DYNAMODB_ENDPOINT set: %v\n%s", p.EnginePID, external, p.Logs())
	}
	return p, nil
}

// waitGone waits until the engine's process is gone and nothing answers on
// its address (a thread-group leader can show as a zombie while its other
// threads still close their sockets, so both are polled).
func waitGone(t *testing.T, p *proc) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		listening := false
		if c, err := net.DialTimeout("tcp", p.Dynamo, time.Second); err == nil {
			c.Close()
			listening = true
		}
		running := localproc.Alive(p.EnginePID)
		if !running && !listening {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine outlived the devserver: pid %d running %v, %s answering %v", p.EnginePID, running, p.Dynamo, listening)
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
	t.Parallel()
	p, err := startOnItsOwnEngine(t)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := getJSON(t, p.Base+"/matters", p.DemoKey); code != 200 {
		t.Fatalf("GET /matters: %d", code)
	}
	if !localproc.Alive(p.EnginePID) {
		t.Fatalf("engine pid %d is not running", p.EnginePID)
	}
	listensOnLoopbackOnly(t, p)
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Exited
	waitGone(t, p)
}

// listensOnLoopbackOnly: nothing the devserver starts listens on an
// address another machine could reach, its own DynamoDB Local (with every
// organisation's data) included; the API's and the engine's listeners are
// there. (scripts/e2e checks the same of the runtime it starts, which on
// make test's shared engine starts no engine of its own.)
func listensOnLoopbackOnly(t *testing.T, p *proc) {
	t.Helper()
	got, err := procnet.Listeners(p.Cmd.Process.Pid)
	if errors.Is(err, procnet.ErrUnsupported) {
		t.Log(err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(p.Base)
	var sawAPI, sawEngine bool
	for _, l := range got {
		if !l.Loopback() {
			t.Errorf("the devserver listens beyond loopback: %v", l)
		}
		port := ":" + strconv.Itoa(int(l.Addr.Port()))
		sawAPI = sawAPI || strings.HasSuffix(base.Host, port)
		sawEngine = sawEngine || strings.HasSuffix(p.Dynamo, port)
	}
	if !sawAPI || !sawEngine {
		t.Errorf("the API's (%s) or the engine's (%s) listener is missing from %v", base.Host, p.Dynamo, got)
	}
}

func TestSignalsStopTheEngine(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			p, err := startOnItsOwnEngine(t)
			if err != nil {
				t.Fatal(err)
			}
			_ = p.Cmd.Process.Signal(sig)
			select {
			case <-p.Exited:
				if p.ExitErr != nil {
					t.Fatalf("devserver exit after %v: %v\n%s", sig, p.ExitErr, p.Logs())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("devserver did not stop")
			}
			waitGone(t, p)
		})
	}
}

func TestTakenPortsAreClearErrors(t *testing.T) {
	t.Parallel()
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
			if <-p.Exited; p.ExitErr == nil {
				t.Fatal("exit status 0 on a taken port")
			}
			logs := p.Logs()
			if !strings.Contains(logs, taken.Addr().String()) || !strings.Contains(logs, "port taken") || !strings.Contains(logs, tc.want) {
				t.Fatalf("the message does not name the address, the cause and the setting:\n%s", logs)
			}
		})
	}
}

func TestDataDirKeepsDataAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	count := func(p *proc, key, path string) int {
		n := 0
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		url := p.Base + path + sep + "per_page=100"
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
	matters := count(first, first.DemoKey, "/matters")
	if matters == 0 {
		t.Fatal("the demo seed wrote no matters")
	}
	req, _ := http.NewRequest(http.MethodPost, first.Base+"/companies",
		strings.NewReader(`{"name":"Vedvarende ApS","cvr":"31415926"}`))
	req.Header.Set("Authorization", "Bearer "+first.DemoKey)
	req.Header.Set("Idempotency-Key", "persist-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("POST /companies: %v %v", err, resp)
	}
	resp.Body.Close()
	_ = first.Cmd.Process.Signal(syscall.SIGTERM)
	<-first.Exited
	waitGone(t, first)

	second, err := start(t, "LOCAL_DYNAMODB_DIR="+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Cmd.Process.Signal(syscall.SIGTERM); <-second.Exited }()
	if got := count(second, second.DemoKey, "/matters"); got != matters {
		t.Fatalf("after a restart: %d matters, want the same %d (the demo seed ran twice?)", got, matters)
	}
	if got := count(second, first.DemoKey, "/companies?cvr=31415926"); got != 1 {
		t.Fatalf("the company written before the restart: %d found with the first key", got)
	}
}

func TestDynamoDBEndpointReplacesTheEngine(t *testing.T) {
	t.Parallel()
	first, err := start(t)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Cmd.Process.Signal(syscall.SIGTERM); <-first.Exited }()
	// A second devserver on the first one's engine (its own, or the run's
	// shared one), in a table of its own: it starts no engine (start
	// checks that it logged none) and serves.
	second, err := start(t, "DYNAMODB_ENDPOINT=http://"+first.Dynamo, "TABLE_NAME="+storetest.TableName("second"))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := getJSON(t, second.Base+"/matters", second.DemoKey); code != 200 || len(body["data"].([]any)) == 0 {
		t.Fatalf("GET /matters on the second devserver: %d %v", code, body)
	}
	_ = second.Cmd.Process.Signal(syscall.SIGTERM)
	<-second.Exited
	// Stopping it left the first one's engine running.
	if code, _ := getJSON(t, first.Base+"/matters", first.DemoKey); code != 200 {
		t.Fatalf("the first devserver after the second stopped: %d", code)
	}
}

// TestATrickledBodyDoesNotHoldTheServer: a client that sends a create's
// body a byte at a time, far slower than any real client, gets a 400 when
// the read timeout ends the request, and the connection is closed: it
// cannot hold the server (REQUEST_READ_TIMEOUT, 30 s by default).
func TestATrickledBodyDoesNotHoldTheServer(t *testing.T) {
	t.Parallel()
	p, err := start(t, "REQUEST_READ_TIMEOUT=2s")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(p.Base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"name":"Anne","email":"trickle@example.dk"}`
	fmt.Fprintf(conn, "POST /api/v1/people HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nIdempotency-Key: trickle\r\nContent-Length: %d\r\n\r\n",
		u.Host, p.DemoKey, len(body))
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

// TestPendingEnrichmentsResumeAtStart: a company whose create was
// answered but whose enrichment job was lost (a kill between the two) is
// found at the next start and enriched; there is no register here, so it
// ends "skipped" rather than "pending" for good.
func TestPendingEnrichmentsResumeAtStart(t *testing.T) {
	t.Parallel()
	// An engine: the run's shared one, or a first devserver's.
	engine := storetest.Shared()
	if engine == "" {
		first, err := start(t)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = first.Cmd.Process.Signal(syscall.SIGTERM); <-first.Exited }()
		engine = "http://" + first.Dynamo
	}
	ctx := t.Context()
	table := storetest.TableName("resume")
	db, err := store.New(ctx, store.Config{TableName: table, Endpoint: engine})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	org, err := auth.NewStore(db, 0).CreateOrg(ctx, "", "resume", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := auth.NewStore(db, 0).CreateKey(ctx, auth.KeyRequest{OrgID: org.ID, Mode: auth.ModeTest, Scopes: auth.Catalogue}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A company as a create writes it, whose trigger nobody saw.
	c := party.Company{Name: "Glemt ApS", CVR: "87654321", CreatedAt: store.FormatTime(time.Now()), Enrichment: &party.Enrichment{Status: party.EnrichmentPending}}
	if c.ID, err = party.CompanyID(ctx, db, org.ID, c.CVR); err != nil {
		t.Fatal(err)
	}
	c.UpdatedAt = c.CreatedAt
	c.SetKeys(org.ID)
	item, _ := store.Marshal(c)
	if err := db.PutNew(ctx, item); err != nil {
		t.Fatal(err)
	}
	second, err := start(t, "DYNAMODB_ENDPOINT="+engine, "TABLE_NAME="+table)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Cmd.Process.Signal(syscall.SIGTERM); <-second.Exited }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := getJSON(t, second.Base+"/companies/"+c.ID, tok.String())
		status := ""
		if data, ok := body["data"].(map[string]any); ok {
			status, _ = data["enrichment"].(map[string]any)["status"].(string)
		}
		if code == 200 && status == string(party.EnrichmentSkipped) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pending company was not resumed: %d %v\n%s", code, body, second.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(second.Logs(), "resumed pending company enrichments") {
		t.Fatalf("no log line of the resume:\n%s", second.Logs())
	}
}
