package webhook_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/webhook"
)

// oneEvent subscribes rc, creates one matter and dispatches its event: the
// first delivery job is on the queue. It returns the endpoint id and the job.
func oneEvent(t *testing.T, e *apitest.Env, d *outbox.Dispatcher, rc *apitest.Receiver) (key, endpoint string, job webhook.Job) {
	t.Helper()
	org := e.Org("A")
	key = e.Key(org)
	endpoint, _ = apitest.Subscribe(t, e, key, rc.Srv.URL, "matter.created")
	im := apitest.NewImporter(t, e, key)
	im.Matter(im.Client("company_id", im.Company("31313131")), "")
	if _, err := d.Sweep(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	msgs, err := e.Deliveries.Receive(context.Background(), 10, time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("%d jobs queued (%v)", len(msgs), err)
	}
	_ = e.Deliveries.Delete(context.Background(), msgs[0])
	if err := json.Unmarshal(msgs[0].Body, &job); err != nil {
		t.Fatal(err)
	}
	return key, endpoint, job
}

func handle(t *testing.T, e *apitest.Env, msgID string, job webhook.Job) error {
	t.Helper()
	body, _ := json.Marshal(job)
	return e.Deliverer.Handle(context.Background(), queue.Message{ID: msgID, Body: body})
}

// TestAJobReceivedTwiceIsSentOnce: the same job received twice, one after
// the other and eight times at once (SQS's at-least-once, a fan-out
// retried halfway), reaches the receiver once, is logged and counted once
// (its attempt is its series' last: a failed delivery), and queues
// nothing more.
func TestAJobReceivedTwiceIsSentOnce(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 500)
	e, d := apitest.HookEnv(t, rc)
	e.Deliverer.Schedule = []time.Duration{} // one attempt: its failure is a failed delivery
	key, id, job := oneEvent(t, e, d, rc)
	if err := handle(t, e, "m1", job); err != nil {
		t.Fatal(err)
	}
	if err := handle(t, e, "m2", job); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { _ = handle(t, e, "dup-"+string(rune('a'+i)), job) })
	}
	wg.Wait()
	if n := len(rc.Deliveries()); n != 1 {
		t.Fatalf("the receiver got attempt 1 %d times", n)
	}
	ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	log := e.Get("/api/v1/webhooks/"+id+"/deliveries", key).Data()
	if ep["consecutive_failures"] != 1.0 || len(log) != 1 || e.Deliveries.Len() != 0 {
		t.Fatalf("consecutive_failures %v, %d logged, %d retries queued; want 1, 1 and none", ep["consecutive_failures"], len(log), e.Deliveries.Len())
	}
}

// TestAnAttemptWhoseOutcomeIsUnknownIsSentAgainUncounted: the store fails
// when the attempt is recorded (the POST went out): the message comes
// back, and while the claim's lease runs it is sent back again; after the
// lease the same attempt is sent again (its outcome was unknown: it is
// not a failure and does not use up an attempt), and its real outcome is
// recorded: no failure counted, nothing more queued.
func TestAnAttemptWhoseOutcomeIsUnknownIsSentAgainUncounted(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 200, 200)
	e, d := apitest.HookEnv(t, rc)
	key, id, job := oneEvent(t, e, d, rc)
	e.SetNow(time.Now())
	e.Faults.Arm(apitest.FailBefore, 5) // 1 the endpoint, 2 the slot, 3 the event, 4 the claim, 5 the record
	if err := handle(t, e, "m1", job); err == nil {
		t.Fatal("the failed record was not reported")
	}
	e.Faults.Disarm()
	if err := handle(t, e, "m1", job); err == nil {
		t.Fatal("a redelivery during the lease was not sent back")
	}
	e.SetNow(e.Now().Add(webhook.ClaimLease + time.Second))
	if err := handle(t, e, "m1", job); err != nil {
		t.Fatal(err)
	}
	got := rc.Deliveries()
	if len(got) != 2 || got[1].Header.Get("Service-Delivery-Attempt") != "1" || got[1].Header.Get("Service-Event-Id") != got[0].Header.Get("Service-Event-Id") {
		t.Fatalf("the receiver got %d sends; want attempt 1 twice, the same event", len(got))
	}
	log := e.Get("/api/v1/webhooks/"+id+"/deliveries", key).Data()
	ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	if len(log) != 1 || log[0]["succeeded"] != true || log[0]["attempt"] != 1.0 || ep["consecutive_failures"] != 0.0 || e.Deliveries.Len() != 0 {
		t.Fatalf("log %v, failures %v, %d queued", log, ep["consecutive_failures"], e.Deliveries.Len())
	}
}

// TestAManualRetryCancelsTheScheduledAttempt: attempt 1 fails and attempt
// 2 is scheduled; a manual retry succeeds; when attempt 2 comes due it
// sends nothing, so the event arrives once after the failure.
func TestAManualRetryCancelsTheScheduledAttempt(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 500, 200)
	e, d := apitest.HookEnv(t, rc)
	e.Deliverer.Schedule = []time.Duration{time.Hour, time.Hour, time.Hour, time.Hour}
	key, id, job := oneEvent(t, e, d, rc)
	if err := handle(t, e, "m1", job); err != nil {
		t.Fatal(err)
	}
	failed := e.Get("/api/v1/webhooks/"+id+"/deliveries", key).Data()[0]["id"].(string)
	r := e.Do("POST", "/api/v1/webhooks/"+id+"/deliveries/"+failed+"/retry", key, nil)
	apitest.MustStatus(t, r, 202)
	if r.Body["data"].(map[string]any)["attempt"] != 2.0 {
		t.Fatalf("the retry after one attempt is numbered %v, want 2", r.Body["data"])
	}
	msgs, _ := e.Deliveries.Receive(context.Background(), 10, time.Second) // the manual job; attempt 2 is an hour away
	if len(msgs) != 1 {
		t.Fatalf("%d jobs visible", len(msgs))
	}
	if err := e.Deliverer.Handle(context.Background(), msgs[0]); err != nil {
		t.Fatal(err)
	}
	job.Attempt = 2 // attempt 2, come due
	if err := handle(t, e, "m2", job); err != nil {
		t.Fatal(err)
	}
	got := rc.Deliveries()
	if len(got) != 2 || got[1].Header.Get("Service-Event-Id") != job.EventID || got[1].Header.Get("Service-Delivery-Attempt") != "2" {
		t.Fatalf("the receiver got %d deliveries, want 2 (the failure and the manual retry)", len(got))
	}
	log := e.Get("/api/v1/webhooks/"+id+"/deliveries", key).Data()
	if len(log) != 2 || log[0]["succeeded"] != true || log[0]["manual"] != true {
		t.Fatalf("log %v", log)
	}
	// Nothing more to retry: the event was delivered.
	apitest.MustStatus(t, e.Do("POST", "/api/v1/webhooks/"+id+"/deliveries/"+failed+"/retry", key, nil), 409)
}
