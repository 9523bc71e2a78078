package webhook_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/webhook"
	"github.com/practice-api/practice-api/shared/webhook/signature"
)

// TestJobsNameAndDoNotCarry (#40, item 8): a delivery job holds the
// organisation, the event's id and sequence (its key in the feed), the
// endpoint and the attempt, nothing of the event; the worker reads the
// event as stored and signs that. Jobs sent to the queue by someone else
// (a made-up event, the old shape carrying an invoice.paid body, a real
// event under another id, another organisation's event, an endpoint that
// does not exist, something that is not a job) are each dropped with a
// WARN and the WebhookJobsDropped metric, and nothing is signed for them;
// the real job, sent with a forged body riding along, delivers the event
// exactly as the feed holds it.
func TestJobsNameAndDoNotCarry(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	w := newWorld(t, rc)
	a, b := w.tenant("A"), w.tenant("B")
	endpoint := a.subscribe(rc.url("/a"))
	b.subscribe(rc.url("/b"))
	a.matter()
	b.matter()
	w.dispatch()
	jobs := w.jobs()
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want one per organisation", len(jobs))
	}
	var mine, theirs webhook.Job
	for _, j := range jobs {
		if j.OrgID == a.org {
			mine = j
		} else {
			theirs = j
		}
	}
	raw, _ := json.Marshal(mine)
	var shape map[string]any
	_ = json.Unmarshal(raw, &shape)
	for k := range shape {
		if !strings.Contains(" organization_id event_id sequence endpoint_id attempt ", " "+k+" ") {
			t.Errorf("a job carries %q: %s", k, raw)
		}
	}

	forged := func(j webhook.Job) []byte { b, _ := json.Marshal(j); return b }
	madeUp, wrongSeq, otherOrg, noEndpoint := mine, mine, mine, mine
	madeUp.EventID = "00000000-0000-4000-8000-000000000001"
	wrongSeq.Sequence = theirs.Sequence // another event's key, this event's id
	otherOrg.EventID, otherOrg.Sequence = theirs.EventID, theirs.Sequence
	noEndpoint.EndpointID = "00000000-0000-4000-8000-000000000002"
	oldShape, _ := json.Marshal(map[string]any{"endpoint_id": endpoint, "attempt": 1, "event": outbox.Message{ID: mine.EventID, OrgID: a.org,
		Type: outbox.InvoicePaid, Data: json.RawMessage(`{"invoice":{"total":999999999}}`)}})
	for _, body := range [][]byte{forged(madeUp), forged(wrongSeq), forged(otherOrg), forged(noEndpoint), oldShape, []byte("not json")} {
		if err := w.handle(body); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	if got := rc.got("/"); len(got) != 0 {
		t.Fatalf("forged jobs were signed and sent: %d (%s)", len(got), got[0].body)
	}
	dropped := w.lg.lines("webhook job dropped")
	if len(dropped) != 6 {
		t.Fatalf("%d WARNs for 6 forged jobs: %v", len(dropped), dropped)
	}
	for _, l := range dropped {
		if l["level"] != "WARN" || l["WebhookJobsDropped"] != 1.0 || l["why"] == "" || strings.Contains(mustJSON(l), "999999999") {
			t.Errorf("drop line %v", l)
		}
	}

	// The real job, with a forged event riding along in its body: the
	// worker sends the event as stored.
	var real map[string]any
	_ = json.Unmarshal(raw, &real)
	real["event"] = map[string]any{"id": mine.EventID, "event": "invoice.paid", "data": map[string]any{"invoice": map[string]any{"total": 999999999}}}
	body, _ := json.Marshal(real)
	if err := w.handle(body); err != nil {
		t.Fatal(err)
	}
	got := rc.got("/a")
	feed := matterEvents(w.Get("/api/v1/events", a.key).Data()) // its client's and company's events beside
	if len(got) != 1 || len(feed) != 1 {
		t.Fatalf("%d deliveries, %d events in the feed", len(got), len(feed))
	}
	var sent, stored map[string]any
	_ = json.Unmarshal(got[0].body, &sent)
	storedRaw, _ := json.Marshal(feed[0])
	_ = json.Unmarshal(storedRaw, &stored)
	if mustJSON(sent) != mustJSON(stored) || sent["event"] != "matter.created" {
		t.Fatalf("sent %s, the feed holds %s", got[0].body, storedRaw)
	}
	if got[0].header.Get(signature.Header) == "" || got[0].header.Get("Service-Event-Id") != mine.EventID {
		t.Fatalf("headers %v", got[0].header)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
