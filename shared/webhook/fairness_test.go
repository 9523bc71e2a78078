package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/webhook"
)

// recorder is the delivery queue as the test watches it: when each job was
// first sent, and every receive, in order.
type recorder struct {
	queue.Queue
	mu       sync.Mutex
	sent     map[string]time.Time
	received []receipt
}

type receipt struct {
	at         time.Time
	group, key string
}

func jobKey(body []byte) string {
	var j webhook.Job
	_ = json.Unmarshal(body, &j)
	return fmt.Sprint(j.EventID, j.EndpointID, j.Attempt, j.Replay, j.Manual)
}

func (r *recorder) note(bodies [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range bodies {
		if k := jobKey(b); r.sent[k].IsZero() {
			r.sent[k] = time.Now()
		}
	}
}

func (r *recorder) Send(ctx context.Context, group string, body []byte, delay time.Duration) error {
	err := r.Queue.Send(ctx, group, body, delay)
	if err == nil && delay == 0 {
		r.note([][]byte{body})
	}
	return err
}

func (r *recorder) SendBatch(ctx context.Context, group string, bodies [][]byte, delays ...time.Duration) error {
	err := r.Queue.SendBatch(ctx, group, bodies, delays...)
	if err == nil && len(delays) == 0 {
		r.note(bodies)
	}
	return err
}

func (r *recorder) Receive(ctx context.Context, max int, wait time.Duration) ([]queue.Message, error) {
	msgs, err := r.Queue.Receive(ctx, max, wait)
	now := time.Now()
	r.mu.Lock()
	for _, m := range msgs {
		r.received = append(r.received, receipt{at: now, group: m.Group, key: jobKey(m.Body)})
	}
	r.mu.Unlock()
	return msgs, err
}

// overtaken counts, for the jobs of the groups quiet received in
// [from, to), the jobs of groups noisy received after each was sent and
// before it: the queue's answer to "did anyone wait behind the noisy
// tenant".
func (r *recorder) overtaken(quiet, noisy map[string]bool, from, to time.Time) (jobs, overtakes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, q := range r.received {
		if !quiet[q.group] || q.at.Before(from) || !q.at.Before(to) {
			continue
		}
		sent := r.sent[q.key]
		if sent.IsZero() {
			continue
		}
		jobs++
		for j := i - 1; j >= 0 && r.received[j].at.After(sent); j-- {
			if noisy[r.received[j].group] {
				overtakes++
			}
		}
	}
	return jobs, overtakes
}

// latencies are the delivery latencies (event commit, its sequence, to
// the receiver) of the live deliveries under prefix that arrived in
// [from, to).
func latencies(rc *receiver, prefix string, from, to time.Time) []time.Duration {
	var out []time.Duration
	for _, h := range rc.got(prefix) {
		if h.header.Get("Service-Replay-Id") != "" || h.at.Before(from) || !h.at.Before(to) {
			continue
		}
		var env struct{ Sequence int64 }
		if json.Unmarshal(h.body, &env) == nil && env.Sequence > 0 {
			out = append(out, h.at.Sub(time.UnixMicro(env.Sequence)))
		}
	}
	return out
}

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[(len(ds)-1)/2]
}

func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[max(0, int(math.Ceil(0.99*float64(len(ds))))-1)]
}

// TestNoOrganisationSlowsTheOthers (#40, item 9) is make fairness in
// seconds: the devserver's delivery loop (16 workers), dispatcher and fair
// queue, with organisation A's load at least twice their capacity. A has 4
// endpoints on a receiver that answers after 400 ms (3 deliveries in
// flight each), replays 80 events to each (320 × 0.4 s = 128
// worker-seconds, against 16 workers × the load's 4 s = 64) and keeps
// creating; four quiet organisations each create a matter every 400 ms
// with a quick receiver (6 without A's load, 10 with it), beside one whose
// receiver fails every attempt and one whose receiver hangs past the
// client's timeout once per event (a quarter as many each). The quiet organisations' p99 under A's
// load stays within 2 s of their p99 without it (and within twice it: a
// shared machine's store slows both); A's own live events arrive within 10
// s; every live event of a working receiver arrives (none lost), the
// failing receiver's get their attempts, and A's receiver never has more
// than its endpoints' budget in flight.
func TestNoOrganisationSlowsTheOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("needs DynamoDB Local")
	}
	t.Parallel()
	const workers, slow, perEndpoint, replayed = 16, 400 * time.Millisecond, 3, 80
	rc := newReceiver(t)
	rc.set("slow", 200, slow)
	rc.set("fails", 500, 0)
	rc.byAttempt("hangs", func(n int) int {
		if n == 1 {
			return 0
		}
		return 200
	})
	w := newWorld(t, rc)
	// The devserver's dispatcher: its client's writes of pending events
	// wake a sweep of just the shards they went to (outbox.Written), not
	// of all 32 after every create (a third of this test's calls to the
	// engine were those sweeps' empty Queries).
	written := outbox.NewWritten()
	w.DB.Client = dynamodb.New(w.DB.Client.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, written.Watch) })
	w.d.Written = written
	w.Deliverer.EndpointConcurrency = perEndpoint
	w.Deliverer.Schedule = []time.Duration{0, 0, 0, 0}
	hc := *w.Deliverer.Client
	hc.Timeout = time.Second
	w.Deliverer.Client = &hc

	// A's feed, for its replays: events written as its creates write them
	// (a transaction each), before it has an endpoint.
	a := w.tenant("A")
	var wgA sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range replayed {
		sem <- struct{}{}
		wgA.Go(func() {
			defer func() { <-sem }()
			ev, err := outbox.New(a.org, outbox.MatterCreated, "matter", map[string]any{"id": fmt.Sprint("feed-", i)}, time.Now())
			if err == nil {
				tx := w.DB.Tx()
				outbox.Add(tx, ev)
				err = tx.Commit(context.Background())
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wgA.Wait()
	w.dispatch() // A's feed: no endpoint yet, nothing to deliver
	var quiet []*tenant
	for i := range 4 {
		tn := w.tenant(fmt.Sprint("Q", i))
		tn.subscribe(rc.url("/quiet/" + tn.org))
		quiet = append(quiet, tn)
	}
	fails, hangs := w.tenant("fails"), w.tenant("hangs")
	fails.subscribe(rc.url("/fails/" + fails.org))
	hangs.subscribe(rc.url("/hangs/" + hangs.org))

	// The delivery queue, watched: every send and receive of the jobs.
	rec := &recorder{Queue: w.Deliveries, sent: map[string]time.Time{}}
	w.Deliverer.Queue = rec
	for _, sinks := range w.d.Routes {
		for _, sink := range sinks {
			if f, ok := sink.(*webhook.Fanout); ok {
				f.Queue = rec
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go queue.Run(ctx, w.lg.logger(), rec, "webhook-delivery", workers, w.Deliverer.Handle)
	kick := make(chan struct{}, 1) // the devserver's dispatcher: a sweep of the shards written after each write, and of all every second
	go w.d.Poll(ctx, kick, time.Second, func(error) {})
	var mu sync.Mutex
	live := map[*tenant][]string{}
	create := func(tn *tenant, n int, every time.Duration) {
		for range n {
			next := time.Now().Add(every)
			id := tn.matter()
			select {
			case kick <- struct{}{}:
			default:
			}
			mu.Lock()
			live[tn] = append(live[tn], id)
			mu.Unlock()
			time.Sleep(time.Until(next))
		}
	}
	// A phase: each organisation creates n matters, one every 400 ms (or
	// as fast as the store takes them, on a loaded machine).
	phase := func(n int, loaded bool) (from, to time.Time) {
		var wg sync.WaitGroup
		from = time.Now()
		for _, tn := range quiet {
			wg.Go(func() { create(tn, n, 400*time.Millisecond) })
		}
		for _, tn := range []*tenant{fails, hangs} { // a quarter as many
			wg.Go(func() { create(tn, n/4, 1600*time.Millisecond) })
		}
		if loaded {
			wg.Go(func() { create(a, n, 400*time.Millisecond) })
		}
		wg.Wait()
		return from, time.Now()
	}

	unloadedFrom, unloadedTo := phase(6, false)
	var aEndpoints []string
	for i := range 4 {
		aEndpoints = append(aEndpoints, a.subscribe(rc.url(fmt.Sprintf("/slow/%d", i))))
	}
	for _, ep := range aEndpoints {
		if r := a.replay(ep); queued(r) != replayed {
			t.Fatalf("A's replay: %d %s", r.Status, r.Raw)
		}
	}
	loadedFrom, loadedTo := phase(10, true)

	// Drain the live events (A's replay may still be going: not waited for).
	deadline := time.Now().Add(30 * time.Second)
	missing := func() []string {
		var out []string
		mu.Lock()
		defer mu.Unlock()
		for tn, ids := range live {
			if tn == fails { // its five attempts each
				if got := len(rc.got("/fails/")); got < 5*len(ids) {
					out = append(out, fmt.Sprintf("fails: %d of %d attempts", got, 5*len(ids)))
				}
				continue
			}
			prefix := "/quiet/" + tn.org
			switch tn {
			case a:
				prefix = "/slow/"
			case hangs:
				prefix = "/hangs/"
			}
			hits := rc.got(prefix)
			for _, id := range ids {
				n := 0
				for _, h := range hits {
					if h.header.Get("Service-Replay-Id") == "" && strings.Contains(string(h.body), id) && (tn != hangs || h.header.Get("Service-Delivery-Attempt") != "1") {
						n++
					}
				}
				if want := map[bool]int{true: 4, false: 1}[tn == a]; n < want {
					out = append(out, tn.org+"/"+id)
				}
			}
		}
		return out
	}
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if m := missing(); len(m) > 0 {
		t.Fatalf("%d live deliveries never arrived (lost): %v", len(m), m[:min(5, len(m))])
	}

	cancel() // the workers' failure summary
	time.Sleep(100 * time.Millisecond)
	for _, l := range w.lg.lines("queue handler failures") {
		t.Logf("workers: %v failed, first %v", l["messages"], l["first"])
	}
	// By when each event was committed: one created in the unloaded run
	// and delivered after it is the unloaded run's.
	unloaded, loaded := splitByCommit(rc, quiet, unloadedFrom, unloadedTo, loadedFrom, loadedTo)
	aLive := latencies(rc, "/slow/", loadedFrom, time.Now())
	replayedSent := 0
	for _, h := range rc.got("/slow/") {
		if h.header.Get("Service-Replay-Id") != "" && h.at.Before(loadedTo) {
			replayedSent++
		}
	}
	t.Logf("quiet organisations: p50/p99 %v/%v unloaded (%d), %v/%v under A's load (%d); A's live events p99 %v (%d); A's replayed deliveries during the load: %d of %d; A's peak in flight %d",
		p50(unloaded).Round(time.Millisecond), p99(unloaded).Round(time.Millisecond), len(unloaded), p50(loaded).Round(time.Millisecond), p99(loaded).Round(time.Millisecond), len(loaded),
		p99(aLive).Round(time.Millisecond), len(aLive),
		replayedSent, 4*replayed, rc.peakOf("slow"))
	if len(unloaded) < 4*6 || len(loaded) < 4*10 {
		t.Fatalf("too few quiet deliveries measured: %d unloaded, %d loaded", len(unloaded), len(loaded))
	}
	quietGroups := map[string]bool{}
	for _, tn := range quiet {
		quietGroups[tn.org] = true
	}
	jobs, overtakes := rec.overtaken(quietGroups, map[string]bool{a.org: true, webhook.ReplayGroup(a.org): true}, loadedFrom, time.Now())
	t.Logf("the quiet organisations' %d jobs were overtaken in the queue by %d of A's", jobs, overtakes)
	// The fair queue's rule, whatever the machine's speed: once A is a noisy
	// neighbour no quiet job waits behind its jobs (a few are received
	// before A is seen noisy). With a plain queue: thousands.
	if overtakes > jobs {
		t.Errorf("A's jobs overtook the quiet organisations' %d times in the queue (%d quiet jobs)", overtakes, jobs)
	}
	// The goals, with room for a shared machine's store: a quiet
	// organisation waiting behind A's backlog waits seconds (320 jobs of
	// 0.4 s over 16 workers: 8 s), far past this.
	if p99(loaded) > 2*p99(unloaded)+2*time.Second {
		t.Errorf("the quiet organisations' p99 went from %v to %v under A's load", p99(unloaded), p99(loaded))
	}
	if p99(aLive) > 10*time.Second+p99(unloaded) {
		t.Errorf("A's own live events' p99 %v, over 10 s (and the unloaded p99)", p99(aLive))
	}
	if rc.peakOf("slow") > 4*perEndpoint {
		t.Errorf("A's receiver had %d requests at once, over its endpoints' budget of %d each", rc.peakOf("slow"), perEndpoint)
	}
}

// splitByCommit is the quiet organisations' delivery latencies of the
// events committed in each phase.
func splitByCommit(rc *receiver, quiet []*tenant, uFrom, uTo, lFrom, lTo time.Time) (unloaded, loaded []time.Duration) {
	for _, tn := range quiet {
		for _, h := range rc.got("/quiet/" + tn.org) {
			var env struct{ Sequence int64 }
			if json.Unmarshal(h.body, &env) != nil || env.Sequence == 0 {
				continue
			}
			at := time.UnixMicro(env.Sequence)
			switch {
			case !at.Before(uFrom) && at.Before(uTo):
				unloaded = append(unloaded, h.at.Sub(at))
			case !at.Before(lFrom) && at.Before(lTo):
				loaded = append(loaded, h.at.Sub(at))
			}
		}
	}
	return unloaded, loaded
}
