package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/store/storetest"
	"github.com/practice-api/practice-api/shared/webhook"
)

// stopMidSend handles job as a worker that stops after its POST and before
// its record (the record fails), and whose job is then lost: the attempt
// stays claimed, "sending", with nothing left to resolve it but the sweep.
func stopMidSend(t *testing.T, e *apitest.Env, job webhook.Job) {
	t.Helper()
	e.Faults.Arm(apitest.FailBefore, 5) // 1 the endpoint, 2 the slot, 3 the event, 4 the claim, 5 the record
	err := handle(t, e, "lost-"+job.EventID, job)
	if fired := e.Faults.Disarm(); !fired || err == nil {
		t.Fatalf("the record did not fail (fired %v, err %v)", fired, err)
	}
}

// sweepAtOnce runs n sweeps at once and returns what they queued in all,
// and their errors.
func sweepAtOnce(e *apitest.Env, n int) (int, []error) {
	var mu sync.Mutex
	total, errs := 0, []error(nil)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			q, err := e.Deliverer.SweepClaims(context.Background())
			mu.Lock()
			defer mu.Unlock()
			total += q
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return total, errs
}

// TestASweepSendsAnAttemptWhoseWorkerStoppedAndWhoseJobIsGone: a worker
// stops between its POST and its record, and its job is lost. Before the
// claim's lease ends the sweep leaves it alone; after, eight sweeps at
// once queue its job once; the worker that gets it takes the claim over
// and sends the same attempt again (uncounted: no failure, the attempt's
// number kept); once recorded, no sweep finds it again.
func TestASweepSendsAnAttemptWhoseWorkerStoppedAndWhoseJobIsGone(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 200, 200)
	e, d := apitest.HookEnv(t, rc)
	key, id, job := oneEvent(t, e, d, rc)
	e.SetNow(time.Now())
	stopMidSend(t, e, job)
	if n, errs := sweepAtOnce(e, 1); n != 0 || errs != nil {
		t.Fatalf("a sweep during the lease queued %d (%v)", n, errs)
	}
	e.SetNow(e.Now().Add(webhook.ClaimLease + time.Second))
	if n, errs := sweepAtOnce(e, 8); n != 1 || errs != nil || e.Deliveries.Len() != 1 {
		t.Fatalf("8 sweeps at once queued %d (%d on the queue; %v), want the job once", n, e.Deliveries.Len(), errs)
	}
	msgs, _ := e.Deliveries.Receive(context.Background(), 10, time.Second)
	var again webhook.Job
	if err := json.Unmarshal(msgs[0].Body, &again); err != nil || again != job {
		t.Fatalf("the swept job %+v, want %+v (%v)", again, job, err)
	}
	if err := e.Deliverer.Handle(context.Background(), msgs[0]); err != nil {
		t.Fatal(err)
	}
	got := rc.Deliveries()
	if len(got) != 2 || got[1].Header.Get("Service-Delivery-Attempt") != "1" || got[1].Header.Get("Service-Event-Id") != job.EventID {
		t.Fatalf("the receiver got %d sends; want attempt 1 twice", len(got))
	}
	log := e.Get("/api/v1/webhooks/"+id+"/deliveries", key).Data()
	ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	if len(log) != 1 || log[0]["succeeded"] != true || ep["consecutive_failures"] != 0.0 {
		t.Fatalf("log %v, failures %v", log, ep["consecutive_failures"])
	}
	e.SetNow(e.Now().Add(2 * webhook.ClaimLease))
	if n, errs := sweepAtOnce(e, 1); n != 0 || errs != nil {
		t.Fatalf("a recorded attempt was swept again: %d (%v)", n, errs)
	}
}

// TestClaimSweepsAtOnceWithFaults: five organisations' workers stop mid-send
// and lose their jobs; one endpoint is then deleted and one turned off.
// Rounds of four sweeps at once, the first with store calls failing
// (before, and after their effect), queue each stuck attempt of a live
// endpoint at least once and never twice in a round, and every worker
// that takes one sends it; the deleted and the disabled endpoints' claims
// are resolved without a send. In the end every live receiver has its
// event (sent twice: before the stop, and again), nothing is counted as a
// failure, and no sweep finds anything more.
func TestClaimSweepsAtOnceWithFaults(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 200)
	e, d := apitest.HookEnv(t, rc)
	type sub struct{ key, id, event string }
	var subs []sub
	for i := range 5 {
		org := e.Org(fmt.Sprintf("S%d", i))
		key := e.Key(org)
		id, _ := apitest.Subscribe(t, e, key, rc.Srv.URL, "matter.created")
		im := apitest.NewImporter(t, e, key)
		im.Matter(im.Client("company_id", im.Company(fmt.Sprintf("4%07d", i))), "")
		subs = append(subs, sub{key: key, id: id})
	}
	if _, err := d.Sweep(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	msgs, _ := e.Deliveries.Receive(context.Background(), 10, time.Second)
	if len(msgs) != len(subs) {
		t.Fatalf("%d jobs for %d endpoints", len(msgs), len(subs))
	}
	e.SetNow(time.Now())
	byEndpoint := map[string]string{}
	for _, m := range msgs {
		_ = e.Deliveries.Delete(context.Background(), m)
		var job webhook.Job
		if err := json.Unmarshal(m.Body, &job); err != nil {
			t.Fatal(err)
		}
		byEndpoint[job.EndpointID] = job.EventID
		stopMidSend(t, e, job)
	}
	for i := range subs {
		subs[i].event = byEndpoint[subs[i].id]
	}
	apitest.MustStatus(t, e.Do("DELETE", "/api/v1/webhooks/"+subs[3].id, subs[3].key, nil), 204)
	if r := e.Do("PATCH", "/api/v1/webhooks/"+subs[4].id, subs[4].key, strings.NewReader(`{"is_active":false}`)); r.Status != 200 {
		t.Fatalf("turn endpoint off: %d %s", r.Status, r.Raw)
	}
	sent := len(rc.Deliveries())
	resent := map[string]int{}
	for round := 0; ; round++ {
		if round == 6 {
			t.Fatalf("the sweeps do not settle: %v", resent)
		}
		e.SetNow(e.Now().Add(webhook.ClaimLease + time.Second))
		if round == 0 {
			e.Faults.Arm(apitest.FailBefore, 2, 9)
		}
		n, errs := sweepAtOnce(e, 4)
		if round == 0 {
			e.Faults.Arm(apitest.FailAfter, 3)
			n2, errs2 := sweepAtOnce(e, 4)
			n, errs = n+n2, append(errs, errs2...)
			e.Faults.Disarm()
		}
		jobs, _ := e.Deliveries.Receive(context.Background(), 10, time.Second)
		if len(jobs) != n {
			t.Fatalf("round %d: the sweeps said %d queued, the queue has %d", round, n, len(jobs))
		}
		seen := map[string]bool{}
		for _, m := range jobs {
			var job webhook.Job
			_ = json.Unmarshal(m.Body, &job)
			if seen[job.EventID] {
				t.Fatalf("round %d: the job of %s was queued twice", round, job.EventID)
			}
			seen[job.EventID] = true
			resent[job.EventID]++
			if err := e.Deliverer.Handle(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			_ = e.Deliveries.Delete(context.Background(), m)
		}
		if n == 0 && len(errs) == 0 {
			break
		}
	}
	for i, s := range subs {
		want := 1
		if i >= 3 {
			want = 0 // deleted, off: resolved, never sent again
		}
		if resent[s.event] != want {
			t.Errorf("endpoint %d: its job was queued again %d times, want %d", i, resent[s.event], want)
		}
		if i < 3 {
			ep := e.Get("/api/v1/webhooks/"+s.id, s.key).Body["data"].(map[string]any)
			log := e.Get("/api/v1/webhooks/"+s.id+"/deliveries", s.key).Data()
			if ep["consecutive_failures"] != 0.0 || len(log) != 1 || log[0]["succeeded"] != true {
				t.Errorf("endpoint %d: failures %v, log %v", i, ep["consecutive_failures"], log)
			}
		}
	}
	if got := len(rc.Deliveries()) - sent; got != 3 {
		t.Errorf("%d sends after the stops, want 3 (the live endpoints' attempts, again)", got)
	}
}

// TestCapacityOfADelivery holds a delivery attempt to its budget, as
// DynamoDB bills it (docs/cost-model.md): a first attempt that succeeds
// reads its endpoint, takes and gives back one of the endpoint's slots (2
// WRU, #40), reads its event (the job names it: 1 RRU, #40), claims (the
// sweep index's entry: 1 WRU) and records (its transaction, the index
// entry's removal among it): 10 WRU, 2 RRU; a failed attempt also queues
// the next and notes it; the last one failing (a failed delivery) counts
// it on the endpoint and reads whether that disables it; a claims sweep
// that finds nothing makes one Query per shard and writes nothing.
func TestCapacityOfADelivery(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs DynamoDB Local")
	}
	for _, c := range []struct {
		name     string
		status   int
		last     bool // the attempt is its series' last
		wru, rru float64
	}{
		{"a delivery that succeeds", 200, false, 10, 2},
		{"an attempt that fails, with attempts left", 500, false, 11, 2},
		{"a failed delivery (the last attempt fails)", 500, true, 12, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rc := apitest.NewReceiver(t, c.status)
			e, d := apitest.HookEnv(t, rc)
			if c.last {
				e.Deliverer.Schedule = []time.Duration{}
			}
			_, _, job := oneEvent(t, e, d, rc)
			e.Capacity.Reader = storetest.Plain(t, e.DB.Table).Client // transactions costed as AWS bills them
			e.Capacity.Reset()
			if err := handle(t, e, "m1", job); err != nil {
				t.Fatal(err)
			}
			got := e.Capacity.Take().Round()
			if got.WRU != c.wru || got.RRU != c.rru || got.ByIndex["GSI6"] != 3 {
				t.Errorf("%v WRU, %v RRU (%v); budget %v WRU, %v RRU, 3 of them the sweep index's", got.WRU, got.RRU, got.ByIndex, c.wru, c.rru)
			}
		})
	}
	t.Run("an empty claims sweep", func(t *testing.T) {
		t.Parallel()
		e, _ := apitest.HookEnv(t, apitest.NewReceiver(t, 200))
		e.Capacity.Reset()
		if n, err := e.Deliverer.SweepClaims(context.Background()); n != 0 || err != nil {
			t.Fatal(n, err)
		}
		if got := e.Capacity.Take().Round(); got.WRU != 0 || got.RRU > 16 || got.Calls != 32 {
			t.Errorf("%v WRU, %v RRU in %d calls; budget no write, a Query of each of the 32 shards, at most half a unit each", got.WRU, got.RRU, got.Calls)
		}
	})
}
