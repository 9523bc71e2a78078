package webhook_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOnlySustainedFailureDisables (#40, item 6): a failed delivery is an
// event whose attempts are exhausted (the spec: "After 20 consecutive
// failed deliveries on one endpoint, the endpoint is disabled"), so of four
// organisations' receivers at once:
//
//   - one fails each of its 10 events' first four attempts (503) and takes
//     the fifth: 40 failed attempts, no failed delivery: never disabled,
//     consecutive_failures 0 (before: off after 20 attempts);
//   - one hangs past the client's timeout on the first two attempts:
//     never disabled;
//   - one fails every attempt: disabled once 20 events have exhausted
//     theirs (not before 100 attempts), its webhook_endpoint.disabled
//     saying at least 20;
//   - one answers at once.
func TestOnlySustainedFailureDisables(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	rc.byAttempt("flaky", func(n int) int {
		if n < 5 {
			return 503
		}
		return 200
	})
	rc.byAttempt("hangs", func(n int) int {
		if n <= 2 {
			return 0
		}
		return 200
	})
	rc.set("down", 503, 0)
	w := newWorld(t, rc)
	hc := *w.Deliverer.Client
	hc.Timeout = time.Second
	w.Deliverer.Client = &hc
	w.Deliverer.Schedule = []time.Duration{0, 0, 0, 0} // five attempts, at once
	w.Deliverer.EndpointConcurrency = 100
	type sub struct {
		tn *tenant
		ep string
	}
	subs := map[string]sub{}
	watcher := map[string]string{}
	for _, name := range []string{"flaky", "hangs", "down", "quick"} {
		tn := w.tenant(name)
		subs[name] = sub{tn, tn.subscribe(rc.url("/" + name + "/" + tn.org))}
		r := w.Do("POST", "/api/v1/webhooks", tn.key, jsonBody(map[string]any{"url": rc.url("/watch/" + tn.org), "event_types": []string{"webhook_endpoint.disabled"}}))
		if r.Status != 201 {
			t.Fatal(r.Status)
		}
		watcher[name] = r.Body["data"].(map[string]any)["id"].(string)
	}
	events := map[string]int{"flaky": 10, "hangs": 8, "down": 22, "quick": 5}
	var wg sync.WaitGroup
	for name, s := range subs {
		wg.Go(func() {
			for range events[name] {
				s.tn.matter()
			}
		})
	}
	wg.Wait()
	w.drain(16, 2*time.Minute)
	w.drain(4, time.Minute) // the disable's own event

	for name, s := range subs {
		ep := w.Get("/api/v1/webhooks/"+s.ep, s.tn.key).Body["data"].(map[string]any)
		failures := int(ep["consecutive_failures"].(float64))
		got := rc.got("/" + name + "/")
		switch name {
		case "flaky", "hangs", "quick":
			if ep["is_active"] != true || failures != 0 {
				t.Errorf("%s: active %v, consecutive_failures %d after %d attempts; want on, 0", name, ep["is_active"], failures, len(got))
			}
		case "down":
			if ep["is_active"] != false || failures < 20 || ep["disabled_at"] == nil {
				t.Errorf("down: active %v, consecutive_failures %d after %d attempts; want off at 20 failed deliveries", ep["is_active"], failures, len(got))
			}
			if len(got) < 100 { // 20 events' five
				t.Errorf("down: disabled after %d attempts, before 20 events had their 5", len(got))
			}
			w := rc.got("/watch/" + s.tn.org)
			var ev struct {
				Event string
				Data  struct {
					WebhookEndpoint struct {
						ID                  string `json:"id"`
						ConsecutiveFailures int    `json:"consecutive_failures"`
					} `json:"webhook_endpoint"`
				}
			}
			if len(w) != 1 || json.Unmarshal(w[0].body, &ev) != nil || ev.Data.WebhookEndpoint.ID != s.ep || ev.Data.WebhookEndpoint.ConsecutiveFailures < 20 {
				t.Errorf("down: the disable's event %d times: %v", len(w), ev)
			}
		}
		if name == "flaky" && len(got) != 50 {
			t.Errorf("flaky: %d attempts, want 50 (each event's five)", len(got))
		}
	}
	for name := range subs {
		if name != "down" && len(rc.got("/watch/"+subs[name].tn.org)) != 0 {
			t.Errorf("%s: a disable was announced", name)
		}
	}
}

func jsonBody(v any) *strings.Reader {
	b, _ := json.Marshal(v)
	return strings.NewReader(string(b))
}
