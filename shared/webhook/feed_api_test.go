package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhook/signature"
)

// feedPage is one GET /events answer.
type feedPage struct {
	events    []map[string]any
	hasMore   bool
	nextAfter int64
	next      string
}

func readFeed(t *testing.T, e *apitest.Env, key, query string) feedPage {
	t.Helper()
	r := e.Get("/api/v1/events"+query, key)
	apitest.MustStatus(t, r, 200)
	meta := r.Body["meta"].(map[string]any)
	p := feedPage{events: r.Data(), hasMore: meta["has_more"] == true, nextAfter: int64(meta["next_after"].(float64)), next: r.Next()}
	if int(meta["count"].(float64)) != len(p.events) || p.hasMore != (p.next != "") {
		t.Fatalf("GET /events%s: meta %v, %d events, links.next %q", query, meta, len(p.events), p.next)
	}
	return p
}

func seqOf(ev map[string]any) int64 { return int64(ev["sequence"].(float64)) }

// isFeedEvent reports whether a transaction's item puts an event of the feed.
func isFeedEvent(it ddbtypes.TransactWriteItem) bool {
	if it.Put == nil {
		return false
	}
	sk, _ := it.Put.Item[store.AttrSK].(*ddbtypes.AttributeValueMemberS)
	return sk != nil && strings.HasPrefix(sk.Value, "EVT#")
}

// TestTheFeedListsEveryEventInSequence: GET /events lists the
// organisation's events oldest first, each as it is delivered, whatever
// its endpoints subscribe to; pages by after (links.next and next_after
// agree), filters by type, keeps to its organisation and scope, refuses
// bad parameters by name, and forgets events past their retention.
func TestTheFeedListsEveryEventInSequence(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 200)
	e, d := apitest.HookEnv(t, rc)
	org := e.Org("A")
	key := e.Key(org)
	apitest.Subscribe(t, e, key, rc.Srv.URL, "matter.created") // not time_entry.created: the feed has them anyway
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("21212121"))
	want := []string{"company.created", "client.created"}
	for i := range 2 {
		m := im.Matter(cl, `,"hourly_rate":100000`)["id"].(string)
		for j := range 2 {
			im.Post("/api/v1/time-entries", fmt.Sprintf(`{"matter_id":%q,"date":"2025-03-0%d","duration_minutes":%d}`, m, j+1, 10*i+j+1))
		}
		want = append(want, "matter.created", "time_entry.created", "time_entry.created")
	}
	other := e.Key(e.Org("B"))
	(apitest.NewImporter(t, e, other)).Client("company_id", (apitest.NewImporter(t, e, other)).Company("21212121"))

	all := readFeed(t, e, key, "")
	var types []string
	for i, ev := range all.events {
		types = append(types, ev["event"].(string))
		if ev["organization_id"] != org || (i > 0 && seqOf(ev) <= seqOf(all.events[i-1])) {
			t.Fatalf("event %d of the feed: %v", i, ev)
		}
	}
	if !slices.Equal(types, want) || all.hasMore || all.nextAfter != seqOf(all.events[len(all.events)-1]) {
		t.Fatalf("feed %v (has_more %v, next_after %d), want %v", types, all.hasMore, all.nextAfter, want)
	}

	// Each as delivered: the same id, envelope and data, to the byte's meaning.
	apitest.DeliverAll(t, e, d, 1)
	delivered := map[string]map[string]any{}
	for _, dl := range rc.Deliveries() {
		var env map[string]any
		if err := json.Unmarshal(dl.Body, &env); err != nil {
			t.Fatal(err)
		}
		delivered[env["id"].(string)] = env
		if h := dl.Header.Get("Service-Event-Sequence"); h != strconv.FormatInt(seqOf(env), 10) {
			t.Fatalf("Service-Event-Sequence %q, body %v", h, env["sequence"])
		}
	}
	n := 0
	for _, ev := range all.events {
		if got, ok := delivered[ev["id"].(string)]; ok {
			n++
			if !reflect.DeepEqual(got, ev) {
				t.Fatalf("delivered %v\nfeed      %v", got, ev)
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d of the feed's events were delivered, want the 2 matter.created", n)
	}

	// Pages of two, by links.next and by next_after: the same events.
	var byLink, byAfter []string
	for q := "?per_page=2"; q != ""; {
		p := readFeed(t, e, key, q)
		for _, ev := range p.events {
			byLink = append(byLink, ev["id"].(string))
		}
		q = ""
		if p.next != "" {
			u, _ := url.Parse(p.next)
			q = "?" + u.RawQuery
		}
	}
	for after := int64(0); ; {
		p := readFeed(t, e, key, fmt.Sprintf("?per_page=2&after=%d", after))
		for _, ev := range p.events {
			byAfter = append(byAfter, ev["id"].(string))
		}
		if !p.hasMore {
			break
		}
		after = p.nextAfter
	}
	var ids []string
	for _, ev := range all.events {
		ids = append(ids, ev["id"].(string))
	}
	if !slices.Equal(byLink, ids) || !slices.Equal(byAfter, ids) {
		t.Fatalf("paged by links %v, by after %v; want %v", byLink, byAfter, ids)
	}
	if p := readFeed(t, e, key, "?event_types=time_entry.created,time_entry.created"); len(p.events) != 4 {
		t.Fatalf("filtered: %d events", len(p.events))
	}
	if p := readFeed(t, e, key, "?event_types=invoice.paid,matter.created&per_page=1"); len(p.events) != 1 || p.events[0]["event"] != "matter.created" ||
		!strings.Contains(p.next, "event_types=invoice.paid%2Cmatter.created") {
		t.Fatalf("filtered page: %v, next %q", p.events, p.next)
	}
	if p := readFeed(t, e, key, fmt.Sprintf("?after=%d", all.nextAfter)); len(p.events) != 0 || p.nextAfter != all.nextAfter {
		t.Fatalf("after the last: %v, next_after %d", p.events, p.nextAfter)
	}
	// The other organisation's feed holds its own company and client only.
	if p := readFeed(t, e, other, ""); len(p.events) != 2 || slices.ContainsFunc(p.events, func(ev map[string]any) bool { return ev["organization_id"] == org }) {
		t.Fatalf("another organisation's feed lists %v", p.events)
	}
	for q, field := range map[string]string{"?after=-1": "after", "?after=x": "after", "?after=1.5": "after", "?after=1&after=2": "after",
		"?event_types=matter.deleted": "event_types", "?event_types=webhook.test": "event_types", "?per_page=101": "per_page"} {
		t.Run(q, func(t *testing.T) {
			if r := e.For(t).Get("/api/v1/events"+q, key); r.Status != 422 || r.Body["field"] != field {
				t.Errorf("GET /events%s: %d %s", q, r.Status, r.Raw)
			}
		})
	}
	if r := e.Get("/api/v1/events", e.Key(org, "matters:read")); r.Status != 403 || r.Body["required_scope"] != "webhooks:manage" {
		t.Fatalf("without webhooks:manage: %d %s", r.Status, r.Raw)
	}
	// Past the retention the events are gone from the feed.
	e.SetNow(time.Now().Add(outbox.DefaultFeedRetention + time.Minute))
	if p := readFeed(t, e, key, ""); len(p.events) != 0 {
		t.Fatalf("31 days on, the feed still lists %d events", len(p.events))
	}
}

// TestAFeedReaderMissesNothingWhileEventsAreWritten: per organisation,
// writers create time entries (some refused, some replayed: neither
// raises an event) while a reader pages the feed by after with small
// pages; when the writers have stopped and the settle time has passed,
// each reader has read every event its organisation's partition holds,
// once each, in increasing sequence. The settle time is the sequence
// window (store.SequenceWindow): a commit lands within it of its sequence
// or fails, so on one clock a reader served only sequences older than it
// misses none (the feed's rule; its default is twice that, for clocks
// apart). A shorter settle asserted more than the feed promises: on a
// loaded machine a commit took longer than the 2 s the test gave it and
// its event fell behind the reader.
func TestAFeedReaderMissesNothingWhileEventsAreWritten(t *testing.T) {
	t.Parallel()
	settle := store.SequenceWindow
	e := apitest.New(t, apitest.Options{RateLimit: 100000, FeedSettle: settle})
	type tenant struct {
		org, key, matter string
		created          atomic.Int64
	}
	tenants := make([]*tenant, 3)
	for i := range tenants {
		tn := &tenant{org: e.Org(fmt.Sprintf("T%d", i))}
		tn.key = e.Key(tn.org)
		im := apitest.NewImporter(t, e, tn.key)
		tn.matter = im.Matter(im.Client("company_id", im.Company(fmt.Sprintf("4040404%d", i))), `,"hourly_rate":100000`)["id"].(string)
		tenants[i] = tn
	}
	// Some commits are slow (a network's hiccup): their events' sequences
	// were taken before, so events committed after them are numbered
	// after them. A reader must not move past a slow one that is not
	// there yet (with no settle time this test misses them).
	var txs atomic.Int64
	e.Faults.Delay(func(input any) time.Duration {
		if tx, ok := input.(*dynamodb.TransactWriteItemsInput); ok && slices.ContainsFunc(tx.TransactItems, isFeedEvent) && txs.Add(1)%3 == 0 {
			return 300 * time.Millisecond
		}
		return 0
	})
	start := time.Now()
	// Readers read for 3 s while writers still write. Two writers an
	// organisation (there were four, for 4 s: with readers polling every
	// 50 ms the test sent the engine 3,500 calls, the second most of any
	// test): each reader still pages between commits, slow ones among
	// them.
	writeFor := settle + 3*time.Second
	var writers, readers sync.WaitGroup
	var stopped atomic.Int64 // unix micros when the last writer stopped
	for _, tn := range tenants {
		for w := range 2 {
			writers.Go(func() {
				for i := 0; time.Since(start) < writeFor; i++ {
					body := fmt.Sprintf(`{"matter_id":%q,"date":"2025-04-01","duration_minutes":%d}`, tn.matter, 1+i%60)
					if i%4 == 3 {
						body = fmt.Sprintf(`{"matter_id":%q,"date":"2025-04-01","duration_minutes":0}`, tn.matter) // refused
					}
					key := fmt.Sprintf("w%d-%d", w, i)
					r := e.Post("/api/v1/time-entries", tn.key, key, body)
					switch {
					case r.Status == 201:
						tn.created.Add(1)
						if i%5 == 0 { // a replay writes no event
							apitest.MustStatus(t, e.Post("/api/v1/time-entries", tn.key, key, body), 200)
						}
					case r.Status != 422:
						t.Errorf("create: %d %s", r.Status, r.Raw)
						return
					}
				}
			})
		}
	}
	got := make([][]map[string]any, len(tenants))
	for i, tn := range tenants {
		readers.Go(func() {
			var after int64
			for {
				p := readFeed(t, e, tn.key, fmt.Sprintf("?per_page=7&after=%d", after))
				got[i] = append(got[i], p.events...)
				if p.nextAfter < after {
					t.Errorf("next_after went back from %d to %d", after, p.nextAfter)
					return
				}
				after = p.nextAfter
				if s := stopped.Load(); s != 0 && !p.hasMore && (after >= s || time.Since(time.UnixMicro(s)) > settle+2*time.Second) {
					return // read up to past the last write (or given up: the check below says what was missed)
				}
				if !p.hasMore { // caught up: as a feed reader polls (every 50 ms, this test sent the engine 1,800 of its 3,500 calls)
					time.Sleep(200 * time.Millisecond)
				}
			}
		})
	}
	writers.Wait()
	stopped.Store(time.Now().UnixMicro())
	readers.Wait()
	for i, tn := range tenants {
		seen := map[string]bool{}
		for j, ev := range got[i] {
			if seen[ev["id"].(string)] || (j > 0 && seqOf(ev) <= seqOf(got[i][j-1])) || ev["organization_id"] != tn.org {
				t.Fatalf("tenant %d: event %d (%v) repeated, out of sequence or another organisation's", i, j, ev)
			}
			seen[ev["id"].(string)] = true
		}
		// Every event of the partition, as the store holds it.
		items, _, err := store.QueryInto[outbox.Event](context.Background(), e.DB, store.ListQuery{PK: store.OrgPK(tn.org), SKPrefix: "EVT#", Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		var missed []string
		for _, it := range items {
			if !seen[it.ID] {
				missed = append(missed, it.ID)
			}
		}
		// The company, client and matter made first (created, and each its
		// event), and one time_entry.created per 201.
		if len(missed) > 0 || len(items) != len(got[i]) || int64(len(items)) != tn.created.Load()+3 {
			t.Fatalf("tenant %d: read %d events, the store holds %d, %d created; missed %v", i, len(got[i]), len(items), tn.created.Load(), missed)
		}
		t.Logf("tenant %d: %d events read in order while they were written", i, len(got[i]))
	}
}

// TestReplayQueuesAWindowAgain: a replay queues the feed's events of a
// window to an endpoint as new deliveries of the same events (the same
// bodies, marked in the delivery log and by Service-Replay-Id), one replay
// per endpoint at a time (two at once: one 202, one 409), bounded (a
// truncated replay says where to go on, and going on covers the rest
// exactly once), and refuses what it cannot do by field.
func TestReplayQueuesAWindowAgain(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 200)
	e, d := apitest.HookEnv(t, rc)
	org := e.Org("A")
	key := e.Key(org)
	id, _ := apitest.Subscribe(t, e, key, rc.Srv.URL, "matter.created", "time_entry.created")
	im := apitest.NewImporter(t, e, key)
	m := im.Matter(im.Client("company_id", im.Company("51515151")), `,"hourly_rate":100000`)["id"].(string)
	for i := range 3 {
		im.Post("/api/v1/time-entries", fmt.Sprintf(`{"matter_id":%q,"date":"2025-03-01","duration_minutes":%d}`, m, i+1))
	}
	apitest.DeliverAll(t, e, d, 1)
	first := map[string]string{} // event id -> body
	for _, dl := range rc.Deliveries() {
		first[dl.Header.Get("Service-Event-Id")] = string(dl.Body)
	}
	if len(first) != 4 {
		t.Fatalf("%d events delivered, want 4", len(first))
	}
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	replay := func(body string) apitest.Response {
		return e.Do("POST", "/api/v1/webhooks/"+id+"/replay", key, strings.NewReader(body))
	}

	// Two at once: one holds the endpoint, the other is told to wait.
	var rs [2]apitest.Response
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() { rs[i] = replay(`{"since":"` + since + `"}`) })
	}
	wg.Wait()
	slices.SortFunc(rs[:], func(a, b apitest.Response) int { return a.Status - b.Status })
	if rs[0].Status != 202 || rs[1].Status != 409 || rs[1].Header.Get("Retry-After") == "" {
		t.Fatalf("two replays at once: %d %s / %d %s", rs[0].Status, rs[0].Raw, rs[1].Status, rs[1].Raw)
	}
	r := rs[0].Body["data"].(map[string]any)
	if r["queued"] != 4.0 || r["truncated"] != false || r["next_since"] != nil || r["endpoint_id"] != id ||
		!slices.Equal(toStrings(r["event_types"]), []string{"matter.created", "time_entry.created"}) {
		t.Fatalf("replay: %v", r)
	}
	replayID := r["id"].(string)
	apitest.DeliverAll(t, e, d, 2)
	again := rc.Deliveries()[4:]
	if len(again) != 4 {
		t.Fatalf("the replay delivered %d events, want 4", len(again))
	}
	for _, dl := range again {
		if body := first[dl.Header.Get("Service-Event-Id")]; body != string(dl.Body) || dl.Header.Get("Service-Replay-Id") != replayID ||
			dl.Header.Get("Service-Delivery-Attempt") != "1" {
			t.Fatalf("replayed delivery %v %s; first delivered as %s", dl.Header, dl.Body, body)
		}
	}
	var marked int
	for _, a := range e.Get("/api/v1/webhooks/"+id+"/deliveries?per_page=100", key).Data() {
		if a["replay_id"] == replayID {
			marked++
		}
	}
	if marked != 4 {
		t.Fatalf("%d attempts marked with the replay, want 4", marked)
	}

	// Its events have had their attempts: the endpoint takes another, by
	// type, and a bounded one says where to go on.
	if r := replay(`{"since":"` + since + `","event_types":["time_entry.created"]}`); r.Status != 202 || r.Body["data"].(map[string]any)["queued"] != 3.0 {
		t.Fatalf("by type: %d %s", r.Status, r.Raw)
	}
	apitest.DeliverAll(t, e, d, 1)
	e.Deliverer.ReplayLimit = 3
	covered := map[string]int{}
	from := since
	for round := 0; ; round++ {
		before := len(rc.Deliveries())
		r := replay(`{"since":"` + from + `"}`)
		apitest.MustStatus(t, r, 202)
		apitest.DeliverAll(t, e, d, 1)
		for _, dl := range rc.Deliveries()[before:] {
			covered[dl.Header.Get("Service-Event-Id")]++
		}
		data := r.Body["data"].(map[string]any)
		if data["truncated"] == false {
			if round != 1 || data["queued"] != 1.0 {
				t.Fatalf("round %d: %v", round, data)
			}
			break
		}
		if data["queued"] != 3.0 || round > 0 {
			t.Fatalf("round %d: %v", round, data)
		}
		from = data["next_since"].(string)
	}
	if len(covered) != 4 || slices.Max(slices.Collect(maps.Values(covered))) != 1 {
		t.Fatalf("the bounded replays covered %v, want each of the 4 events once", covered)
	}

	for body, field := range map[string]string{
		`{}`:                     "since",
		`{"since":"yesterday"}`:  "since",
		`{"since":"2020-01-01"}`: "since",
		`{"since":"2999-01-01"}`: "since",
		`{"since":"` + since + `","until":"2000-01-01T00:00:00Z"}`:   "until",
		`{"since":"` + since + `","event_types":["invoice.paid"]}`:   "event_types",
		`{"since":"` + since + `","event_types":["matter.deleted"]}`: "event_types",
		`{"since":"` + since + `","colour":"blue"}`:                  "colour",
	} {
		t.Run("replay "+body, func(t *testing.T) {
			if r := replay(body); r.Status != 422 || r.Body["field"] != field {
				t.Errorf("replay %s: %d %s", body, r.Status, r.Raw)
			}
		})
	}
	other := e.Key(e.Org("B"))
	if r := e.Do("POST", "/api/v1/webhooks/"+id+"/replay", other, strings.NewReader(`{"since":"`+since+`"}`)); r.Status != 404 {
		t.Fatalf("another organisation's endpoint: %d", r.Status)
	}
	if r := e.Do("POST", "/api/v1/webhooks/"+id+"/replay", other, strings.NewReader(`{}`)); r.Status != 404 {
		t.Fatalf("another organisation's endpoint, with a bad body: %d", r.Status)
	}
	apitest.MustStatus(t, e.Do("PATCH", "/api/v1/webhooks/"+id, key, strings.NewReader(`{"is_active":false}`)), 200)
	if r := replay(`{"since":"` + since + `"}`); r.Status != 409 || !strings.Contains(r.Body["message"].(string), "disabled") {
		t.Fatalf("a disabled endpoint: %d %s", r.Status, r.Raw)
	}
	if e.Deliveries.Len() != 0 {
		t.Fatalf("refused replays queued %d jobs", e.Deliveries.Len())
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestADisabledEndpointSaysSoAndCatchesUp: an endpoint whose receiver
// fails is turned off after 20 failures in a row, records disabled_at, and
// raises webhook_endpoint.disabled once (in the feed, and delivered to the
// organisation's other endpoint subscribed to it, signed for Standard
// Webhooks' library too); what it misses while off is queued by turning it
// back on with replay_since, and arrives.
func TestADisabledEndpointSaysSoAndCatchesUp(t *testing.T) {
	t.Parallel()
	down := apitest.NewReceiver(t, 500)
	watcher := apitest.NewReceiver(t, 200)
	e, d := apitest.HookEnv(t, down)
	apitest.Trust(e, down.Srv, watcher.Srv)
	e.Deliverer.Schedule = []time.Duration{} // one attempt per event: the failures come from many events
	org := e.Org("A")
	key := e.Key(org)
	start := time.Now().UTC()
	id, _ := apitest.Subscribe(t, e, key, down.Srv.URL, "time_entry.created")
	_, watchSecret := apitest.Subscribe(t, e, key, watcher.Srv.URL, "webhook_endpoint.disabled")
	im := apitest.NewImporter(t, e, key)
	m := im.Matter(im.Client("company_id", im.Company("61616161")), `,"hourly_rate":1`)["id"].(string)
	entry := func(i int) {
		im.Post("/api/v1/time-entries", fmt.Sprintf(`{"matter_id":%q,"date":"2025-03-01","duration_minutes":%d}`, m, 1+i%100))
	}
	for i := range 25 {
		entry(i)
	}
	apitest.DeliverAll(t, e, d, 8)
	ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	if ep["is_active"] != false || ep["disabled_at"] == nil {
		t.Fatalf("not disabled: %v", ep)
	}
	apitest.DeliverAll(t, e, d, 1) // the disable's own event
	got := watcher.Deliveries()
	if len(got) != 1 {
		t.Fatalf("the other endpoint got %d deliveries, want one webhook_endpoint.disabled", len(got))
	}
	var ev map[string]any
	if err := json.Unmarshal(got[0].Body, &ev); err != nil {
		t.Fatal(err)
	}
	wh := ev["data"].(map[string]any)["webhook_endpoint"].(map[string]any)
	if ev["event"] != "webhook_endpoint.disabled" || wh["id"] != id || wh["disabled_at"] != ep["disabled_at"] || wh["consecutive_failures"].(float64) < 20 ||
		wh["url"] != down.Srv.URL || wh["secret"] != nil {
		t.Fatalf("the event: %s", got[0].Body)
	}
	lib, err := standardwebhooks.NewWebhook(watchSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.Verify(got[0].Body, got[0].Header); err != nil {
		t.Fatalf("Standard Webhooks: %v", err)
	}
	if p := readFeed(t, e, key, "?event_types=webhook_endpoint.disabled"); len(p.events) != 1 || p.events[0]["id"] != ev["id"] {
		t.Fatalf("the feed: %v", p.events)
	}

	// Missed while off; a replay cannot reach it until it is on.
	for i := range 5 {
		entry(100 + i)
	}
	apitest.DeliverAll(t, e, d, 1)
	failed := len(down.Deliveries())
	if r := e.Do("POST", "/api/v1/webhooks/"+id+"/replay", key, strings.NewReader(`{"since":"`+start.Format(time.RFC3339Nano)+`"}`)); r.Status != 409 {
		t.Fatalf("replay to a disabled endpoint: %d %s", r.Status, r.Raw)
	}
	for body, field := range map[string]string{
		`{"replay_since":"` + start.Format(time.RFC3339Nano) + `"}`:                           "replay_since",
		`{"is_active":false,"replay_since":"` + start.Format(time.RFC3339Nano) + `"}`:         "replay_since",
		`{"is_active":true,"replay_since":"soon"}`:                                            "replay_since",
		`{"is_active":true,"replay_since":"2020-01-01T00:00:00Z"}`:                            "replay_since",
		`{"is_active":true,"replay_since":"` + start.Format(time.RFC3339Nano) + `","url":""}`: "url",
	} {
		t.Run("PATCH "+body, func(t *testing.T) {
			if r := e.For(t).Do("PATCH", "/api/v1/webhooks/"+id, key, strings.NewReader(body)); r.Status != 422 || r.Body["field"] != field {
				t.Errorf("PATCH %s: %d %s", body, r.Status, r.Raw)
			}
		})
	}
	if ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any); ep["is_active"] != false {
		t.Fatalf("a refused PATCH turned the endpoint on: %v", ep)
	}

	// The receiver is fixed; on again, with what it missed since it went down.
	down.Answer(200)
	r := e.Do("PATCH", "/api/v1/webhooks/"+id, key, strings.NewReader(`{"is_active":true,"replay_since":"`+start.Format(time.RFC3339Nano)+`"}`))
	apitest.MustStatus(t, r, 200)
	if r.Body["data"].(map[string]any)["is_active"] != true || r.Body["replay"].(map[string]any)["queued"] != 30.0 {
		t.Fatalf("re-enabled: %s", r.Raw)
	}
	apitest.DeliverAll(t, e, d, 4)
	ids := map[string]bool{}
	for _, dl := range down.Deliveries()[failed:] {
		if dl.Header.Get("Service-Replay-Id") == "" {
			t.Fatalf("a delivery after re-enabling is not the replay's: %v", dl.Header)
		}
		ids[dl.Header.Get("Service-Event-Id")] = true
	}
	if len(ids) != 30 || len(down.Deliveries())-failed != 30 {
		t.Fatalf("after re-enabling, %d deliveries of %d events; want the 30 time entries once each", len(down.Deliveries())-failed, len(ids))
	}
	if ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any); ep["consecutive_failures"] != 0.0 || ep["disabled_at"] != nil {
		t.Fatalf("caught up: %v", ep)
	}
}

// TestStandardWebhooksSignaturesDuringARotation: the webhook-signature
// header carries one signature per signing secret, so Standard Webhooks'
// library verifies a delivery with the old secret and with the new one
// during a rotation's grace period, and with neither a wrong one.
func TestStandardWebhooksSignaturesDuringARotation(t *testing.T) {
	t.Parallel()
	rc := apitest.NewReceiver(t, 200)
	e, _ := apitest.HookEnv(t, rc)
	key := e.Key(e.Org("A"))
	id, old := apitest.Subscribe(t, e, key, rc.Srv.URL, "matter.created")
	rot := e.Do("POST", "/api/v1/webhooks/"+id+"/rotate-secret", key, nil)
	apitest.MustStatus(t, rot, 200)
	apitest.MustStatus(t, e.Do("POST", "/api/v1/webhooks/"+id+"/test", key, nil), 200)
	dl := rc.Deliveries()[0]
	if n := len(strings.Fields(dl.Header.Get(signature.HeaderWebhookSignature))); n != 2 {
		t.Fatalf("webhook-signature carries %d signatures during the grace period, want 2", n)
	}
	for _, secret := range []string{old, rot.Body["secret"].(string)} {
		lib, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := lib.Verify(dl.Body, dl.Header); err != nil {
			t.Fatalf("secret %s…: %v", secret[:10], err)
		}
	}
	wrong, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("A", 43) + "=")
	if err := wrong.Verify(dl.Body, dl.Header); err == nil {
		t.Fatal("a wrong secret verified")
	}
}
