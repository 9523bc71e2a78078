package webhook_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/webhook/signature"
)

// TestConcurrentRotationsHandOutOnlySigningSecrets: six rotations at once
// get one 200 and five 409s; the secret handed out signs, beside the one
// it replaced (the creation's), and no secret nobody was given does.
func TestConcurrentRotationsHandOutOnlySigningSecrets(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 200)
	e, d := apitest.HookEnv(t, rc)
	org := e.Org("A")
	key := e.Key(org)
	id, created := apitest.Subscribe(t, e, key, rc.Srv.URL, "matter.created")
	// All six read the current secret before any of them writes.
	e.Faults.Barrier(6, func(in any) bool {
		u, ok := in.(*dynamodb.UpdateItemInput)
		return ok && strings.Contains(aws.ToString(u.UpdateExpression), "previous_secret")
	})
	var mu sync.Mutex
	var given []string
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			r := e.Post("/api/v1/webhooks/"+id+"/rotate-secret", key, "", "")
			mu.Lock()
			defer mu.Unlock()
			statuses[r.Status]++
			if r.Status == 200 {
				given = append(given, r.Body["secret"].(string))
			}
		})
	}
	wg.Wait()
	if statuses[200] != 1 || statuses[409] != 5 {
		t.Fatalf("statuses %v, want one 200 and five 409", statuses)
	}
	im := apitest.NewImporter(t, e, key)
	im.Matter(im.Client("company_id", im.Company("12121212")), "")
	apitest.DeliverAll(t, e, d, 1)
	got := rc.Deliveries()[0]
	h := got.Header.Get(signature.Header)
	if strings.Count(h, "v1=") != 2 {
		t.Fatalf("signatures: %q", h)
	}
	for _, s := range []string{created, given[0]} {
		if signature.Verify(s, h, got.Body, time.Now(), signature.DefaultTolerance) != nil {
			t.Fatalf("a secret that was handed out does not sign: %q", h)
		}
	}
	// Both signatures are accounted for by the two secrets handed out.
	for _, part := range strings.Split(h, ",") {
		if !strings.HasPrefix(part, "v1=") {
			continue
		}
		ok := false
		for _, s := range []string{created, given[0]} {
			if strings.Contains(signature.SignAll([]string{s}, time.Unix(headerTime(h), 0), got.Body), part) {
				ok = true
			}
		}
		if !ok {
			t.Fatalf("signature %s is by a secret nobody was given", part)
		}
	}
}

func headerTime(h string) int64 {
	var ts int64
	for _, part := range strings.Split(h, ",") {
		if strings.HasPrefix(part, "t=") {
			fmt.Sscan(strings.TrimPrefix(part, "t="), &ts)
		}
	}
	return ts
}

// TestRetryOfATestDeliveryIsRefused: a webhook.test attempt is not queued
// again (it would be dropped: nothing subscribes to webhook.test): 409.
func TestRetryOfATestDeliveryIsRefused(t *testing.T) {
	t.Parallel()
	failing := apitest.NewReceiver(t, 500)
	e, _ := apitest.HookEnv(t, failing)
	key := e.Key(e.Org("A"))
	id, _ := apitest.Subscribe(t, e, key, failing.Srv.URL, "matter.created")
	a := e.Post("/api/v1/webhooks/"+id+"/test", key, "", "").Body["data"].(map[string]any)
	r := e.Post("/api/v1/webhooks/"+id+"/deliveries/"+a["id"].(string)+"/retry", key, "", "")
	if r.Status != 409 || !strings.Contains(r.Body["message"].(string), "test") {
		t.Fatalf("retry of a test delivery: %d %s", r.Status, r.Raw)
	}
	if e.Deliveries.Len() != 0 {
		t.Fatal("a test delivery was queued")
	}
}

// TestEndpointLimitHoldsUnderConcurrentCreates: 60 creates at once, 50 win.
func TestEndpointLimitHoldsUnderConcurrentCreates(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 100000})
	key := e.Key(e.Org("A"))
	var created, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", e.Server.URL+"/api/v1/webhooks",
				strings.NewReader(fmt.Sprintf(`{"url":"https://127.0.0.1/h%d","event_types":["matter.created"]}`, i)))
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case 201:
				created.Add(1)
			case 422:
				refused.Add(1)
			default:
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	n := 0
	for url := "/api/v1/webhooks?per_page=100"; url != ""; {
		r := e.Get(url, key)
		n += len(r.Data())
		url = r.Next()
	}
	if created.Load() != 50 || refused.Load() != 10 || n != 50 {
		t.Fatalf("%d created, %d refused, %d listed; want 50, 10, 50", created.Load(), refused.Load(), n)
	}
	// A delete frees a place.
	first := e.Get("/api/v1/webhooks?per_page=1", key).Data()[0]["id"].(string)
	apitest.MustStatus(t, e.Do("DELETE", "/api/v1/webhooks/"+first, key, nil), 204)
	apitest.MustStatus(t, e.Do("POST", "/api/v1/webhooks", key, strings.NewReader(`{"url":"https://127.0.0.1/again","event_types":["matter.created"]}`)), 201)
	apitest.MustStatus(t, e.Do("POST", "/api/v1/webhooks", key, strings.NewReader(`{"url":"https://127.0.0.1/over","event_types":["matter.created"]}`)), 422)
}

// TestConcurrentPatchesKeepDeliveryState: 400 PATCHes of event_types while
// deliveries to a failing receiver count failures; afterwards the count is
// every failed attempt since the last success, and the disable at 20
// happened exactly once and stayed.
func TestConcurrentPatchesKeepDeliveryState(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 503)
	e, d := apitest.HookEnv(t, rc)
	e.Deliverer.Schedule = []time.Duration{} // one attempt per event
	org := e.Org("A")
	key := e.Key(org)
	id, _ := apitest.Subscribe(t, e, key, rc.Srv.URL, "time_entry.created")
	im := apitest.NewImporter(t, e, key)
	m := im.Matter(im.Client("company_id", im.Company("11111111")), `,"hourly_rate":1`)["id"].(string)
	for i := range 26 {
		im.Post("/api/v1/time-entries", fmt.Sprintf(`{"matter_id":%q,"date":"2025-03-01","duration_minutes":%d}`, m, i+1))
	}
	var wg sync.WaitGroup
	var patched atomic.Int32
	for i := range 400 {
		wg.Go(func() {
			types := []string{`["time_entry.created"]`, `["time_entry.created","matter.created"]`}[i%2]
			req, _ := http.NewRequest("PATCH", e.Server.URL+"/api/v1/webhooks/"+id, strings.NewReader(`{"event_types":`+types+`}`))
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("PATCH: %d", resp.StatusCode)
			}
			patched.Add(1)
		})
	}
	apitest.DeliverAll(t, e, d, 8)
	wg.Wait()
	ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	attempts := len(rc.Deliveries())
	disables := 0
	for _, it := range e.Items(org)["webhook_endpoint"] {
		if apitest.AttrS(it, "disabled_at") != "" {
			disables++
		}
	}
	if ep["is_active"] != false || int(ep["consecutive_failures"].(float64)) != attempts || attempts < 20 || disables != 1 {
		t.Fatalf("after %d PATCHes: %d failed attempts, endpoint %v", patched.Load(), attempts, ep)
	}
	// PATCH changes only what it names, and refuses an empty URL.
	apitest.MustStatus(t, e.Do("PATCH", "/api/v1/webhooks/"+id, key, strings.NewReader(`{"url":""}`)), 422)
	after := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	if after["url"] != ep["url"] || after["consecutive_failures"] != ep["consecutive_failures"] || after["is_active"] != false {
		t.Fatalf("a refused PATCH changed the endpoint: %v", after)
	}
}

// TestSecretRotation: the new secret is shown once; for the grace period
// deliveries carry two v1 signatures, one per secret; then only the new.
// The test moves its clock (the API's, the dispatcher's and the
// deliverer's) instead of sleeping out the 10 s grace: a second past each
// write before the dispatcher's sweep, which reads up to its now, and past
// the grace at the end.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 200)
	e, d := apitest.HookEnv(t, rc)
	e.SetNow(time.Now())
	d.Clock = clock.Func(e.Now) // the dispatcher's sweep reads up to the test's now
	later := func(d time.Duration) { e.SetNow(e.Now().Add(d)) }
	org := e.Org("A")
	key := e.Key(org)
	id, oldSecret := apitest.Subscribe(t, e, key, rc.Srv.URL, "matter.created")
	later(time.Second)
	rotated := e.Now()
	r := e.Post("/api/v1/webhooks/"+id+"/rotate-secret", key, "", `{"grace_period_seconds":10}`)
	apitest.MustStatus(t, r, 200)
	newSecret := r.Body["secret"].(string)
	if newSecret == oldSecret || !strings.HasPrefix(newSecret, "whsec_") || r.Body["data"].(map[string]any)["previous_secret_expires_at"] == nil {
		t.Fatalf("rotate: %s", r.Raw)
	}
	if strings.Contains(string(e.Get("/api/v1/webhooks/"+id, key).Raw), "whsec_") {
		t.Fatal("a read shows a secret")
	}
	im := apitest.NewImporter(t, e, key)
	im.Matter(im.Client("company_id", im.Company("12121212")), "")
	later(time.Second)
	apitest.DeliverAll(t, e, d, 1)
	got := rc.Deliveries()[0]
	h := got.Header.Get(signature.Header)
	if strings.Count(h, "v1=") != 2 {
		t.Fatalf("during the grace period: %q", h)
	}
	for _, s := range []string{oldSecret, newSecret} {
		if err := signature.Verify(s, h, got.Body, e.Now(), signature.DefaultTolerance); err != nil {
			t.Fatalf("verify with one of the secrets: %v", err)
		}
	}
	// After the grace period only the new secret signs.
	e.SetNow(rotated.Add(10100 * time.Millisecond))
	im.Matter(im.Client("company_id", im.Company("13131313")), "")
	later(time.Second)
	apitest.DeliverAll(t, e, d, 1)
	if len(rc.Deliveries()) != 2 {
		t.Fatalf("%d deliveries, want 2", len(rc.Deliveries()))
	}
	last := rc.Deliveries()[1]
	h = last.Header.Get(signature.Header)
	if strings.Count(h, "v1=") != 1 || signature.Verify(newSecret, h, last.Body, e.Now(), signature.DefaultTolerance) != nil {
		t.Fatalf("after the grace period: %q", h)
	}
	// A grace period of 0 retires the old secret at once; bad ones are 422.
	apitest.MustStatus(t, e.Post("/api/v1/webhooks/"+id+"/rotate-secret", key, "", `{"grace_period_seconds":999999999}`), 422)
	apitest.MustStatus(t, e.Post("/api/v1/webhooks/"+id+"/rotate-secret", key, "", `{"grace_period_seconds":0}`), 200)
	apitest.MustStatus(t, e.Post("/api/v1/webhooks/00000000-0000-4000-8000-000000000000/rotate-secret", key, "", ""), 404)
	apitest.MustStatus(t, e.Post("/api/v1/webhooks/"+id+"/rotate-secret", key, "", `{"grace_period_seconds":"1"}`), 422)
	// At rest the table holds both secrets sealed, never in clear.
	for _, it := range e.Items(org)["webhook_endpoint"] {
		for _, attr := range []string{"secret", "previous_secret"} {
			if v := apitest.AttrS(it, attr); !strings.HasPrefix(v, "v2:local:") || strings.Contains(v, "whsec_") {
				t.Fatalf("%s stored as %q", attr, v)
			}
		}
	}
	r = e.Post("/api/v1/webhooks/"+id+"/rotate-secret", key, "", "")
	apitest.MustStatus(t, r, 200)
	exp, _ := time.Parse(time.RFC3339, r.Body["data"].(map[string]any)["previous_secret_expires_at"].(string))
	if d := time.Until(exp); d < 23*time.Hour || d > 25*time.Hour {
		t.Fatalf("default grace period ends in %s, want 24 h", d)
	}
}

// TestTestEvent: POST /webhooks/{id}/test sends one signed webhook.test
// through the delivery path and answers the attempt; it is logged, never
// counted as a failure, and works on an inactive endpoint.
func TestTestEvent(t *testing.T) {
	t.Parallel()
	good, failing := apitest.NewReceiver(t, 200), apitest.NewReceiver(t, 500)
	e, _ := apitest.HookEnv(t, good)
	tr := apitest.Trust(e, good.Srv, failing.Srv)
	org := e.Org("A")
	key := e.Key(org)
	goodID, secret := apitest.Subscribe(t, e, key, good.Srv.URL+"/hooks", "matter.created")
	r := e.Post("/api/v1/webhooks/"+goodID+"/test", key, "", "")
	apitest.MustStatus(t, r, 200)
	a := r.Body["data"].(map[string]any)
	if a["succeeded"] != true || a["status_code"] != 200.0 || a["event_type"] != "webhook.test" || a["duration_ms"] == nil {
		t.Fatalf("test to a good receiver: %s", r.Raw)
	}
	got := good.Deliveries()
	if len(got) != 1 || got[0].Header.Get("Service-Event-Type") != "webhook.test" || got[0].Header.Get("Service-Delivery-Attempt") != "1" {
		t.Fatalf("the receiver got %d deliveries: %v", len(got), got)
	}
	if err := signature.Verify(secret, got[0].Header.Get(signature.Header), got[0].Body, time.Now(), signature.DefaultTolerance); err != nil {
		t.Fatalf("the test event's signature: %v", err)
	}
	var env map[string]any
	_ = json.Unmarshal(got[0].Body, &env)
	if env["event"] != "webhook.test" || env["organization_id"] != org || env["id"] != got[0].Header.Get("Service-Event-Id") ||
		env["data"].(map[string]any)["test"].(map[string]any)["endpoint_id"] != goodID {
		t.Fatalf("envelope %s", got[0].Body)
	}
	log := e.Get("/api/v1/webhooks/"+goodID+"/deliveries", key).Data()
	if len(log) != 1 || log[0]["id"] != a["id"] || log[0]["event_type"] != "webhook.test" {
		t.Fatalf("delivery log %v", log)
	}

	// A failing receiver: the attempt says so, and 25 tests never disable.
	badID, _ := apitest.Subscribe(t, e, key, failing.Srv.URL, "matter.created")
	for range 25 {
		r := e.Post("/api/v1/webhooks/"+badID+"/test", key, "", "")
		apitest.MustStatus(t, r, 200)
		if a := r.Body["data"].(map[string]any); a["succeeded"] != false || a["status_code"] != 500.0 || !strings.Contains(a["error"].(string), "500") {
			t.Fatalf("test to a failing receiver: %s", r.Raw)
		}
	}
	ep := e.Get("/api/v1/webhooks/"+badID, key).Body["data"].(map[string]any)
	if ep["is_active"] != true || ep["consecutive_failures"] != 0.0 {
		t.Fatalf("tests counted as failures: %v", ep)
	}

	// A receiver holding the wrong secret refuses the signature (401).
	strict := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if signature.Verify("whsec_not-the-endpoints", r.Header.Get(signature.Header), b, time.Now(), signature.DefaultTolerance) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
		}
	}))
	defer strict.Close()
	tr.TLSClientConfig.RootCAs.AddCert(strict.Certificate())
	strictID, _ := apitest.Subscribe(t, e, key, strict.URL, "matter.created")
	if a := e.Post("/api/v1/webhooks/"+strictID+"/test", key, "", "").Body["data"].(map[string]any); a["succeeded"] != false || a["status_code"] != 401.0 {
		t.Fatalf("test to a receiver with the wrong secret: %v", a)
	}

	// Unreachable, and inactive: the test still goes out, and answers why it failed.
	dead := httptest.NewTLSServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	deadID, _ := apitest.Subscribe(t, e, key, deadURL, "matter.created")
	apitest.MustStatus(t, e.Do("PATCH", "/api/v1/webhooks/"+deadID, key, strings.NewReader(`{"is_active":false}`)), 200)
	r = e.Post("/api/v1/webhooks/"+deadID+"/test", key, "", "")
	apitest.MustStatus(t, r, 200)
	if a := r.Body["data"].(map[string]any); a["succeeded"] != false || a["status_code"] != nil || a["error"] == nil {
		t.Fatalf("test to an unreachable receiver: %s", r.Raw)
	}

	// Another organisation's endpoint does not exist.
	other := e.Key(e.Org("B"))
	apitest.MustStatus(t, e.Post("/api/v1/webhooks/"+goodID+"/test", other, "", ""), 404)
	apitest.MustStatus(t, e.Post("/api/v1/webhooks/not-a-uuid/test", key, "", ""), 404)
	if n := len(good.Deliveries()); n != 1 {
		t.Fatalf("the good receiver got %d deliveries after another organisation's test, want 1", n)
	}
}
