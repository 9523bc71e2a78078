package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/webhook"
	"github.com/practice-api/practice-api/shared/webhook/signature"
)

func TestWebhookManagement(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org, "webhooks:manage")
	for body, field := range map[string]string{
		`{"url":"http://example.com/hook","event_types":["matter.created"]}`:                  "url",
		`{"url":"https://example.com/hook"}`:                                                  "event_types",
		`{"url":"https://example.com/hook","event_types":[]}`:                                 "event_types",
		`{"url":"https://example.com/hook","event_types":["kyc.case.opened"]}`:                "event_types",
		`{"url":"https://example.com/hook","event_types":"matter.created"}`:                   "event_types",
		`{"url":"https://example.com/hook","event_types":["matter.created"],"secret":"mine"}`: "secret",
		`{"event_types":["matter.created"]}`:                                                  "url",
		// More names than there are types: the document's maxItems.
		`{"url":"https://example.com/hook","event_types":["matter.created"` + strings.Repeat(`,"matter.created"`, len(outbox.Types)) + `]}`: "event_types",
	} {
		r := e.Do("POST", "/api/v1/webhooks", key, strings.NewReader(body))
		if r.Status != 422 || r.Body["field"] != field {
			t.Errorf("%s: %d %s", body, r.Status, r.Raw)
		}
	}
	r := e.Do("POST", "/api/v1/webhooks", key, strings.NewReader(`{"url":"https://127.0.0.1:9/hook","event_types":["matter.created","matter.created","invoice.paid"]}`))
	apitest.MustStatus(t, r, 201)
	data := r.Body["data"].(map[string]any)
	secret, _ := r.Body["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") || data["is_active"] != true || data["consecutive_failures"] != 0.0 || len(data["event_types"].([]any)) != 2 {
		t.Fatalf("created %s", r.Raw)
	}
	id := data["id"].(string)
	for _, p := range []string{"/api/v1/webhooks", "/api/v1/webhooks/" + id} {
		g := e.Get(p, key)
		apitest.MustStatus(t, g, 200)
		if strings.Contains(string(g.Raw), secret) || strings.Contains(string(g.Raw), `"secret"`) {
			t.Fatalf("%s returns the secret", p)
		}
	}
	p := e.Do("PATCH", "/api/v1/webhooks/"+id, key, strings.NewReader(`{"is_active":false,"event_types":["document.signed"]}`))
	if p.Status != 200 || p.Body["data"].(map[string]any)["is_active"] != false {
		t.Fatalf("patch: %d %s", p.Status, p.Raw)
	}
	for _, bad := range []string{`{"is_active":"yes"}`, `{"url":"ftp://x"}`, `{"consecutive_failures":0}`, `{"colour":1}`} {
		if r := e.Do("PATCH", "/api/v1/webhooks/"+id, key, strings.NewReader(bad)); r.Status != 422 {
			t.Errorf("patch %s: %d", bad, r.Status)
		}
	}
	other := e.Key(e.Org("B"), "webhooks:manage")
	apitest.MustStatus(t, e.Get("/api/v1/webhooks/"+id, other), 404)
	apitest.MustStatus(t, e.Do("DELETE", "/api/v1/webhooks/"+id, other, nil), 404)
	if r := e.Get("/api/v1/webhooks", e.Key(org, "matters:read")); r.Status != 403 || r.Body["required_scope"] != "webhooks:manage" {
		t.Fatalf("scope: %d", r.Status)
	}
	d := e.Do("DELETE", "/api/v1/webhooks/"+id, key, nil)
	if d.Status != 204 {
		t.Fatalf("delete: %d", d.Status)
	}
	apitest.MustStatus(t, e.Get("/api/v1/webhooks/"+id, key), 404)
}

func TestEveryEventTypeArrivesSigned(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 200)
	e, d := apitest.HookEnv(t, rc)
	org := e.Org("A")
	key := e.Key(org)
	_, secret := apitest.Subscribe(t, e, key, rc.Srv.URL+"/hooks", outbox.Types...)
	ctx := context.Background()
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("11111111"))
	m := im.Matter(cl, `,"hourly_rate":100000`)["id"].(string)
	im.Post("/api/v1/time-entries", `{"matter_id":"`+m+`","date":"2025-03-01","duration_minutes":60}`)
	if _, err := billing.NewStore(e.DB).Create(ctx, org, billing.NewInvoice{MatterID: m, IssueDate: "2025-03-31", Status: "sent",
		Lines: []billing.Line{{Description: "Rådgivning", Amount: 100000}}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	inv := e.Get("/api/v1/invoices", key).Data()[0]["id"].(string)
	if _, err := billing.NewStore(e.DB).SetStatus(ctx, org, inv, "paid", time.Now()); err != nil {
		t.Fatal(err)
	}
	doc, err := document.NewStore(e.DB).Create(ctx, org, document.NewDocument{MatterID: m, Name: "Aftale", Filename: "a.pdf", MimeType: "application/pdf", SizeBytes: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := document.NewStore(e.DB).Seal(ctx, org, doc.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := matter.NewStore(e.DB).SetStatus(ctx, org, m, "closed", time.Now()); err != nil {
		t.Fatal(err)
	}
	apitest.DeliverAll(t, e, d, 1)
	keyOf := map[string]string{"matter.created": "matter", "matter.closed": "matter", "invoice.issued": "invoice",
		"invoice.paid": "invoice", "document.signed": "signing_flow", "time_entry.created": "time_entry"}
	var types []string
	for _, dl := range rc.Deliveries() {
		h := dl.Header
		var env map[string]any
		if err := json.Unmarshal(dl.Body, &env); err != nil {
			t.Fatal(err)
		}
		typ := env["event"].(string)
		if _, spec := keyOf[typ]; !spec {
			continue // an addition: docs/events_test.go holds each to api.md's table
		}
		types = append(types, typ)
		if h.Get("Content-Type") != "application/json" || h.Get("User-Agent") != "Service-Webhook/1.0" ||
			h.Get("Service-Event-Id") != env["id"] || h.Get("Service-Event-Type") != typ || h.Get("Service-Delivery-Attempt") != "1" {
			t.Errorf("%s: headers %v", typ, h)
		}
		if err := signature.Verify(secret, h.Get("Service-Signature"), dl.Body, time.Now(), signature.DefaultTolerance); err != nil {
			t.Errorf("%s: signature: %v", typ, err)
		}
		// The same delivery verifies with Standard Webhooks' own library,
		// on the secret as the API showed it.
		if wh, err := standardwebhooks.NewWebhook(secret); err != nil {
			t.Errorf("the Standard Webhooks library does not take the secret %q: %v", secret, err)
		} else if err := wh.Verify(dl.Body, h); err != nil || h.Get("webhook-id") != env["id"] {
			t.Errorf("%s: Standard Webhooks: %v (webhook-id %q)", typ, err, h.Get("webhook-id"))
		}
		if seq, ok := env["sequence"].(float64); !ok || seq < 1 || h.Get("Service-Event-Sequence") != strconv.FormatInt(int64(seq), 10) {
			t.Errorf("%s: sequence %v, header %q", typ, env["sequence"], h.Get("Service-Event-Sequence"))
		}
		if _, err := time.Parse(time.RFC3339, env["timestamp"].(string)); err != nil || env["organization_id"] != org {
			t.Errorf("%s: envelope %v", typ, env)
		}
		data := env["data"].(map[string]any)
		obj, ok := data[keyOf[typ]].(map[string]any)
		if len(data) != 1 || !ok || obj["id"] == nil || obj["status"] == nil {
			t.Errorf("%s: data %v", typ, data)
		}
		if keyOf[typ] == "invoice" {
			var keys []string
			for k := range obj {
				if k != "previous_status" { // on a move of an invoice that existed (invoice.paid here)
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			if !slices.Equal(keys, []string{"client_id", "currency", "id", "matter_id", "status", "total"}) {
				t.Errorf("data.invoice has %v", keys)
			}
		}
	}
	sort.Strings(types)
	// Every type of the spec (webhook_endpoint.disabled has a test of its
	// own, TestADisabledEndpointSaysSoAndCatchesUp, and the other additions
	// docs/events_test.go).
	want := slices.Sorted(maps.Keys(keyOf))
	if !slices.Equal(types, want) {
		t.Fatalf("delivered %v, want %v", types, want)
	}
}

func TestRetriesKeepTheEventIDAndStop(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 500, 500, 200)
	e, d := apitest.HookEnv(t, rc)
	org := e.Org("A")
	key := e.Key(org)
	id, _ := apitest.Subscribe(t, e, key, rc.Srv.URL, "matter.created")
	im := apitest.NewImporter(t, e, key)
	im.Matter(im.Client("company_id", im.Company("11111111")), "")
	apitest.DeliverAll(t, e, d, 1)
	got := rc.Deliveries()
	if len(got) != 3 {
		t.Fatalf("%d attempts", len(got))
	}
	for i, dl := range got {
		if dl.Header.Get("Service-Delivery-Attempt") != string(rune('1'+i)) || dl.Header.Get("Service-Event-Id") != got[0].Header.Get("Service-Event-Id") {
			t.Fatalf("attempt %d: %v", i+1, dl.Header)
		}
	}
	log := e.Get("/api/v1/webhooks/"+id+"/deliveries", key)
	if n := len(log.Data()); n != 3 || log.Data()[0]["attempt"] != 3.0 || log.Data()[0]["succeeded"] != true || log.Data()[2]["status_code"] != 500.0 {
		t.Fatalf("delivery log %s", log.Raw)
	}
	ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	if ep["consecutive_failures"] != 0.0 {
		t.Fatalf("a success did not reset the count: %v", ep)
	}
	// A failed attempt of an event delivered since is not resent by hand.
	failed := log.Data()[2]["id"].(string)
	r := e.Do("POST", "/api/v1/webhooks/"+id+"/deliveries/"+failed+"/retry", key, nil)
	if r.Status != 409 || !strings.Contains(r.Body["message"].(string), "delivered") {
		t.Fatalf("retry of an attempt whose event was delivered since: %d %s", r.Status, r.Raw)
	}
	apitest.MustStatus(t, e.Do("POST", "/api/v1/webhooks/"+id+"/deliveries/"+log.Data()[0]["id"].(string)+"/retry", key, nil), 409)
	apitest.MustStatus(t, e.Do("POST", "/api/v1/webhooks/"+id+"/deliveries/nope/retry", key, nil), 404)

	dead := apitest.NewReceiver(t, 500)
	e2, d2 := apitest.HookEnv(t, dead)
	key2 := e2.Key(e2.Org("B"))
	apitest.Subscribe(t, e2, key2, dead.Srv.URL, "matter.created")
	im2 := apitest.NewImporter(t, e2, key2)
	im2.Matter(im2.Client("company_id", im2.Company("22222222")), "")
	apitest.DeliverAll(t, e2, d2, 1)
	if n := len(dead.Deliveries()); n != 5 {
		t.Fatalf("a dead receiver got %d attempts, want 5", n)
	}
}

func TestTwentyConcurrentFailuresDisable(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 503)
	e, d := apitest.HookEnv(t, rc)
	e.Deliverer.Schedule = []time.Duration{} // one attempt per event: failures come from many events
	org := e.Org("A")
	key := e.Key(org)
	id, _ := apitest.Subscribe(t, e, key, rc.Srv.URL, "time_entry.created")
	im := apitest.NewImporter(t, e, key)
	m := im.Matter(im.Client("company_id", im.Company("11111111")), `,"hourly_rate":1`)["id"].(string)
	for i := range 30 {
		im.Post("/api/v1/time-entries", `{"matter_id":"`+m+`","date":"2025-03-01","duration_minutes":`+string(rune('1'+i%9))+`}`)
	}
	apitest.DeliverAll(t, e, d, 8)
	ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	attempts := len(rc.Deliveries())
	if ep["is_active"] != false || ep["disabled_at"] == nil {
		t.Fatalf("not disabled after %d failures: %v", attempts, ep)
	}
	// Exact under concurrency: every failed attempt counted once, and none
	// sent once the endpoint was seen disabled (in-flight ones may finish).
	if int(ep["consecutive_failures"].(float64)) != attempts || attempts < 20 || attempts >= 30 {
		t.Fatalf("consecutive_failures %v, attempts %d", ep["consecutive_failures"], attempts)
	}
	// Re-enabling resets the count and deliveries resume.
	apitest.MustStatus(t, e.Do("PATCH", "/api/v1/webhooks/"+id, key, strings.NewReader(`{"is_active":true}`)), 200)
	rc.Answer(200)
	im.Post("/api/v1/time-entries", `{"matter_id":"`+m+`","date":"2025-03-02","duration_minutes":5}`)
	apitest.DeliverAll(t, e, d, 1)
	ep = e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	if ep["is_active"] != true || ep["consecutive_failures"] != 0.0 || len(rc.Deliveries()) != attempts+1 {
		t.Fatalf("after re-enabling: %v, %d deliveries", ep, len(rc.Deliveries()))
	}
}

func TestEventsStayInTheirOrganisation(t *testing.T) {
	t.Parallel()
	rcA, rcB := apitest.NewReceiver(t, 200), apitest.NewReceiver(t, 200)
	e, d := apitest.HookEnv(t, rcA)
	apitest.Trust(e, rcA.Srv, rcB.Srv)
	keyA, keyB := e.Key(e.Org("A")), e.Key(e.Org("B"))
	apitest.Subscribe(t, e, keyA, rcA.Srv.URL, outbox.Types...)
	apitest.Subscribe(t, e, keyB, rcB.Srv.URL, outbox.Types...)
	imB := apitest.NewImporter(t, e, keyB)
	imB.Matter(imB.Client("company_id", imB.Company("22222222")), "")
	apitest.DeliverAll(t, e, d, 2)
	// B's company.created, client.created and matter.created.
	if len(rcA.Deliveries()) != 0 || len(rcB.Deliveries()) != 3 {
		t.Fatalf("A got %d, B got %d", len(rcA.Deliveries()), len(rcB.Deliveries()))
	}
}

func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, u := range []string{
		"http://example.com/hook", "https://127.0.0.1/hook", "https://[::1]/hook", "https://10.0.0.1/hook",
		"https://169.254.169.254/latest/meta-data", "https://localhost/hook", "https://192.168.1.10/hook",
		"https://[::ffff:127.0.0.1]/hook", "https://0.0.0.0/hook", "https://224.0.0.1/hook", "https://100.64.0.1/hook",
		"https://user:pw@example.com/hook",
		// Round 3: the rest of the special-purpose registries, and IPv6
		// forms that embed an IPv4 address.
		"https://198.18.0.1/hook", "https://198.19.200.1/hook", "https://240.0.0.1/hook", "https://192.0.0.8/hook",
		"https://[::7f00:1]/hook", "https://[::127.0.0.1]/hook", "https://[2002:7f00:1::1]/hook", "https://[2002:808:808::1]/hook",
		"https://[2001:db8::1]/hook", "https://[64:ff9b::a00:1]/hook", "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",
	} {
		if err := webhook.CheckURL(ctx, u, false, nil); err == nil {
			t.Errorf("%s was accepted", u)
		}
	}
	// The refusal names no address: neither what localhost resolves to nor
	// the literal's.
	for _, u := range []string{"https://localhost/hook", "https://169.254.169.254/x", "https://[2002:7f00:1::1]/hook"} {
		err := webhook.CheckURL(ctx, u, false, nil)
		if err == nil || strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "169.254") ||
			strings.Contains(err.Error(), "::1") || strings.Contains(err.Error(), "resolves") || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("%s: %v", u, err)
		}
	}
	if err := webhook.CheckURL(ctx, "https://93.184.216.34/hook", false, nil); err != nil {
		t.Errorf("a public address was refused: %v", err)
	}
	// At connect time: a name that resolves to loopback (DNS rebinding
	// after registration) is refused by the dialer, whatever was checked.
	rc := apitest.NewReceiver(t, 200)
	guarded, _ := webhook.NewHTTPClient("", false)
	if _, err := guarded.Get(strings.Replace(rc.Srv.URL, "127.0.0.1", "localhost", 1)); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("connect to loopback: %v", err)
	}
	// A redirect to a private address is not followed.
	var hits int
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer target.Close()
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/latest/meta-data", http.StatusFound)
	}))
	defer redirector.Close()
	client, _ := webhook.NewHTTPClient("", true)
	client.Transport.(*http.Transport).TLSClientConfig.RootCAs.AddCert(redirector.Certificate())
	resp, err := client.Get(redirector.URL)
	if err != nil || resp.StatusCode != http.StatusFound || hits != 0 {
		t.Fatalf("redirect: %v %v, target hit %d times", resp, err, hits)
	}
}

// TestLongPausesHopThroughTheQueue: a pause beyond SQS's 15-minute delay
// (the 30-minute one before attempt 5) goes back to the queue with at most
// 15 minutes' delay and a not-before time; a job received before that time
// hops again without delivering.
func TestLongPausesHopThroughTheQueue(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 500)
	e, d := apitest.HookEnv(t, rc)
	now := time.Now()
	e.SetNow(now)
	e.Deliverer.Schedule = []time.Duration{30 * time.Minute}
	rec := &recordingQueue{}
	e.Deliverer.Queue = rec
	key := e.Key(e.Org("A"))
	apitest.Subscribe(t, e, key, rc.Srv.URL, "matter.created")
	im := apitest.NewImporter(t, e, key)
	im.Matter(im.Client("company_id", im.Company("11111111")), "")
	apitest.DeliverAll(t, e, d, 1) // attempt 1 fails; attempt 2 is scheduled
	if len(rc.Deliveries()) != 1 || len(rec.sent) != 1 || rec.delays[0] != queue.MaxDelay {
		t.Fatalf("after attempt 1: %d deliveries, sent %d with delays %v", len(rc.Deliveries()), len(rec.sent), rec.delays)
	}
	var job webhook.Job
	_ = json.Unmarshal(rec.sent[0], &job)
	if job.Attempt != 2 || job.NotBefore != now.Add(30*time.Minute).Unix() {
		t.Fatalf("job %+v", job)
	}
	// Received after 15 minutes: not due yet, so it hops for the rest.
	e.SetNow(now.Add(15 * time.Minute))
	if err := e.Deliverer.Handle(context.Background(), queue.Message{Body: rec.sent[0]}); err != nil {
		t.Fatal(err)
	}
	if len(rc.Deliveries()) != 1 || len(rec.sent) != 2 || rec.delays[1] <= 15*time.Minute-time.Second || rec.delays[1] > 15*time.Minute {
		t.Fatalf("early: %d deliveries, delays %v", len(rc.Deliveries()), rec.delays)
	}
	// Due: attempt 2 goes out.
	e.SetNow(now.Add(30 * time.Minute))
	if err := e.Deliverer.Handle(context.Background(), queue.Message{Body: rec.sent[1]}); err != nil {
		t.Fatal(err)
	}
	if got := rc.Deliveries(); len(got) != 2 || got[1].Header.Get("Service-Delivery-Attempt") != "2" {
		t.Fatalf("due: %d deliveries", len(got))
	}
}

// recordingQueue keeps what is sent and with which delay.
type recordingQueue struct {
	mu     sync.Mutex
	sent   [][]byte
	delays []time.Duration
}

func (q *recordingQueue) Send(_ context.Context, _ string, body []byte, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent, q.delays = append(q.sent, body), append(q.delays, d)
	return nil
}

func (q *recordingQueue) SendBatch(ctx context.Context, group string, bodies [][]byte, delays ...time.Duration) error {
	for _, b := range bodies {
		_ = q.Send(ctx, group, b, 0)
	}
	return nil
}

func (q *recordingQueue) Receive(context.Context, int, time.Duration) ([]queue.Message, error) {
	return nil, nil
}

func (q *recordingQueue) Delete(context.Context, queue.Message) error { return nil }

// TestLocalReceiversOverHTTP: where private targets are allowed (the
// devserver), a receiver on loopback may be plain http://, and gets signed
// deliveries; anywhere else, and for any other host, https:// stays
// required. A receiver whose certificate the server does not trust gets
// an attempt whose error says what to do (WEBHOOK_CA_FILE, or http://).
func TestLocalReceiversOverHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:9000/hooks", "http://localhost/hooks", "http://[::1]:8080/x"} {
		if err := webhook.CheckURL(ctx, u, true, nil); err != nil {
			t.Errorf("%s refused where private targets are allowed: %v", u, err)
		}
		if err := webhook.CheckURL(ctx, u, false, nil); err == nil || !strings.Contains(err.Error(), "https://") {
			t.Errorf("%s accepted where private targets are not: %v", u, err)
		}
	}
	if err := webhook.CheckURL(ctx, "http://10.0.0.1/hooks", true, nil); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("http to a private address: %v", err)
	}

	var got []apitest.Delivery
	var mu sync.Mutex
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, apitest.Delivery{Header: r.Header.Clone(), Body: b})
		mu.Unlock()
	}))
	defer plain.Close()
	tlsRcv := apitest.NewReceiver(t, 200)
	e := apitest.New(t, apitest.Options{})
	apitest.Trust(e) // the system's roots only: not the TLS receiver's self-signed certificate
	key := e.Key(e.Org("A"))
	id, secret := apitest.Subscribe(t, e, key, plain.URL+"/hooks", "matter.created")
	a := e.Post("/api/v1/webhooks/"+id+"/test", key, "", "").Body["data"].(map[string]any)
	if a["succeeded"] != true || len(got) != 1 || signature.Verify(secret, got[0].Header.Get(signature.Header), got[0].Body, time.Now(), signature.DefaultTolerance) != nil {
		t.Fatalf("a test to an http:// receiver on loopback: %v, %d received", a, len(got))
	}
	untrusted, _ := apitest.Subscribe(t, e, key, tlsRcv.Srv.URL, "matter.created") // the env does not trust its certificate
	a = e.Post("/api/v1/webhooks/"+untrusted+"/test", key, "", "").Body["data"].(map[string]any)
	if a["succeeded"] != false || !strings.Contains(a["error"].(string), "WEBHOOK_CA_FILE") {
		t.Fatalf("a receiver with an untrusted certificate: %v", a)
	}
}
