package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/webhook"
)

// notFiredLocally are the alarms of the local template no fault of the
// campaign fires, by their logical id's prefix, and why: none now (the
// release check's duration was the last). The list only shrinks.
var notFiredLocally = map[string]string{}

// firedWhenQuiet are alarms a fault of the campaign fires on a machine of
// its own but not reliably inside make test, which shares two cores with
// every other tier: a miss is logged, not an error. None now: the
// endpoint-disabled alarm was one while a delivery whose bookkeeping
// failed on a loaded machine came back only after the queue's 180 s
// visibility timeout (LOCALCLOUD_QUEUE_VISIBILITY makes it 30 s here).
var firedWhenQuiet = map[string]string{}

// firedElsewhere are the alarms of the local template whose threshold comes
// from the stage's settings, out of the campaign's reach with the local
// stage's, fired by a test that starts localcloud with other settings
// (and fails when they do not fire).
var firedElsewhere = map[string]string{
	"accountconcurrency":  "TestDevStageThrottlesAnswer429: a dozen invocations at once past 80% of accountConcurrency 10 (the local stage's 1,000: at most 10 processes a function here)",
	"apigatewaythrottles": "TestDevStageThrottlesAnswer429: two bursts past the dev stage's throttles (the local stage's are 10,000 a second)",
	"metaversion5xx":      "TestABadReleaseRollsBackAndAGoodOneGoesOut: a broken build of meta (it has no store: only a build answers 5xx)",
	"metaversionlatency":  "TestABadReleaseRollsBackAndAGoodOneGoesOut: a broken build of meta, slow (4.2 s) on its documentation files",
	"metaduration":        "TestABadReleaseRollsBackAndAGoodOneGoesOut: a broken build of meta, 4.2 s of its own work per documentation file (80% of 5 s is 4 s)",
}

// TestEveryAlarmIsFiredByAFault runs a fault campaign on one localcloud at
// LOCALCLOUD_TIME_SCALE=60 and prints the alarms of the local template no
// fault fired: releases whose pre-traffic hook hangs near its timeout in
// the background (the release check's duration), workers hanging near
// their timeouts in the background
// (the dispatcher's, enrichment's, delivery's and the synthetic check's
// duration; the queues' oldest message), every function crashing (its
// errors, its version's errors, each route's 5xx, the API's 5xx rate, the
// synthetic check, the queues' oldest message), throttled (its
// throttles), keys the API refuses (the 401 rate, each keyed version's
// 4xx) while a receiver is down (an endpoint disabled after 20 failed
// deliveries), the API's functions slow (each route's p99 latency, each
// version's) while one's table calls are throttled and another's fail and
// the dispatcher crashes under new events (DynamoDB's throttles and
// system errors, each version's 5xx, the stream's iterator age) whose
// sends the delivery queue then refuses (the outbox's dispatch failures,
// and its events parked), the table hanging for the API (each version's
// 5xx and latency, each function's duration near its timeout, the reports
// route's 15 s), releases whose pre-traffic hook crashes or is throttled
// (the release check's errors and throttles), and a message in each
// dead-letter queue. It waits, with a deadline, for the alarms of the
// faults still running. An alarm left unfired must be in notFiredLocally
// (empty now), with its reason; one that is there and fires fails too
// (the list only shrinks).
func TestEveryAlarmIsFiredByAFault(t *testing.T) {
	t.Parallel() // one stack of its own; it overlaps the release rehearsal
	// One retry, 200 ms after the first attempt: a failed delivery is an
	// event whose attempts are all spent (#40), and the receiver-down
	// phase needs 20, so 42 deliveries rather than the spec's schedule's
	// 105, which a loaded machine's DynamoDB Local took minutes over (each
	// 3 to 14 s; slots given back late lapse after their claim lease).
	// Fifty deliveries in flight to one endpoint, not ten: the endpoint's
	// budget (its own tests') is not what this campaign is about.
	// A delivery whose bookkeeping failed (DynamoDB Local over
	// webhook.BookkeepingTime on a loaded machine) comes back 30 s later,
	// not the template's 180 s (LOCALCLOUD_QUEUE_VISIBILITY, localcloud's
	// only: its functions' timeout), and its claim has lapsed by then (a
	// 20 s lease): the queue refuses the dispatcher's sends in the slow
	// phase, so the claims' sweep cannot send it again sooner.
	c := start(t, "LOCALCLOUD_TIME_SCALE=60", "WEBHOOK_RETRY_SCHEDULE=200ms", "WEBHOOK_ENDPOINT_CONCURRENCY=50",
		"LOCALCLOUD_QUEUE_VISIBILITY=30s", "WEBHOOK_CLAIM_LEASE=20s")
	// A quiet stack first: no alarm in ALARM. (A new stack's synthetic
	// check alarm is: its missing data counts as failing until the first
	// check runs.) Only the fires from here on count as the campaign's.
	before := map[string]float64{}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		var inAlarm []string
		for id, a := range callControl(t, c, "GET", "/localcloud/alarms", nil) {
			before[id] = a.(map[string]any)["fired"].(float64)
			if a.(map[string]any)["state"] == "ALARM" {
				inAlarm = append(inAlarm, id)
			}
		}
		if len(inAlarm) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alarms in ALARM with no fault, a minute after the start: %v", inAlarm)
		}
	}
	tpl, err := stack.Load(c.template)
	if err != nil {
		t.Fatal(err)
	}
	bootstrap, timeout := map[string]string{}, map[string]time.Duration{}
	for _, f := range tpl.Functions {
		bootstrap[f.Name], timeout[f.Name] = f.Bootstrap, f.Timeout
	}
	campaign := time.Now()
	fault := func(body map[string]any) { callControl(t, c, "POST", "/localcloud/faults", body) }
	// The release check hanging: four releases of the workers, 1.5 s
	// apart, whose pre-traffic hook (the release check) hangs 2 s past 80%
	// of its 120 s timeout, in real time, in the background. The hang holds
	// an invocation's end, not its work: each hook reports Succeeded at
	// once and its release (all at once) is over in a second or two, so
	// the workers' version alarms watch the new version, which gets their
	// traffic and, from here on, their faults, through the phases that
	// fire them. The hooks end 98 s after they started, in four different
	// seconds (three of five periods over the duration alarm's 96 s), near
	// the campaign's end. The releases are over before the workers hang
	// (their check invokes the new version, which would hang too).
	began := time.Now()
	fault(map[string]any{"function": "releasecheck", "fault": "hang", "delay_ms": (timeout["releasecheck"]*8/10 + 2*time.Second).Milliseconds()})
	var hookReleases []string
	for i, fn := range []string{"delivery", "dispatcher", "enrichment", "synthetic"} {
		if i > 0 {
			time.Sleep(1500 * time.Millisecond)
		}
		r := callControl(t, c, "POST", "/localcloud/releases", map[string]string{"function": fn, "bootstrap": bootstrap[fn]})
		hookReleases = append(hookReleases, fn+" "+fmt.Sprint(r["deployment_id"]))
	}
	for _, r := range hookReleases {
		fn, id, _ := strings.Cut(r, " ")
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			st := callControl(t, c, "GET", "/localcloud/releases/"+id, nil)
			if st["status"] == "InProgress" && time.Now().Before(deadline) {
				continue
			}
			if st["status"] != "Succeeded" {
				t.Errorf("the release of %s whose hook hangs: %v (%v)", fn, st["status"], st["reason"])
			}
			break
		}
	}
	fault(map[string]any{"function": "releasecheck", "fault": "none"})
	t.Logf("phase releases whose hook hangs: %v", time.Since(began).Round(time.Second))
	all := []string{"matters", "parties", "timeentries", "invoices", "documents", "reports", "meta", "webhooks", "dispatcher", "enrichment", "delivery", "synthetic"}
	// The API's functions that call the table (meta serves from its binary).
	store := []string{routes.Matters, routes.Parties, routes.TimeEntries, routes.Invoices, routes.Documents, routes.Reports, routes.Webhooks}
	sample := regexp.MustCompile(`\{[a-z_]+\}`)
	pathOf := func(rt routes.Route) string {
		if rt.Path == "/reports/{type}" {
			return "/reports/wip"
		}
		return sample.ReplaceAllString(rt.Path, "5eed0000-0000-4000-8000-000000000001")
	}
	client := &http.Client{Timeout: 40 * time.Second}
	send := func(method, path, key, body string, headers ...string) (int, []byte) {
		req, _ := http.NewRequest(method, c.Base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	// hit sends requests from workers for a while: each worker its own
	// route (perRoute), or every family's routes in turn (each family, and
	// so each function, as much traffic as another).
	families := routes.Families()
	hit := func(key string, workers int, within time.Duration, perRoute bool, skip string) {
		var wg sync.WaitGroup
		until := time.Now().Add(within)
		for w := range workers {
			wg.Go(func() {
				for i := w; time.Now().Before(until); i++ {
					fam := routes.Family(families[i%len(families)])
					rt := fam[(i/len(families))%len(fam)]
					if perRoute {
						rt = routes.Table[w%len(routes.Table)]
					}
					if rt.Family == skip {
						if perRoute {
							return
						}
						continue
					}
					send(rt.Method, pathOf(rt), key, "{}")
				}
			})
		}
		wg.Wait()
	}
	// createMatters creates n matters for the demo organisation at once
	// (each raises matter.created: an outbox event on the table's stream).
	_, body := send("GET", "/clients?per_page=1", c.DemoKey, "")
	var clients struct {
		Data []struct{ ID string } `json:"data"`
	}
	if json.Unmarshal(body, &clients) != nil || len(clients.Data) == 0 {
		t.Fatalf("no demo client: %s", body)
	}
	createMatters := func(n int) int {
		var created atomic.Int64
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if code, _ := send("POST", "/matters", c.DemoKey, `{"client_id":"`+clients.Data[0].ID+`"}`,
					"Idempotency-Key", fmt.Sprintf("campaign-%d-%d", time.Now().UnixNano(), i)); code == 201 {
					created.Add(1)
				}
			})
		}
		wg.Wait()
		return int(created.Load())
	}
	phase := func(name, kind string, delay int, fnsToFault []string, key string, workers int, within time.Duration, skip string, alongside ...func()) {
		began := time.Now()
		for _, f := range fnsToFault {
			fault(map[string]any{"function": f, "fault": kind, "delay_ms": delay})
		}
		stopQueues := make(chan struct{})
		var qwg sync.WaitGroup
		qwg.Go(func() { // the workers get invoked, every second
			for {
				for _, q := range []string{"enrichmentqueue", "deliveryqueue"} {
					fault(map[string]any{"queue": q})
				}
				select {
				case <-stopQueues:
					return
				case <-time.After(time.Second):
				}
			}
		})
		for _, f := range alongside {
			qwg.Go(f)
		}
		hit(key, workers, within, kind == "slow", skip)
		close(stopQueues)
		qwg.Wait()
		for _, f := range fnsToFault {
			fault(map[string]any{"function": f, "fault": "none"})
		}
		t.Logf("phase %s: %v", name, time.Since(began).Round(time.Second))
	}
	for _, q := range []string{"enrichmentdlq", "deliverydlq", "dispatchfailures"} {
		fault(map[string]any{"queue": q})
	}
	// Workers hanging near their timeouts: the invocations that start in
	// the next 4 s (the schedule's every second, one per message sent
	// every 1.2 s) hang 2 s past 80% of their function's timeout (the
	// duration alarms' threshold), in the background: the dispatcher's
	// sweeps 50 s, the synthetic checks 42 s, enrichment's and
	// delivery's jobs 26 s (their messages wait meanwhile). Four of each
	// end in four different seconds, three of five one-second periods.
	// Lifted after 4 s: the rest of the campaign runs beside them (four
	// of enrichment's five processes are taken for 26 s).
	began = time.Now()
	hanging := []string{"dispatcher", "synthetic", "enrichment", "delivery"}
	for _, f := range hanging {
		fault(map[string]any{"function": f, "fault": "hang", "delay_ms": (timeout[f]*8/10 + 2*time.Second).Milliseconds()})
	}
	for i := range 4 {
		if i > 0 {
			time.Sleep(1200 * time.Millisecond)
		}
		for _, q := range []string{"enrichmentqueue", "deliveryqueue"} {
			fault(map[string]any{"queue": q})
		}
	}
	time.Sleep(600 * time.Millisecond)
	for _, f := range hanging {
		fault(map[string]any{"function": f, "fault": "none"})
	}
	t.Logf("phase workers hanging near their timeouts: %v", time.Since(began).Round(time.Second))
	phase("every function crashing", "crash", 0, all, c.DemoKey, 6, 14*time.Second, "")
	phase("every function throttled", "throttle", 0, all, c.DemoKey, 6, 14*time.Second, "")
	// Releases whose pre-traffic hook (the release check) crashes, then
	// is throttled: CodeDeploy invokes it asynchronously (Lambda retries
	// it a minute and two minutes later), and the release waits for a
	// status that does not come. Each release is of another function
	// (one deployment per group at a time), one whose release alarms are
	// not in ALARM in this phase (a deployment would stop at its start).
	releaseCheckFails := func() {
		for i, fn := range []string{"meta", "synthetic", "enrichment", "dispatcher"} {
			switch i {
			case 0:
				fault(map[string]any{"function": "releasecheck", "fault": "crash"})
			case 2:
				fault(map[string]any{"function": "releasecheck", "fault": "throttle"})
			}
			callControl(t, c, "POST", "/localcloud/releases", map[string]string{"function": fn, "bootstrap": bootstrap[fn]})
			time.Sleep(4500 * time.Millisecond) // the hook's retries: a (scaled) minute, then two
		}
		fault(map[string]any{"function": "releasecheck", "fault": "none"})
	}
	// A receiver down: an endpoint at a closed port gets 21 events, both
	// attempts refused, and is disabled after 20 (the API's
	// functions answer the demo key meanwhile; the other requests' keys
	// are refused).
	// Eight warm processes of each function the table will hang for: a
	// process that starts while the table hangs fails its cold start (the
	// store's 5 s startup limit), as on AWS, and runs no request.
	gets := func(fam string) []routes.Route {
		var out []routes.Route
		for _, rt := range routes.Family(fam) {
			if rt.Method == "GET" {
				out = append(out, rt)
			}
		}
		return out
	}
	warm := func() {
		var wg sync.WaitGroup
		for _, fam := range store {
			for i := range 8 {
				wg.Go(func() { send("GET", pathOf(gets(fam)[i%len(gets(fam))]), c.DemoKey, "") })
			}
		}
		wg.Wait()
	}
	// subscribe subscribes the demo organisation's endpoint at url to
	// matter.created. A 5xx says retry (a 503's Retry-After; a 500 when the
	// function ran out of time on a loaded engine): the phase's faults and
	// releases run beside it, and, as an integrator's client would, it
	// tries again, with the same Idempotency-Key.
	subscribe := func(url, what string) string {
		code, b := 0, []byte(nil)
		key := fmt.Sprintf("campaign-subscribe-%d", time.Now().UnixNano())
		for try := 0; try < 10 && code != 201; try++ {
			if try > 0 {
				time.Sleep(2 * time.Second)
			}
			code, b = send("POST", "/webhooks", c.DemoKey, `{"url":"`+url+`","event_types":["matter.created"]}`, "Idempotency-Key", key)
			if code != 0 && code < 500 && code != 201 {
				break
			}
		}
		var ep struct {
			Data struct{ ID string }
		}
		if code != 201 || json.Unmarshal(b, &ep) != nil || ep.Data.ID == "" {
			t.Errorf("subscribe %s: %d %s", what, code, b)
		}
		return ep.Data.ID
	}
	var deadEndpoint atomic.Value // the id of the endpoint whose receiver is down
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer live.Close()
	// Twelve workers: each keyed version's 4xx alarm wants ten requests a
	// (scaled) minute, a second here, in 2 of 3; six workers on a machine
	// at load 29 sent matters 7 to 21 a second, ten in one second of three.
	phase("keys the API refuses, a receiver down, release checks failing", "", 0, nil, "pa_test_00000000000000000000000000000000_unknown", 12, 14*time.Second, "", releaseCheckFails, warm, func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Error(err)
			return
		}
		dead := ln.Addr().String()
		ln.Close()
		if id := subscribe("http://"+dead+"/hooks", "the receiver that is down"); id != "" {
			deadEndpoint.Store(id)
			if n := createMatters(webhook.DisableAfter + 1); n < webhook.DisableAfter {
				t.Errorf("%d matters created for the receiver that is down", n)
			}
		}
		// A receiver that is up, subscribed to the same events: the slow
		// phase's events have an endpoint to go to when the one that is
		// down has been disabled.
		subscribe(live.URL+"/hooks", "the receiver that is up")
	})
	// A loaded machine can answer too few of the refused keys' requests
	// (DynamoDB Local stalled, the API answered next to nothing for 10 s
	// of the phase at load 25): the refused keys go on, 14 s at a time
	// (twice at most), until every keyed version's 4xx alarm and the 401
	// rate's have fired.
	refusedNotFired := func() []string {
		var missing []string
		for id, a := range callControl(t, c, "GET", "/localcloud/alarms", nil) {
			l := strings.ToLower(id)
			if (strings.Contains(l, "version4xx") || strings.Contains(l, "api401rate")) && a.(map[string]any)["fired"].(float64) == before[id] &&
				reasonFor(firedElsewhere, id) == "" {
				missing = append(missing, id)
			}
		}
		sort.Strings(missing)
		return missing
	}
	for range 2 {
		var missing []string
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(500 * time.Millisecond) { // the last periods' evaluations
			if missing = refusedNotFired(); len(missing) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(missing) == 0 {
			break
		}
		began := time.Now()
		hit("pa_test_00000000000000000000000000000000_unknown", 12, 14*time.Second, false, "")
		t.Logf("phase keys the API refuses, again (not fired: %v): %v", missing, time.Since(began).Round(time.Second))
	}
	// The table hangs for reports from here to the campaign's end: eight
	// requests, two every 1.5 s, each answered 503 at its deadline (24.5 s,
	// over its route's 15 s and 80% of its timeout): two 5xx in each of
	// four seconds (the version's 5xx alarm wants 2 in 2 of 3), four
	// seconds 1.5 s apart (3 of 5 for the latency and duration alarms,
	// even when a loaded machine starts a pair late).
	fault(map[string]any{"function": routes.Reports, "store": "slow", "delay_ms": 120_000})
	var reportsHung sync.WaitGroup
	for i := range 8 {
		reportsHung.Go(func() {
			time.Sleep(time.Duration(i/2) * 1500 * time.Millisecond)
			send("GET", "/reports/wip", c.DemoKey, "")
		})
	}
	// Each route's p99 over 1 s in 3 of 5 one-second periods: about two
	// requests a second per route, for long enough on a loaded machine.
	// Meanwhile documents' table calls are throttled and webhooks' fail,
	// and the dispatcher crashes under 12 new events (the stream's
	// batches fail, are split and retried, and the records wait). The
	// delivery queue refuses the dispatcher's sends from here to the
	// campaign's end (its policy denies them): once the dispatcher runs
	// again, the 12 events fail every sweep (each scaled minute) and are
	// parked after MaxDispatchAttempts.
	// First, the receiver that is down has been sent (tried) 20 events:
	// they have left the outbox, which the refusal and the crash would
	// otherwise keep them in (a loaded machine dispatches them late).
	waited := time.Now()
	if id, _ := deadEndpoint.Load().(string); id != "" {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
			_, b := send("GET", "/webhooks/"+id+"/deliveries?per_page=100", c.DemoKey, "")
			var page struct {
				Data []struct {
					EventID string `json:"event_id"`
				}
			}
			_ = json.Unmarshal(b, &page)
			events := map[string]bool{}
			for _, a := range page.Data {
				events[a.EventID] = true
			}
			if len(events) >= webhook.DisableAfter || time.Now().After(deadline) {
				t.Logf("the receiver that is down was tried for %d events (waited %v)", len(events), time.Since(waited).Round(time.Second))
				break
			}
		}
	}
	fault(map[string]any{"queue": "deliveryqueue", "fault": "refuse-sends", "function": "dispatcher"})
	fault(map[string]any{"function": routes.Documents, "store": "throttle"})
	fault(map[string]any{"function": routes.Webhooks, "store": "fail"})
	fault(map[string]any{"function": "dispatcher", "fault": "crash"})
	phase("the API's functions slow (1.1 s), documents' table throttled, webhooks' failing, the dispatcher crashing", "slow", 1100, all[:8], c.DemoKey, 3*len(routes.Table), 16*time.Second, routes.Reports,
		func() { createMatters(12) })
	for _, f := range []string{routes.Documents, routes.Webhooks} {
		fault(map[string]any{"function": f, "store": "none"})
	}
	fault(map[string]any{"function": "dispatcher", "fault": "none"})
	// The table hangs for the API: each function's requests, two every
	// 1.5 s (eight: its warm processes), end at their deadline (9.5 s: 80%
	// of a 10 s timeout is 8), 503, as the reports' above.
	began = time.Now()
	var hung sync.WaitGroup
	for _, fam := range store {
		if fam == routes.Reports {
			continue // hung since the slow phase
		}
		fault(map[string]any{"function": fam, "store": "slow", "delay_ms": 120_000})
		for i := range 8 {
			hung.Go(func() {
				time.Sleep(time.Duration(i/2) * 1500 * time.Millisecond)
				send("GET", pathOf(gets(fam)[i%len(gets(fam))]), c.DemoKey, "")
			})
		}
	}
	hung.Wait()
	reportsHung.Wait()
	for _, fam := range store {
		fault(map[string]any{"function": fam, "store": "none"})
	}
	t.Logf("phase the table hanging for the API: %v", time.Since(began).Round(time.Second))
	// The last periods' evaluations, and the alarms of faults that run on
	// in the background (the workers' hangs, the sends refused until
	// their events are parked; a delivery whose bookkeeping failed, back
	// 30 s later): a loaded machine takes longer, so the campaign waits
	// for every alarm it must fire, up to two minutes more.
	began = time.Now()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		var waiting []string
		for id, a := range callControl(t, c, "GET", "/localcloud/alarms", nil) {
			if a.(map[string]any)["fired"].(float64) == before[id] && reasonFor(notFiredLocally, id) == "" && reasonFor(firedElsewhere, id) == "" &&
				reasonFor(firedWhenQuiet, id) == "" {
				waiting = append(waiting, id)
			}
		}
		if len(waiting) == 0 || time.Now().After(deadline) {
			sort.Strings(waiting)
			t.Logf("waited %v for the last alarms (still not fired: %v)", time.Since(began).Round(time.Second), waiting)
			break
		}
	}
	fault(map[string]any{"queue": "deliveryqueue", "fault": "none"})
	t.Logf("the campaign: %v", time.Since(campaign).Round(time.Second))
	long := map[string]int{}
	for _, l := range c.log() {
		if m := regexp.MustCompile(`REPORT RequestId: \S+\tFunction: ([a-z]+)\tDuration: (\d+)`).FindStringSubmatch(l); m != nil && len(m[2]) >= 4 {
			long[m[1]+" "+m[2][:len(m[2])-3]+"s"]++
		}
	}
	t.Logf("invocations of a second or more, by function and second: %v", long)
	// When each alarm went into ALARM, in seconds into the campaign (which
	// phase's fault fired it).
	fires := map[string][]int{}
	for _, l := range c.log() {
		var e struct {
			Time           time.Time
			Msg, Alarm, To string
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Msg == "cloudwatch alarm" && e.To == "ALARM" && e.Time.After(campaign) {
			fires[e.Alarm] = append(fires[e.Alarm], int(e.Time.Sub(campaign).Seconds()))
		}
	}
	t.Logf("into ALARM, seconds into the campaign: %v", fires)

	alarms := callControl(t, c, "GET", "/localcloud/alarms", nil)
	var notFired []string
	fired := 0
	for id, a := range alarms {
		if a.(map[string]any)["fired"].(float64) > before[id] {
			fired++
			if reasonFor(notFiredLocally, id) != "" {
				t.Errorf("%s fired, but notFiredLocally says it cannot: shrink the list", id)
			}
			continue
		}
		notFired = append(notFired, id)
	}
	sort.Strings(notFired)
	var unexplained, elsewhere []string
	for _, id := range notFired {
		if quiet := reasonFor(firedWhenQuiet, id); quiet != "" {
			elsewhere = append(elsewhere, id)
			t.Logf("not fired this run (it fires on a quiet machine): %s (%s)", id, quiet)
			continue
		}
		if by := reasonFor(firedElsewhere, id); by != "" {
			elsewhere = append(elsewhere, id)
			t.Logf("fired by another test's stack: %s (%s)", id, by)
			continue
		}
		why := reasonFor(notFiredLocally, id)
		if why == "" {
			unexplained = append(unexplained, id)
			why = "NOT EXPLAINED"
		}
		t.Logf("not fired by any fault: %s (%s)", id, why)
	}
	t.Logf("%d alarms in the local template: %d fired by a fault here, %d by another test's, %d not (%d of them unexplained)", len(alarms), fired, len(elsewhere), len(notFired)-len(elsewhere), len(unexplained))
	if len(unexplained) > 0 {
		t.Errorf("alarms no fault fired and notFiredLocally does not explain: %v", unexplained)
	}
	if t.Failed() { // localcloud's log, to see why
		if f, err := os.CreateTemp("", "alarm-campaign-*.log"); err == nil {
			_, _ = f.WriteString(strings.Join(c.log(), "\n"))
			f.Close()
			t.Logf("localcloud's log: %s", f.Name())
		}
	}
}

// reasonFor is the reason list gives for the alarm whose logical id is id
// (an entry whose prefix the lower-cased id contains), or "".
func reasonFor(list map[string]string, id string) string {
	for prefix, reason := range list {
		if strings.Contains(strings.ToLower(id), prefix) {
			return reason
		}
	}
	return ""
}
