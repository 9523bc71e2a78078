package webhook_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhook"
)

// TestAnEndpointsBudget (#40, item 2): organisation A's receiver answers,
// slowly (300 ms); its endpoint may have 3 deliveries in flight. Twelve
// of its events go to 12 workers at once, beside four other organisations
// (one whose receiver fails, one whose receiver hangs past the client's
// timeout, two quick ones) creating at the same time. A's receiver never
// has more than 3 requests at once, every one of its events arrives once
// as attempt 1 (waiting used no attempt), and the others' deliveries are
// not held up by A's backlog: the quick ones arrive while A's still wait.
// One WARN names A's endpoint, and the WebhookDeliveriesPaced metric
// counts its waits. A slot whose worker stopped (its hold lapsed) is
// freed by the next job that finds the endpoint full.
func TestAnEndpointsBudget(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	rc.set("slow", 200, 300*time.Millisecond)
	rc.set("fails", 500, 0)
	rc.set("hangs", 0, 0)
	w := newWorld(t, rc)
	w.Deliverer.EndpointConcurrency = 3
	w.Deliverer.Schedule = []time.Duration{} // one attempt each: the failing ones end at once
	hc := *w.Deliverer.Client
	hc.Timeout = 2 * time.Second // the hanging receiver, sooner than 15 s
	w.Deliverer.Client = &hc

	a := w.tenant("A")
	aEndpoint := a.subscribe(rc.url("/slow/a"))
	others := map[string]*tenant{}
	for _, name := range []string{"fails", "hangs", "quick1", "quick2"} {
		tn := w.tenant(name)
		tn.subscribe(rc.url("/" + name + "/" + tn.org))
		others[name] = tn
	}
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() { a.matter() })
	}
	for _, tn := range others {
		wg.Go(func() { tn.matter() })
	}
	wg.Wait()
	start := time.Now()
	w.drain(12, time.Minute)

	got := rc.got("/slow/")
	if len(got) != 12 || rc.peakOf("slow") > 3 {
		t.Fatalf("A's receiver got %d requests (want 12), at most %d at once (budget 3)", len(got), rc.peakOf("slow"))
	}
	seen := map[string]bool{}
	for _, h := range got {
		id := h.header.Get("Service-Event-Id")
		if seen[id] || h.header.Get("Service-Delivery-Attempt") != "1" {
			t.Fatalf("event %s: attempt %s, seen before %v", id, h.header.Get("Service-Delivery-Attempt"), seen[id])
		}
		seen[id] = true
	}
	lastA := got[len(got)-1].at
	for _, name := range []string{"quick1", "quick2"} {
		q := rc.got("/" + name + "/")
		if len(q) != 1 || !q[0].at.Before(lastA) {
			t.Errorf("%s: %d deliveries, the first %v after the start; A's last at %v: a quiet receiver waited for A's backlog",
				name, len(q), q[0].at.Sub(start), lastA.Sub(start))
		}
	}
	if f := rc.got("/fails/"); len(f) != 1 {
		t.Errorf("the failing receiver got %d", len(f))
	}
	if h := rc.got("/hangs/"); len(h) != 1 {
		t.Errorf("the hanging receiver got %d", len(h))
	}
	if log := w.Get("/api/v1/webhooks/"+aEndpoint+"/deliveries?per_page=100", a.key).Data(); len(log) != 12 {
		t.Errorf("A's delivery log holds %d attempts, want 12", len(log))
	}
	warns := w.lg.lines("webhook endpoint at its delivery budget: jobs wait their turn")
	paced := 0
	for _, l := range w.lg.lines("webhook deliveries paced") {
		paced += int(l["WebhookDeliveriesPaced"].(float64))
	}
	if len(warns) != 1 || warns[0]["endpoint_id"] != aEndpoint || paced < 1 {
		t.Errorf("%d WARNs (want 1, naming A's endpoint): %v; WebhookDeliveriesPaced %d", len(warns), warns, paced)
	}

	// Three holds whose workers stopped: lapsed, freed by the next job.
	now := time.Now()
	item := map[string]ddbtypes.AttributeValue{
		store.AttrPK: &ddbtypes.AttributeValueMemberS{Value: webhook.DeliveriesPK(a.org, aEndpoint)}, store.AttrSK: &ddbtypes.AttributeValueMemberS{Value: "INFLIGHT"},
		"n": &ddbtypes.AttributeValueMemberN{Value: "3"}, "d_ms": &ddbtypes.AttributeValueMemberN{Value: "300"},
	}
	for _, h := range []string{"f_dead1", "f_dead2", "f_dead3"} {
		item[h] = &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(-time.Second).Unix(), 10)}
	}
	if _, err := w.DB.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(w.DB.Table), Item: item}); err != nil {
		t.Fatal(err)
	}
	a.matter()
	w.dispatch()
	msgs, _ := w.Deliveries.Receive(context.Background(), 10, time.Second)
	if len(msgs) != 1 {
		t.Fatalf("%d jobs", len(msgs))
	}
	if err := w.Deliverer.Handle(context.Background(), msgs[0]); err != nil {
		t.Fatal(err)
	}
	if got := rc.got("/slow/"); len(got) != 13 || w.Deliveries.Len() != 1 { // the handled message, not deleted here
		t.Fatalf("after lapsed holds: %d deliveries (want 13), %d queued", len(got), w.Deliveries.Len())
	}
}
