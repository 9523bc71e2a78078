package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/practice-api/practice-api/scripts/internal/localproc"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// The CPR spellings and the panic's value the devserver's and localcloud's
// panic tests share.
var (
	cprSpellings = localproc.CPRSpellings
	panicValue   = localproc.PanicValue
)

// TestAPanicIsAnsweredAndLoggedWithoutTheCPR forces a handler panic in a
// whole devserver while it serves requests with a CPR number in their
// paths and queries (#38, item 1): its engine is a proxy of the test's
// before the run's DynamoDB Local, which answers one client's calls with
// store.LocalFaultPanic (a fault from outside the process, honoured only
// with LOCAL_FAULTS=1 and an engine on loopback: see that constant for
// why the panic is forced so). The panic comes in the key's check, whose
// read runs in a goroutine of its own (store.Calls carries it back to the
// edge). Meanwhile two other organisations' clients are served. Each
// forced request is the spec's JSON 500 (a message with its request id,
// no stack, no CPR); the devserver keeps serving, the same client too
// once the fault is gone; each panic is one line with its request id,
// (redacted) path and value; and no line of the devserver's stderr holds
// a CPR in clear.
func TestAPanicIsAnsweredAndLoggedWithoutTheCPR(t *testing.T) {
	t.Parallel()
	engine := storetest.Endpoint(t)
	target, err := url.Parse(engine)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Pointer[string] // the client id whose calls answer with a panic
	var forced atomic.Int64
	pass := httputil.NewSingleHostReverseProxy(target)
	pass.ErrorLog = log.New(io.Discard, "", 0) // a call whose caller panicked meanwhile is cancelled: not news
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if id := armed.Load(); id != nil && bytes.Contains(body, []byte(`"APICLIENT#`+*id+`"`)) {
			w.Header().Set(store.LocalFaultPanic, panicValue)
			forced.Add(1)
		}
		pass.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	table := storetest.TableName("panic")
	p, err := start(t, "DYNAMODB_ENDPOINT="+proxy.URL, "TABLE_NAME="+table, "LOCAL_FAULTS=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the devserver's stop (cleanups run last first)
		_, _ = storetest.Plain(t, table).Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table})
	})

	db := storetest.Plain(t, table)
	type client struct{ id, key, person string }
	var clients []client
	for i := range 3 {
		keys := auth.NewStore(db, 0)
		o, err := keys.CreateOrg(context.Background(), "", fmt.Sprintf("Panik %d", i), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		c, tok, err := keys.CreateKey(context.Background(), auth.KeyRequest{OrgID: o.ID, Mode: auth.ModeTest, Scopes: auth.Catalogue}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		code, body := send(t, p.Base, "POST", "/people", tok.String(), fmt.Sprintf(`{"name":"Panik %d","email":"panik%d@example.dk"}`, i, i))
		if code != 201 {
			t.Fatalf("POST /people: %d %v", code, body)
		}
		clients = append(clients, client{id: c.ID, key: tok.String(), person: body["id"].(string)})
	}

	armed.Store(&clients[0].id)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]string{} // request id -> path of each forced panic
	for _, s := range cprSpellings {
		path := "/people/" + url.PathEscape(s) + "?email=" + url.QueryEscape(s)
		wg.Go(func() {
			code, hdr, raw := sendBytes(t, p.Base, "GET", path, clients[0].key)
			id := hdr.Get("X-Request-Id")
			var body map[string]any
			_ = json.Unmarshal(raw, &body)
			msg, _ := body["message"].(string)
			if code != 500 || body["code"] != "internal_error" || id == "" || !strings.Contains(msg, id) {
				t.Errorf("GET %s with a panic forced: %d %s; want the JSON 500 with its request id %q", path, code, raw, id)
			}
			if s := string(raw); cpr.Find(s) || strings.Contains(s, "goroutine") || strings.Contains(s, ".go:") || strings.Contains(s, "local fault") {
				t.Errorf("GET %s: the 500's body shows a CPR or the panic: %s", path, raw)
			}
			mu.Lock()
			ids[id] = path
			mu.Unlock()
		})
	}
	for _, c := range clients[1:] { // others are served meanwhile
		for range 3 {
			wg.Go(func() {
				if code, body := send(t, p.Base, "GET", "/people/"+c.person+"?email=0101901234", c.key, ""); code != 200 {
					t.Errorf("another client's read while one panics: %d %v", code, body)
				}
			})
		}
	}
	wg.Wait()
	armed.Store(nil)
	if forced.Load() == 0 {
		t.Fatal("the proxy forced no panic: the key's check made no call it recognised")
	}
	for _, c := range clients { // the process serves on, the panicked client too
		if code, body := send(t, p.Base, "GET", "/people/"+c.person, c.key, ""); code != 200 {
			t.Errorf("a read after the panics: %d %v", code, body)
		}
	}
	select {
	case <-p.Exited:
		t.Fatalf("the devserver exited (%v):\n%s", p.ExitErr, p.Logs())
	default:
	}

	panics := map[string]bool{}
	for _, l := range p.Lines() {
		if cpr.Find(l) {
			t.Errorf("a log line holds a CPR number: %s", l)
		}
		var rec struct{ Msg, Panic, Stack, Path string }
		if json.Unmarshal([]byte(l), &rec) != nil || rec.Msg != "panic" {
			continue
		}
		id := requestID(l)
		if ids[id] == "" || rec.Stack == "" || !strings.Contains(rec.Panic, "local fault") || !strings.Contains(rec.Panic, cpr.Marker) ||
			!strings.Contains(rec.Path, cpr.Marker) {
			t.Errorf("a panic line without a forced request's id, its stack, its (redacted) value or path: %.600s", l)
		}
		panics[id] = true
	}
	if len(panics) != len(ids) {
		t.Errorf("panic lines for %d of the %d forced requests", len(panics), len(ids))
	}
	t.Logf("%d panics forced (%d calls answered with the fault)", len(ids), forced.Load())
	if t.Failed() {
		t.Logf("the devserver's stderr:\n%s", p.Logs())
	}
}

func requestID(line string) string {
	var rec struct {
		ID string `json:"request_id"`
	}
	_ = json.Unmarshal([]byte(line), &rec)
	return rec.ID
}

func sendBytes(t *testing.T, base, method, path, key string) (int, http.Header, []byte) {
	req, _ := http.NewRequest(method, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, http.Header{}, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw
}
