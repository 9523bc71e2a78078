package party_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/families"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/queue"
)

// fakeRegister is a company register over real HTTP: the snapshot for
// 12345678, a logo, 404 for other CVRs; it fails the first `failures`
// snapshot requests with 503.
func fakeRegister(t *testing.T, failures int64) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/companies/12345678":
			if calls.Add(1) <= failures {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"name":"Nordlys ApS","status":"NORMAL","industry":"Advokatvirksomhed","employees":12}`))
		case "/companies/12345678/logo":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write([]byte("\x89PNG\r\n\x1a\nlogo"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// drain runs the outbox dispatcher and the enrichment worker until the queue
// is empty, moving the clock past any retry pause.
func drain(t *testing.T, e *apitest.Env, d *outbox.Dispatcher, q *queue.Memory, en *party.Enricher) {
	t.Helper()
	ctx := context.Background()
	if _, err := d.Sweep(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for rounds := 0; q.Len() > 0; rounds++ {
		if rounds > 20 {
			t.Fatal("the enrichment queue does not drain")
		}
		msgs, err := q.Receive(ctx, 10, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if err := en.Handle(ctx, m); err != nil {
				t.Fatal(err)
			}
			_ = q.Delete(ctx, m)
		}
	}
}

func enrichEnv(t *testing.T, register string) (*apitest.Env, string, *outbox.Dispatcher, *queue.Memory, *party.Enricher) {
	q := queue.NewMemory(time.Minute)
	d := &outbox.Dispatcher{Routes: map[outbox.Type][]outbox.Sink{outbox.CompanyEnrich: {q}}}
	for _, typ := range outbox.Types { // company.created, company.updated: no subscriber here
		d.Routes[typ] = []outbox.Sink{queue.NewMemory(time.Minute)}
	}
	// As the devserver: a company's create starts its enrichment (AWS: the
	// table's stream, tested in shared/app).
	e := apitest.New(t, apitest.Options{Families: []families.Option{families.AfterCompanyCreate(func(ctx context.Context, org string, c party.Company) {
		if err := d.DispatchCompany(ctx, org, c.ID, c.CVR, c.CreatedAt); err != nil {
			t.Error(err)
		}
	})}})
	d.DB = e.DB
	en := &party.Enricher{Store: party.NewStore(e.DB), Register: register, Queue: q, Schedule: []time.Duration{0, 0, 0},
		HTTP: party.RegisterClient(true), Log: e.Log} // the fake register is on loopback
	org := e.Org("A")
	return e, org, d, q, en
}

func TestCompanyEnrichment(t *testing.T) {
	t.Parallel()
	reg, calls := fakeRegister(t, 2) // two failures, then the snapshot
	e, org, d, q, en := enrichEnv(t, reg.URL)
	key := e.Key(org)
	r := e.Post("/api/v1/companies", key, "c1", `{"name":"Nordlys ApS","cvr":"12345678"}`)
	apitest.MustStatus(t, r, 201)
	if r.Body["data"].(map[string]any)["enrichment"].(map[string]any)["status"] != "pending" {
		t.Fatalf("new company: %s", r.Raw)
	}
	created := r.Body["data"].(map[string]any)["updated_at"].(string)
	drain(t, e, d, q, en)
	c := e.Get(r.Header.Get("Location"), key).Body["data"].(map[string]any)
	en2 := c["enrichment"].(map[string]any)
	if en2["status"] != "done" || en2["attempts"] != 3.0 || calls.Load() != 3 {
		t.Fatalf("enrichment %v after %d register calls", en2, calls.Load())
	}
	if en2["register"].(map[string]any)["industry"] != "Advokatvirksomhed" {
		t.Fatalf("snapshot %v", en2["register"])
	}
	logo := en2["logo"].(map[string]any)
	if logo["content_type"] != "image/png" || logo["size"] != 12.0 || len(logo["sha256"].(string)) != 64 {
		t.Fatalf("logo %v", logo)
	}
	// The change is visible to an updated_since sync.
	if !(c["updated_at"].(string) > created) {
		t.Fatalf("updated_at did not move: %v", c["updated_at"])
	}
	since := e.Get("/api/v1/companies?updated_since="+c["updated_at"].(string), key)
	if len(since.Data()) != 1 {
		t.Fatal("the enriched company is not in the updated_since page")
	}
	// A duplicate delivery of the finished job (at-least-once) changes nothing.
	id := c["id"].(string)
	dup, _ := json.Marshal(outbox.Message{ID: id, OrgID: org, Type: outbox.CompanyEnrich, Data: json.RawMessage(`{"company":{"id":"` + id + `","cvr":"12345678"}}`)})
	if err := en.Handle(context.Background(), queue.Message{Body: dup}); err != nil {
		t.Fatal(err)
	}
	again := e.Get(r.Header.Get("Location"), key).Body["data"].(map[string]any)
	if again["updated_at"] != c["updated_at"] || calls.Load() != 3 || len(e.Items(org)["company_logo"]) != 1 {
		t.Fatalf("a duplicate job redid the work: %v", again)
	}
}

func TestEnrichmentGivesUpAndSkips(t *testing.T) {
	t.Parallel()
	reg, _ := fakeRegister(t, 100) // always busy
	e, org, d, q, en := enrichEnv(t, reg.URL)
	key := e.Key(org)
	busy := e.Post("/api/v1/companies", key, "c1", `{"name":"Nordlys ApS","cvr":"12345678"}`)
	unknown := e.Post("/api/v1/companies", key, "c2", `{"name":"Ukendt ApS","cvr":"87654321"}`)
	drain(t, e, d, q, en)
	got := e.Get(busy.Header.Get("Location"), key).Body["data"].(map[string]any)["enrichment"].(map[string]any)
	if got["status"] != "failed" || got["attempts"] != 4.0 || !strings.Contains(got["error"].(string), "503") {
		t.Fatalf("after the last retry: %v", got)
	}
	got = e.Get(unknown.Header.Get("Location"), key).Body["data"].(map[string]any)["enrichment"].(map[string]any)
	if got["status"] != "failed" || got["attempts"] != 1.0 || !strings.Contains(got["error"].(string), "no company with CVR") {
		t.Fatalf("unknown CVR: %v", got)
	}

	e2, org2, d2, q2, en2 := enrichEnv(t, "")
	key2 := e2.Key(org2)
	r := e2.Post("/api/v1/companies", key2, "c1", `{"name":"Nordlys ApS","cvr":"12345678"}`)
	drain(t, e2, d2, q2, en2)
	got = e2.Get(r.Header.Get("Location"), key2).Body["data"].(map[string]any)["enrichment"].(map[string]any)
	if got["status"] != "skipped" {
		t.Fatalf("without a register: %v", got)
	}
}

// TestRegisterDataIsScrubbedAndErrorsLeakNothing: a register behind a URL
// with a path, a query key and a user name; it answers with an owner's CPR
// in several spellings, and then fails in the ways a register does.
func TestRegisterDataIsScrubbedAndErrorsLeakNothing(t *testing.T) {
	t.Parallel()
	var paths, queries []string
	var mode atomic.Int32 // 0 ok, 1 refused, 2 unreachable body
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths, queries = append(paths, r.URL.Path), append(queries, r.URL.RawQuery)
		switch {
		case mode.Load() == 1:
			http.Error(w, "bad key", http.StatusForbidden)
		case strings.HasSuffix(r.URL.Path, "/logo"):
			http.NotFound(w, r)
		default:
			_, _ = w.Write([]byte(`{"name":"Nordlys ApS","owner":{"cpr":"010190-1234","name":"Anne"},
				"board":[{"name":"Lars","id":"01.01.90-1234"},{"name":"Ida","personnummer":"x"}],"note":"CPR ０１０１９０－１２３４",
				"round3":["0101\u034f901234","010190_1234","&#48;10190-1234","%2530%2531%2530%2531%2539%2530-1234","⓿❶⓿❶➈⓿-❶❷❸❹","0101\u3164901234"],
				"c&#112;r":"x","links":{"010190 -- 1234":"y"},
				"round4":{"owner":1501901234,"f":1.501901234e9,"arr":[1501901234],"lost_zero":101901234,"e":15019012.34e2},
				"employees":12,"capital":125000000,"founded":1990.5}`))
		}
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://svc-user:pw@", 1) + "/v2/?apikey=s3cret-key"
	e, org, d, q, en := enrichEnv(t, u)
	key := e.Key(org)
	r := e.Post("/api/v1/companies", key, "c1", `{"name":"Nordlys ApS","cvr":"12345678"}`)
	apitest.MustStatus(t, r, 201)
	drain(t, e, d, q, en)
	got := e.Get(r.Header.Get("Location"), key) // the harness fails the test on any CPR in a response
	reg := got.Body["data"].(map[string]any)["enrichment"].(map[string]any)["register"].(map[string]any)
	if reg["name"] != "Nordlys ApS" || reg["owner"].(map[string]any)["name"] != "Anne" || reg["owner"].(map[string]any)["cpr"] != nil {
		t.Fatalf("snapshot not scrubbed as it should be: %v", reg)
	}
	if !strings.Contains(string(got.Raw), "[removed: CPR number]") {
		t.Fatalf("no marker where values were removed: %s", got.Raw)
	}
	for i, v := range reg["round3"].([]any) {
		if v != "[removed: CPR number]" {
			t.Errorf("round3[%d] stored as %q", i, v)
		}
	}
	// Round 4: CPRs sent as numbers, however written, are scrubbed as
	// strings are; other numbers are kept as written.
	r4 := reg["round4"].(map[string]any)
	for _, k := range []string{"owner", "f", "lost_zero", "e"} {
		if r4[k] != "[removed: CPR number]" {
			t.Errorf("round4.%s stored as %v", k, r4[k])
		}
	}
	if r4["arr"].([]any)[0] != "[removed: CPR number]" {
		t.Errorf("round4.arr stored as %v", r4["arr"])
	}
	if reg["employees"] != float64(12) || reg["capital"] != float64(125000000) || reg["founded"] != 1990.5 {
		t.Errorf("ordinary numbers changed: %v %v %v", reg["employees"], reg["capital"], reg["founded"])
	}
	if _, ok := reg["c&#112;r"]; ok || len(reg["links"].(map[string]any)) != 0 {
		t.Errorf("CPR-named or CPR-like keys kept: %v", reg)
	}
	if paths[0] != "/v2/companies/12345678" || queries[0] != "apikey=s3cret-key" {
		t.Fatalf("register called at %q ? %q; want /v2/companies/12345678 ? apikey=s3cret-key", paths[0], queries[0])
	}

	for _, m := range []int32{1, 2} {
		mode.Store(m)
		reg := u
		if m == 2 {
			reg = "http://svc-user:pw@127.0.0.1:1/v2?apikey=s3cret-key" // nothing listens there
		}
		e, org, d, q, en := enrichEnv(t, reg)
		key := e.Key(org)
		r := e.Post("/api/v1/companies", key, "c1", `{"name":"Nordlys ApS","cvr":"12345678"}`)
		drain(t, e, d, q, en)
		msg := e.Get(r.Header.Get("Location"), key).Body["data"].(map[string]any)["enrichment"].(map[string]any)["error"].(string)
		for _, leak := range []string{"127.0.0.1", "svc-user", "pw@", "s3cret", "/v2", "apikey", "http"} {
			if strings.Contains(msg, leak) {
				t.Errorf("enrichment.error %q shows %q of the register's configuration", msg, leak)
			}
		}
		if want := map[int32]string{1: "refused", 2: "unavailable"}[m]; !strings.Contains(msg, want) {
			t.Errorf("enrichment.error %q does not say %q", msg, want)
		}
	}
}

// TestRegisterFollowsNoOne: a register that redirects (to another host,
// or to its own) is a failed lookup. The target is never asked, so it
// never sees a Referer with the register's URL and apikey, and its answer
// is never stored as a snapshot. The production client also refuses to
// connect to a register on a private address, and reads at most the
// snapshot limit.
func TestRegisterFollowsNoOne(t *testing.T) {
	t.Parallel()
	var targetHits atomic.Int64
	var referers []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
		referers = append(referers, r.Header.Get("Referer"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"Evil ApS","owned_by":"attacker"}`))
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Referer") != "" {
			t.Errorf("the register got a Referer: %q", r.Header.Get("Referer"))
		}
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusFound)
	}))
	defer redirector.Close()
	e, org, d, q, en := enrichEnv(t, redirector.URL+"/v2?apikey=s3cret-key")
	key := e.Key(org)
	r := e.Post("/api/v1/companies", key, "c1", `{"name":"Nordlys ApS","cvr":"12345678"}`)
	apitest.MustStatus(t, r, 201)
	drain(t, e, d, q, en)
	got := e.Get(r.Header.Get("Location"), key).Body["data"].(map[string]any)["enrichment"].(map[string]any)
	if got["status"] != "failed" || got["register"] != nil || !strings.Contains(got["error"].(string), "HTTP 302") {
		t.Fatalf("enrichment after a redirect: %v", got)
	}
	if targetHits.Load() != 0 {
		t.Fatalf("the redirect target was asked %d times (Referer %q)", targetHits.Load(), referers)
	}
	// The production client refuses a register on loopback at connect time.
	guarded := party.RegisterClient(false)
	if _, err := guarded.Get(target.URL); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("the guarded register client reached loopback: %v", err)
	}
	// An answer over the snapshot limit is not stored.
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"pad":"` + strings.Repeat("x", 200<<10) + `"}`))
	}))
	defer big.Close()
	e2, org2, d2, q2, en2 := enrichEnv(t, big.URL)
	key2 := e2.Key(org2)
	r2 := e2.Post("/api/v1/companies", key2, "c1", `{"name":"Nordlys ApS","cvr":"12345678"}`)
	drain(t, e2, d2, q2, en2)
	got2 := e2.Get(r2.Header.Get("Location"), key2).Body["data"].(map[string]any)["enrichment"].(map[string]any)
	if got2["status"] != "failed" || got2["register"] != nil || !strings.Contains(got2["error"].(string), "bytes") {
		t.Fatalf("enrichment of an oversized answer: %v", got2)
	}
}
