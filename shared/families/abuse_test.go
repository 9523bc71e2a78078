package families_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/cpr"
)

// roundThreeSpellings are the CPR spellings the third attack round got
// accepted: joiners that are not format characters, separators outside
// the old short list, encodings, and digit lookalikes.
var roundThreeSpellings = []string{
	"0101\u034f901234", "010190\ufe0f1234", "0101\u3164901234", "0101\u2800901234", "0\u03011\u03010190-1234",
	"010190_1234", "010190,1234", "010190:1234", "010190+1234", "010190·1234", "010190⁃1234", "010190    1234", "010190 -- 1234",
	"&#48;10190-1234", "%2530%2531%2530%2531%2539%2530-1234", "%zz 010190%2D1234", "⓿❶⓿❶➈⓿-❶❷❸❹",
}

// TestCPRFormsAreRefused sends each new spelling in the write
// bodies and the Idempotency-Key header, as a duplicate JSON key, and in
// webhook URLs, and expects a 422 each time with nothing created; the
// date-and-time-range text the old detector refused is accepted.
func TestCPRFormsAreRefused(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 100000})
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	client := im.Client("company_id", im.Company("11223344"))
	matter := im.Matter(client, "")["id"].(string)
	n := 0
	refused := func(what string, r apitest.Response) {
		t.Helper()
		if r.Status != 422 || !strings.Contains(r.Body["message"].(string), "CPR") {
			t.Errorf("%s: %d %s", what, r.Status, r.Raw)
		}
	}
	for _, sp := range roundThreeSpellings {
		q, _ := json.Marshal(sp)
		for _, tg := range []struct{ path, body string }{
			{"/api/v1/people", `{"name":%s,"email":"a@example.dk"}`},
			{"/api/v1/companies", `{"name":%s,"cvr":"55667788"}`},
			{"/api/v1/matters", `{"client_id":"` + client + `","matter_number":%s}`},
			{"/api/v1/time-entries", `{"matter_id":"` + matter + `","date":"2025-03-01","duration_minutes":30,"hourly_rate":1000,"description":%s}`},
		} {
			n++
			refused(tg.path+" "+sp, e.Post(tg.path, key, fmt.Sprintf("r3-%d", n), fmt.Sprintf(tg.body, q)))
		}
		n++
		refused("Idempotency-Key "+sp, e.Post("/api/v1/people", key, "key "+sp, `{"name":"Anne","email":"r3@example.dk"}`))
	}
	// A field sent twice: the first a CPR, the second harmless. Parsers
	// differ on which wins, so the body is refused whatever the values.
	for i, body := range []string{
		`{"name":"010190-1234","name":"Anne","email":"dup@example.dk"}`,
		`{"name":"Anne","email":"dup@example.dk","email":"other@example.dk"}`,
		`{"name":"X ApS","cvr":"99887766","owner":{"n":"a","n":"b"}}`,
	} {
		path := "/api/v1/people"
		if strings.Contains(body, "cvr") {
			path = "/api/v1/companies"
		}
		r := e.Post(path, key, fmt.Sprintf("dup-%d", i), body)
		if r.Status != 422 || !strings.Contains(r.Body["message"].(string), "more than once") {
			t.Errorf("%s: %d %s", body, r.Status, r.Raw)
		}
	}
	// Webhook URLs: in the query and in the path, with the new separators.
	for _, u := range []string{"https://127.0.0.1/in?c=010190+1234", "https://127.0.0.1/010190_1234", "https://127.0.0.1/in/%26%2348%3B10190-1234"} {
		body, _ := json.Marshal(map[string]any{"url": u, "event_types": []string{"matter.created"}})
		refused(u, e.Do("POST", "/api/v1/webhooks", key, bytes.NewReader(body)))
	}
	items := e.Items(org)
	if len(items["person"]) != 0 || len(items["company"]) != 1 || len(items["matter"]) != 1 || len(items["time_entry"]) != 0 || len(items["webhook_endpoint"]) != 0 {
		t.Fatalf("something with a CPR was created: %d people, %d companies, %d matters, %d entries, %d endpoints",
			len(items["person"]), len(items["company"]), len(items["matter"]), len(items["time_entry"]), len(items["webhook_endpoint"]))
	}
	// What must pass: a date and a time range, a date and time after "kl.", a phone number.
	for i, desc := range []string{"Møde 15.03.24 10.30-11.15", "Møde 15.03.2024 kl. 10.30", "Ring +45 20 11 90 12"} {
		apitest.MustStatus(t, e.Post("/api/v1/time-entries", key, fmt.Sprintf("ok-%d", i),
			fmt.Sprintf(`{"matter_id":%q,"date":"2025-03-01","duration_minutes":30,"hourly_rate":1000,"description":%q}`, matter, desc)), 201)
	}
}

// TestTheEdgeAnswersAndLogsCarefully: personal data is not cached, the
// access log names the client and key but never a CPR from the path, a
// body cut short is a 400, and a repeated filter is a 422.
func TestTheEdgeAnswersAndLogsCarefully(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var logMu sync.Mutex
	e := apitest.New(t, apitest.Options{AccessLog: slog.New(slog.NewJSONHandler(lockedWriter{&logMu, &logs}, nil))})
	org := e.Org("A")
	token, clientID := e.KeyWith(apitestKey(org))
	for _, path := range []string{"/api/v1/matters", "/api/v1/clients", "/api/v1/webhooks", "/api/v1/reports/wip"} {
		r := e.Get(path, token)
		apitest.MustStatus(t, r, 200)
		if r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q", path, r.Header.Get("Cache-Control"))
		}
	}
	apitest.MustStatus(t, e.Get("/api/v1/people/010190-1234", token), 404)
	logMu.Lock()
	lines := logs.String()
	logMu.Unlock()
	if cpr.Find(lines) {
		t.Fatalf("the access log holds a CPR:\n%s", lines)
	}
	keyID := strings.Split(token, "_")[3]
	sc := bufio.NewScanner(strings.NewReader(lines))
	n := 0
	for sc.Scan() {
		var l map[string]any
		_ = json.Unmarshal(sc.Bytes(), &l)
		if l["msg"] != "request" {
			continue
		}
		n++
		if l["client_id"] != clientID || l["key_id"] != keyID {
			t.Errorf("access line without its caller: %s", sc.Text())
		}
	}
	if n != 5 {
		t.Fatalf("%d access lines, want 5:\n%s", n, lines)
	}

	// A body that stops before its Content-Length, until the server's read
	// deadline: the handler's read fails, which is the client's doing.
	slow := apitest.New(t, apitest.Options{ReadTimeout: time.Second})
	slowKey := slow.Key(slow.Org("A"))
	conn, err := net.Dial("tcp", slow.Server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/people HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nIdempotency-Key: cut\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":", slowKey)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 400 || body["message"] == nil {
		t.Fatalf("a body cut short: %d %v", resp.StatusCode, body)
	}
	// The key was never claimed: the same key with the whole body creates.
	apitest.MustStatus(t, slow.Post("/api/v1/people", slowKey, "cut", `{"name":"Anne","email":"cut@example.dk"}`), 201)

	// The same filter twice.
	for _, q := range []string{"status=active&status=closed", "per_page=5&per_page=6", "client_id=" + org + "&client_id=" + org, "updated_since=2025-01-01&updated_since=2025-01-02"} {
		r := e.Get("/api/v1/matters?"+q, token)
		if r.Status != 422 || !strings.Contains(r.Body["message"].(string), "once") {
			t.Errorf("?%s: %d %s", q, r.Status, r.Raw)
		}
	}
	r := e.Get("/api/v1/companies?cvr=1&cvr=2", token)
	apitest.MustStatus(t, r, 422)
	// Unknown parameters stay ignored, repeated or not (spec: lists 2).
	apitest.MustStatus(t, e.Get("/api/v1/matters?utm=a&utm=b", token), 200)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
