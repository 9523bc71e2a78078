package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hookServer is a receiver on loopback (plain http, which a local server
// takes) that records every delivery and answers 500 while failing.
type hookServer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []hookDelivery
	failing bool
}

type hookDelivery struct {
	header http.Header
	body   []byte
	event  map[string]any
	ok     bool
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		h.mu.Lock()
		ok := !h.failing
		h.got = append(h.got, hookDelivery{r.Header.Clone(), body, ev, ok})
		h.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookServer) setFailing(v bool) { h.mu.Lock(); h.failing = v; h.mu.Unlock() }

func (h *hookServer) deliveries() []hookDelivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookDelivery(nil), h.got...)
}

// eventually polls cond every 200 ms until it holds, or fails after limit.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
	}
}

// feed reads the organisation's whole feed of types, paging by after.
func feed(t *testing.T, key, types string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for after := int64(0); ; {
		r := get(t, fmt.Sprintf("/events?per_page=3&event_types=%s&after=%d", types, after), key)
		if r.status != 200 {
			t.Fatalf("GET /events: %d %s", r.status, r.raw)
		}
		for _, ev := range r.body["data"].([]any) {
			out = append(out, ev.(map[string]any))
		}
		meta := r.body["meta"].(map[string]any)
		if meta["has_more"] != true {
			return out
		}
		after = int64(meta["next_after"].(float64))
	}
}

// TestEventFeedReplayAndRecovery is docs/api.md's recovery walk-through
// on the server under test: every delivery carries its sequence and the
// Standard Webhooks headers (verified with the Go library); the feed lists
// the event as delivered; a replay delivers it again, marked; a receiver
// that fails turns its endpoint off after 20 failed deliveries (events
// whose attempts all failed), which another
// endpoint hears as webhook_endpoint.disabled, the log says (with its
// metric) and the feed lists; turning
// it back on with replay_since delivers everything it missed.
func TestEventFeedReplayAndRecovery(t *testing.T) {
	t.Parallel() // the suite's slow tests (each writes only to an organisation of its own) run beside each other once the rest is done
	if api.local == nil {
		t.Skip("the receivers listen on loopback: they need a server this suite started")
	}
	_, key, _ := newOrg(t, "webhooks:manage,parties:write,clients:write,matters:write")
	start := time.Now().UTC()
	hook, watcher := newHookServer(t), newHookServer(t)
	sub := func(url, types string) (string, string) {
		r := postT(t, "/webhooks", key, "", `{"url":"`+url+`","event_types":[`+types+`]}`)
		if r.status != 201 {
			t.Fatalf("subscribe: %d %s", r.status, r.raw)
		}
		return r.body["data"].(map[string]any)["id"].(string), r.body["secret"].(string)
	}
	hookID, secret := sub(hook.srv.URL+"/hooks", `"matter.created"`)
	sub(watcher.srv.URL+"/watch", `"webhook_endpoint.disabled"`)
	lib, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("the Standard Webhooks library does not take the secret: %v", err)
	}
	cvr := fmt.Sprintf("%08d", time.Now().UnixNano()%100000000)
	co := id(t, post(t, "/companies", key, "ev-co", `{"name":"Fjord ApS","cvr":"`+cvr+`"}`), 201)
	cl := id(t, post(t, "/clients", key, "ev-cl", `{"company_id":"`+co+`"}`), 201)
	matter := func(n int) string {
		return id(t, post(t, "/matters", key, "ev-m-"+strconv.Itoa(n), `{"client_id":"`+cl+`"}`), 201)
	}
	first := matter(0)
	eventually(t, 30*time.Second, "the first matter.created delivered", func() bool { return len(hook.deliveries()) > 0 })
	d := hook.deliveries()[0]
	if err := lib.Verify(d.body, d.header); err != nil {
		t.Fatalf("Standard Webhooks: %v", err)
	}
	seq, _ := d.event["sequence"].(float64)
	if d.header.Get("webhook-id") != d.event["id"] || seq < 1 || d.header.Get("Service-Event-Sequence") != strconv.FormatInt(int64(seq), 10) ||
		!strings.Contains(string(d.body), first) {
		t.Fatalf("delivery %v %s", d.header, d.body)
	}

	// The feed lists it as it was delivered (after its settle time).
	var listed []map[string]any
	eventually(t, 40*time.Second, "the feed lists the matter.created", func() bool {
		listed = feed(t, key, "matter.created")
		return len(listed) == 1
	})
	if !reflect.DeepEqual(listed[0], d.event) {
		t.Fatalf("the feed lists %v\ndelivered        %v", listed[0], d.event)
	}

	// A replay delivers it again, marked. (A replay answered 503 is asked
	// again, as the spec says: the test looks for the delivery of the
	// replay it was answered, not the second delivery.)
	r := again(t, func() response {
		return postT(t, "/webhooks/"+hookID+"/replay", key, "", `{"since":"`+start.Format(time.RFC3339Nano)+`"}`)
	})
	// A 409 after a 503: the 503'd replay committed after its deadline
	// and is under way; its delivery is the one to find, whatever its id.
	replayID := ""
	if r.status != http.StatusConflict || !strings.Contains(string(r.raw), "replay") {
		if r.status != 202 || r.body["data"].(map[string]any)["queued"] != 1.0 {
			t.Fatalf("replay: %d %s", r.status, r.raw)
		}
		replayID = r.body["data"].(map[string]any)["id"].(string)
	}
	var replayed *hookDelivery
	eventually(t, 30*time.Second, "the replayed delivery", func() bool {
		for _, d := range hook.deliveries()[1:] {
			if id := d.header.Get("Service-Replay-Id"); id != "" && (replayID == "" || id == replayID) {
				replayed = &d
				return true
			}
		}
		return false
	})
	if d := replayed; d.event["id"] != listed[0]["id"] || lib.Verify(d.body, d.header) != nil {
		t.Fatalf("replayed delivery %v %s", d.header, d.body)
	}

	// The receiver fails: 20 events whose attempts all fail (failed
	// deliveries) turn the endpoint off.
	hook.setFailing(true)
	for n := 1; n <= 20; n++ {
		matter(n)
	}
	var ep map[string]any
	// 20 events whose five attempts each fail (#40): minutes beside the
	// other tiers of make test, not seconds.
	eventually(t, 4*time.Minute, "the failing endpoint turned off", func() bool {
		// A 503 or 429 under load is "not yet", not a failure.
		r := get(t, "/webhooks/"+hookID, key)
		if r.status != 200 {
			t.Logf("GET the endpoint: %d %s", r.status, r.raw)
			return false
		}
		ep = r.body["data"].(map[string]any)
		return ep["is_active"] == false
	})
	if ep["disabled_at"] == nil || ep["consecutive_failures"].(float64) < 20 {
		t.Fatalf("disabled endpoint %v", ep)
	}
	// The operator hears of it: a warning with the metric the alarm watches.
	eventually(t, 30*time.Second, "the disable's log line and metric", func() bool {
		for _, l := range strings.Split(api.logs.String(), "\n") {
			if strings.Contains(l, "webhook endpoint disabled") && strings.Contains(l, hookID) && strings.Contains(l, `"WebhookEndpointsDisabled":1`) {
				return true
			}
		}
		return false
	})
	eventually(t, 30*time.Second, "webhook_endpoint.disabled delivered to the other endpoint", func() bool { return len(watcher.deliveries()) > 0 })
	w := watcher.deliveries()[0]
	if w.event["event"] != "webhook_endpoint.disabled" || w.event["data"].(map[string]any)["webhook_endpoint"].(map[string]any)["id"] != hookID {
		t.Fatalf("the other endpoint got %s", w.body)
	}
	eventually(t, 40*time.Second, "the feed lists webhook_endpoint.disabled", func() bool {
		return len(feed(t, key, "webhook_endpoint.disabled")) == 1
	})

	// Fixed; back on with what it missed since it went down.
	hook.setFailing(false)
	before := len(hook.deliveries())
	// Answered 503, it is asked again (again). Should the 503'd request
	// have committed after its deadline, the second finds its replay
	// under way: a 409 (wait for it), and the endpoint on. Either way,
	// every missed event must then arrive.
	p := again(t, func() response {
		return do(t, "PATCH", "/webhooks/"+hookID, key, "", `{"is_active":true,"replay_since":"`+start.Format(time.RFC3339Nano)+`"}`)
	})
	committedEarlier := p.status == http.StatusConflict && get(t, "/webhooks/"+hookID, key).body["data"].(map[string]any)["is_active"] == true
	if !committedEarlier && (p.status != 200 || p.body["replay"].(map[string]any)["queued"] != 21.0) {
		t.Fatalf("re-enable with replay_since: %d %s", p.status, p.raw)
	}
	got := map[string]bool{}
	eventually(t, 60*time.Second, "the 21 matters' events delivered after re-enabling", func() bool {
		for _, d := range hook.deliveries()[before:] {
			if d.ok && lib.Verify(d.body, d.header) == nil {
				got[d.event["id"].(string)] = true
			}
		}
		return len(got) == 21
	})
	for _, ev := range feed(t, key, "matter.created") {
		if !got[ev["id"].(string)] {
			t.Fatalf("the feed's %s was not delivered after re-enabling", ev["id"])
		}
	}
}
