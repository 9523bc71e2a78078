package webhook_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/webhook"
)

// replay asks for a replay of everything since an hour ago to endpoint.
func (tn *tenant) replay(endpoint string) apitest.Response {
	since := tn.w.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	return tn.w.Do("POST", "/api/v1/webhooks/"+endpoint+"/replay", tn.key, strings.NewReader(`{"since":"`+since+`"}`))
}

func queued(r apitest.Response) int {
	if r.Status != 202 {
		return -1
	}
	return int(r.Body["data"].(map[string]any)["queued"].(float64))
}

// TestOneReplayPerOrganisationAndURL (#40, item 4): ten endpoints of one
// organisation on one URL, ten replays at once: one is accepted, nine are
// 409 naming the replay in progress (before: one per endpoint, ten times
// the POSTs to the one URL). An endpoint on another URL replays at the
// same time; another organisation on the same URL too. Once every first
// attempt of the replay is recorded, the URL takes the next one.
func TestOneReplayPerOrganisationAndURL(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	w := newWorld(t, rc)
	a, b := w.tenant("A"), w.tenant("B")
	var sameURL []string
	for range 10 {
		sameURL = append(sameURL, a.subscribe(rc.url("/shared")))
	}
	elsewhere := a.subscribe(rc.url("/elsewhere"))
	bsShared := b.subscribe(rc.url("/shared"))
	for range 3 {
		a.matter()
		b.matter()
	}
	w.drain(8, time.Minute)
	sent := len(rc.got("/"))

	var mu sync.Mutex
	statuses := map[int]int{}
	var busy []apitest.Response
	var wg sync.WaitGroup
	for _, id := range append(sameURL, elsewhere) {
		wg.Go(func() {
			r := a.replay(id)
			mu.Lock()
			defer mu.Unlock()
			statuses[r.Status]++
			if r.Status == 409 {
				busy = append(busy, r)
			}
		})
	}
	wg.Go(func() {
		if r := b.replay(bsShared); r.Status != 202 {
			t.Errorf("B's replay to the same URL: %d %s", r.Status, r.Raw)
		}
	})
	wg.Wait()
	if statuses[202] != 2 || statuses[409] != 9 {
		t.Fatalf("A's replays: %v; want one per URL accepted (2) and 9 refused", statuses)
	}
	for _, r := range busy {
		if msg, _ := r.Body["message"].(string); !strings.Contains(msg, "URL") || r.Header.Get("Retry-After") == "" {
			t.Fatalf("409: %s %v", r.Raw, r.Header)
		}
	}
	w.drain(8, time.Minute)
	if got := len(rc.got("/")) - sent; got != 3*3 {
		t.Fatalf("the replays sent %d POSTs; want 9 (A: 3 to /shared and 3 to /elsewhere; B: 3)", got)
	}
	// Recorded: the URL is free for the next replay, by any endpoint on it.
	if r := a.replay(sameURL[7]); queued(r) != 3 {
		t.Fatalf("the next replay to the URL: %d %s", r.Status, r.Raw)
	}
}

// TestTheReplayBudget (#40, item 4): an organisation replays at most
// ReplaysPerHour events a clock hour. A replay that finds part of the
// budget queues that part (truncated, with next_since); one that finds it
// spent is 429 with the code replay_budget_exhausted and a Retry-After of
// the seconds to the next hour, and changes nothing (a PATCH with
// replay_since leaves its endpoint off). Organisations replaying at once
// each have their own budget, exactly: 6 concurrent replays of 3 events
// against a budget of 10 queue 10.
func TestTheReplayBudget(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	w := newWorld(t, rc)
	w.Deliverer.ReplaysPerHour = 10
	var tenants []*tenant
	for i := range 3 {
		tn := w.tenant(fmt.Sprint("T", i))
		tenants = append(tenants, tn)
		for range 3 {
			tn.matter()
		}
	}
	now := time.Now().Add(time.Second)
	w.SetNow(now)
	retryAfter := strconv.Itoa(int(now.UTC().Truncate(time.Hour).Add(time.Hour).Sub(now).Seconds()) + 1)
	var mu sync.Mutex
	type result struct{ queued, status int }
	results := make([][]result, len(tenants))
	var wg sync.WaitGroup
	for i, tn := range tenants {
		var eps []string
		for j := range 6 {
			eps = append(eps, tn.subscribe(rc.url(fmt.Sprintf("/r/%d/%d", i, j)))) // six URLs: six locks
		}
		for _, ep := range eps {
			wg.Go(func() {
				r := tn.replay(ep)
				res := result{queued: queued(r), status: r.Status}
				if r.Status == 429 {
					if r.Body["code"] != "replay_budget_exhausted" || r.Header.Get("Retry-After") != retryAfter {
						t.Errorf("429: %s, Retry-After %q (want %s: the seconds to the next hour)", r.Raw, r.Header.Get("Retry-After"), retryAfter)
					}
				} else if r.Status != 202 {
					t.Errorf("replay: %d %s", r.Status, r.Raw)
				}
				if r.Status == 202 && res.queued < 3 {
					d := r.Body["data"].(map[string]any)
					if d["truncated"] != true || d["next_since"] == nil {
						t.Errorf("a partial replay: %v", d)
					}
				}
				mu.Lock()
				results[i] = append(results[i], res)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for i, rs := range results {
		total := 0
		for _, r := range rs {
			total += max(r.queued, 0)
		}
		if total != 10 {
			t.Errorf("tenant %d replayed %d events in the hour, want its budget of 10: %v", i, total, rs)
		}
	}
	// Spent: a PATCH that would replay is refused before it changes anything.
	tn := tenants[0]
	off := tn.subscribe(rc.url("/off"))
	if r := w.Do("PATCH", "/api/v1/webhooks/"+off, tn.key, strings.NewReader(`{"is_active":false}`)); r.Status != 200 {
		t.Fatal(r.Status)
	}
	since := now.Add(-time.Hour).Format(time.RFC3339)
	r := w.Do("PATCH", "/api/v1/webhooks/"+off, tn.key, strings.NewReader(`{"is_active":true,"replay_since":"`+since+`"}`))
	if r.Status != 429 || r.Body["code"] != "replay_budget_exhausted" {
		t.Fatalf("PATCH with replay_since, budget spent: %d %s", r.Status, r.Raw)
	}
	if ep := w.Get("/api/v1/webhooks/"+off, tn.key).Body["data"].(map[string]any); ep["is_active"] != false {
		t.Fatalf("a refused replay turned the endpoint on: %v", ep)
	}
	// The next hour has a budget again.
	w.SetNow(now.UTC().Truncate(time.Hour).Add(time.Hour + time.Second))
	if r := tn.replay(off); r.Status != 409 { // still off: the budget is not what refuses now
		t.Fatalf("next hour, to a disabled endpoint: %d %s", r.Status, r.Raw)
	}
	if r := w.Do("PATCH", "/api/v1/webhooks/"+off, tn.key, strings.NewReader(`{"is_active":true,"replay_since":"`+since+`"}`)); r.Status != 200 ||
		r.Body["replay"].(map[string]any)["queued"] != 3.0 {
		t.Fatalf("next hour: %d %s", r.Status, r.Raw)
	}
}

// refusing is a delivery queue that refuses every body of a batch from
// the index from on (as SQS refuses entries under throttling).
type refusing struct {
	queue.Queue
	from int
}

func (q *refusing) SendBatch(ctx context.Context, group string, bodies [][]byte, delays ...time.Duration) error {
	if q.from >= len(bodies) {
		return q.Queue.SendBatch(ctx, group, bodies, delays...)
	}
	if err := q.Queue.SendBatch(ctx, group, bodies[:q.from], delays[:min(q.from, len(delays))]...); err != nil {
		return err
	}
	unsent := make([]int, 0, len(bodies)-q.from)
	for i := q.from; i < len(bodies); i++ {
		unsent = append(unsent, i)
	}
	return &queue.BatchError{Unsent: unsent, Err: fmt.Errorf("throttled")}
}

// TestAReplayThatIsQueuedIsAccepted (#40, items 4 and 7): a replay's jobs
// are the delivery queue's tenant <org>#replay. When the queue refuses part
// of the batch the replay is still accepted with what was queued
// (truncated, next_since the first event not queued, the budget given
// back for the rest), and when recording its count fails after the jobs
// are queued it is accepted too (202, never 500 once queued; its lock's
// first lease frees the URL a minute later). A worker whose record went
// through but whose answer was lost (it sees an error and never counts
// anything more) still counts: the lock frees as soon as every first
// attempt is recorded, and its progress says so.
func TestAReplayThatIsQueuedIsAccepted(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	w := newWorld(t, rc)
	a := w.tenant("A")
	ep := a.subscribe(rc.url("/a"))
	for range 5 {
		a.matter()
	}
	w.drain(4, time.Minute)

	// Part refused by the queue.
	w.Deliverer.Queue = &refusing{Queue: w.Deliveries, from: 3}
	r := a.replay(ep)
	if queued(r) != 3 || r.Body["data"].(map[string]any)["truncated"] != true {
		t.Fatalf("a replay the queue took 3 of: %d %s", r.Status, r.Raw)
	}
	nextSince := r.Body["data"].(map[string]any)["next_since"].(string)
	feed := matterEvents(w.Get("/api/v1/events", a.key).Data()) // what the endpoint subscribes to
	seq4, _ := feed[3]["sequence"].(float64)
	if want := time.UnixMicro(int64(seq4)).UTC().Format("2006-01-02T15:04:05.000000Z"); nextSince != want {
		t.Fatalf("next_since %s, want the 4th event's time %s", nextSince, want)
	}
	w.Deliverer.Queue = w.Deliveries
	msgs, _ := w.Deliveries.Receive(context.Background(), 10, time.Second)
	for _, m := range msgs {
		if m.Group != webhook.ReplayGroup(a.org) {
			t.Fatalf("a replayed job's group %q, want %q", m.Group, webhook.ReplayGroup(a.org))
		}
	}
	// Each is handled, and the first one's answer is lost after its
	// record committed: 1 endpoint, 2 slot, 3 event, 4 claim, 5 record.
	for i, m := range msgs {
		if i == 0 {
			w.Faults.Arm(apitest.FailAfter, 5)
		}
		err := w.Deliverer.Handle(context.Background(), m)
		if i == 0 {
			if fired := w.Faults.Disarm(); !fired || err == nil {
				t.Fatalf("the record's answer was not lost (fired %v, %v)", fired, err)
			}
			// It comes back, finds its attempt recorded, sends nothing.
			err = w.Deliverer.Handle(context.Background(), m)
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = w.Deliveries.Delete(context.Background(), m)
	}
	if got := len(rc.got("/a")); got != 5+3 {
		t.Fatalf("%d POSTs, want 5 and the replay's 3", got)
	}
	// Every first attempt is recorded: the URL takes the next replay.
	w.Calls.Reset()
	r = a.replay(ep)
	if queued(r) != 5 {
		t.Fatalf("the next replay: %d %s (the lock did not see its first attempts)", r.Status, r.Raw)
	}
	ops := w.Calls.Ops()
	settle := -1
	for i, op := range ops {
		if op == "UpdateItem" {
			settle = i + 1 // the last UpdateItem of a replay is its settle
		}
	}
	w.drain(4, time.Minute)

	// Its count not recorded: accepted all the same; the URL is held for
	// the lock's first lease only.
	w.SetNow(time.Now())
	w.Faults.Arm(apitest.FailBefore, settle)
	r = a.replay(ep)
	w.Faults.Disarm()
	if queued(r) != 5 {
		t.Fatalf("a replay whose count failed after it was queued: %d %s (ops %v)", r.Status, r.Raw, ops)
	}
	w.drain(4, time.Minute)
	if r := a.replay(ep); r.Status != 409 || !strings.Contains(r.Body["message"].(string), "5 events have had their first attempt") {
		t.Fatalf("within its first lease: %d %s", r.Status, r.Raw)
	}
	w.SetNow(w.Now().Add(61 * time.Second))
	if r := a.replay(ep); queued(r) != 5 {
		t.Fatalf("after its first lease: %d %s", r.Status, r.Raw)
	}
	if got := w.lg.lines("webhook replay: its count was not recorded; the URL is free again after a minute"); len(got) != 1 {
		t.Errorf("%d WARNs for the lost count", len(got))
	}
}

// TestAReplayDoesNotDelayItsOwnLiveEvents (#40, item 4): organisation A
// replays 40 events to a receiver that takes 200 ms, its endpoint allowed
// 4 deliveries at once; replays take at most 2 of them. A live event A
// raises meanwhile reaches the same endpoint before the replay's backlog
// has drained: it is a tenant of its own in the queue and has slots of
// its own at the endpoint.
func TestAReplayDoesNotDelayItsOwnLiveEvents(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	rc.set("slow", 200, 200*time.Millisecond)
	w := newWorld(t, rc)
	w.Deliverer.EndpointConcurrency = 4
	a := w.tenant("A")
	for range 40 {
		a.matter()
	}
	w.dispatch() // no endpoint yet: nothing to deliver
	ep := a.subscribe(rc.url("/slow"))
	if r := a.replay(ep); queued(r) != 40 {
		t.Fatalf("replay: %d %s", r.Status, r.Raw)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go queue.Run(ctx, w.lg.logger(), w.Deliveries, "deliveries", 16, w.Deliverer.Handle)
	// The live event is raised once the replay's backlog is under way:
	// its first deliveries have reached the receiver.
	for deadline := time.Now().Add(30 * time.Second); len(rc.got("/slow")) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the replay's deliveries did not start within 30 s: %d", len(rc.got("/slow")))
		}
	}
	live := a.matter()
	w.dispatch()
	deadline := time.Now().Add(30 * time.Second)
	var at time.Time
	for at.IsZero() && time.Now().Before(deadline) {
		for _, h := range rc.got("/slow") {
			if h.header.Get("Service-Replay-Id") == "" && strings.Contains(string(h.body), live) {
				at = h.at
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	replayed := 0
	for _, h := range rc.got("/slow") {
		if h.header.Get("Service-Replay-Id") != "" && h.at.Before(at) {
			replayed++
		}
	}
	if at.IsZero() || replayed >= 30 || rc.peakOf("slow") > 4 {
		t.Fatalf("the live event arrived %v, after %d of the 40 replayed (peak %d at once)", !at.IsZero(), replayed, rc.peakOf("slow"))
	}
	t.Logf("the live event arrived with %d of 40 replayed events sent before it", replayed)
}
