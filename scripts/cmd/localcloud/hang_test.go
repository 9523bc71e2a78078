package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/internal/localproc"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/store"
)

// TestAHungEngineUnderLocalcloud is the devserver's hung-engine test on
// localcloud (#38, items 1 and 8): with its own DynamoDB Local paused
// (SIGSTOP to the JVM), the functions of clients of three organisations
// answer 503 with Retry-After at their deadline (those that start cold
// meanwhile too: app.coldStart), a malformed key gets its 401 from a warm
// function without the store, localcloud says in one line
// that the engine stopped answering and restarts it on its data, the
// people made before are there and creates work afterwards, and no line
// of localcloud's stderr (its own, the gateway's, the functions' and the
// platform's REPORT lines) holds a CPR in clear, the functions' "store
// unavailable" lines for GET /people/<CPR> among them. Before the
// pause, the same stack takes the panic path (forcePanics): its panic,
// "internal error" and access lines are in that scan too.
func TestAHungEngineUnderLocalcloud(t *testing.T) {
	c := start(t, "LOCAL_DYNAMODB_DIR="+t.TempDir(), "LOCAL_DYNAMODB_HANG_AFTER=20s")
	jvm := localproc.EngineJVM(t, c.EnginePID)
	db, err := store.New(context.Background(), store.Config{TableName: "practice-api", Endpoint: "http://" + c.Dynamo})
	if err != nil {
		t.Fatal(err)
	}
	type client struct{ key, person string }
	var clients []*client
	for i := range 3 {
		keys := auth.NewStore(db, 0)
		o, err := keys.CreateOrg(context.Background(), "", fmt.Sprintf("Hængt %d", i), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		_, tok, err := keys.CreateKey(context.Background(), auth.KeyRequest{OrgID: o.ID, Mode: auth.ModeTest, Scopes: auth.Catalogue}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		cl := &client{key: tok.String()}
		code, _, body := hangSend(t, c.Base, "POST", "/people", cl.key, fmt.Sprintf(`{"name":"Før %d","email":"foer%d@example.dk"}`, i, i))
		if code != 201 {
			t.Fatalf("POST /people before the pause: %d %v", code, body)
		}
		cl.person = body["id"].(string)
		clients = append(clients, cl)
	}

	// First, on the same stack, the panic path (item 1's third).
	forcePanics(t, c, clients[0].key, clients[0].person, []string{clients[1].key, clients[2].key})

	if err := syscall.Kill(jvm, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(jvm, syscall.SIGCONT) })
	var wg sync.WaitGroup
	for i, cl := range clients {
		for _, r := range [][3]string{
			{"GET", "/people/010190-1234", ""},
			{"GET", "/people/" + cl.person + "?note=0101901234", ""},
			{"POST", "/people", fmt.Sprintf(`{"name":"Under %d","email":"under%d@example.dk"}`, i, i)},
		} {
			wg.Go(func() {
				code, hdr, body := hangSend(t, c.Base, r[0], r[1], cl.key, r[2])
				if code != 503 || hdr.Get("Retry-After") == "" || body["code"] != "service_unavailable" {
					t.Errorf("%s %s with the engine paused: %d Retry-After %q %v; want 503 with Retry-After", r[0], r[1], code, hdr.Get("Retry-After"), body)
				}
			})
		}
	}
	wg.Go(func() { // refused by a warm function without the store; a cold one cannot start without it
		if code, hdr, _ := hangSend(t, c.Base, "GET", "/people/010190-1234", "pa_test_not-a-key", ""); code != 401 && (code != 503 || hdr.Get("Retry-After") == "") {
			t.Errorf("a malformed key with the engine paused: %d, want 401 (or 503 with Retry-After from a cold start)", code)
		}
	})
	wg.Wait()

	deadline := time.Now().Add(90 * time.Second)
	for !restartedLine(c.Lines()) {
		if time.Now().After(deadline) {
			t.Fatalf("the engine was not restarted:\n%s", c.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	var said []string
	for _, l := range c.Lines() {
		if strings.Contains(l, "has answered nothing for") {
			said = append(said, l)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "restarting it on its data") {
		t.Errorf("the engine's hang is said in %d lines, want one that says it restarts: %q", len(said), said)
	}
	// A new engine on a loaded machine may take a while over its first
	// reads (the JVM warms up, SQLite opens the data): those are the
	// documented 503, retried as a client would.
	warm := time.Now()
	for code, _, _ := hangSend(t, c.Base, "GET", "/people/"+clients[0].person, clients[0].key, ""); code == 503 && time.Since(warm) < time.Minute; {
		time.Sleep(time.Second)
		code, _, _ = hangSend(t, c.Base, "GET", "/people/"+clients[0].person, clients[0].key, "")
	}
	t.Logf("the restarted engine answered a read %v after its ready line", time.Since(warm).Round(100*time.Millisecond))
	for i, cl := range clients {
		if code, _, body := hangSend(t, c.Base, "GET", "/people/"+cl.person, cl.key, ""); code != 200 {
			t.Errorf("client %d's person from before the pause: %d %v", i, code, body)
		}
		if code, _, body := hangSend(t, c.Base, "POST", "/people", cl.key, fmt.Sprintf(`{"name":"Efter %d","email":"efter%d@example.dk"}`, i, i)); code != 201 {
			t.Errorf("client %d's create after the restart: %d %v", i, code, body)
		}
	}

	unavailable := 0
	for _, l := range c.Lines() {
		if cpr.Find(l) {
			t.Errorf("a log line holds a CPR number: %s", l)
		}
		if strings.Contains(l, `"msg":"store unavailable"`) && strings.Contains(l, `"path":"/api/v1/people/`+cpr.Marker+`"`) {
			unavailable++
		}
	}
	if unavailable < len(clients) { // and the malformed key's, when it met a cold start
		t.Errorf("%d functions' store unavailable lines of GET /people/<CPR>, want at least %d", unavailable, len(clients))
	}
	if t.Failed() {
		t.Logf("localcloud's stderr:\n%s", c.Logs())
	}
}

func restartedLine(lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, `"msg":"dynamodb local started"`) && strings.Contains(l, `"restarted":true`) {
			return true
		}
	}
	return false
}

func hangSend(t *testing.T, base, method, path, key, body string) (int, http.Header, map[string]any) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if method == "POST" {
		req.Header.Set("Idempotency-Key", fmt.Sprintf("hang-%d", time.Now().UnixNano()))
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if d, ok := out["data"].(map[string]any); ok && method == "POST" {
		out = d
	}
	return resp.StatusCode, resp.Header, out
}
