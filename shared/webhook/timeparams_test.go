package webhook_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
)

// TestTimeParametersAreCheckedByValue (#38, item 5): the zero time
// (0001-01-01T00:00:00Z) sent as since, until or replay_since is a time
// long before the feed, refused on its field, not taken as "not sent"
// (a POST replay queued the whole feed, a PATCH skipped its replay); an
// after beyond sixteen digits is refused, not wrapped round to the oldest
// event. Clients of three organisations at once, beside requests that
// succeed.
func TestTimeParametersAreCheckedByValue(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 10000})
	e.SetNow(time.Now().Truncate(time.Second))
	now := e.Now()
	recent := now.Add(-time.Hour).UTC().Format(time.RFC3339)
	const zero = "0001-01-01T00:00:00Z"
	type call struct{ method, path, body, field string }
	var wg sync.WaitGroup
	for o := range 3 {
		org := e.Org(fmt.Sprintf("Times %d", o))
		key := e.Key(org)
		// An event in the feed (the oldest), which a wrapped after would return.
		id := ""
		for _, c := range [][2]string{{"/companies", `{"name":"Anne ApS","cvr":"1234567%d"}`}, {"/clients", `{"company_id":"%s"}`}, {"/matters", `{"client_id":"%s"}`}} {
			body := fmt.Sprintf(c[1], o)
			if id != "" {
				body = fmt.Sprintf(c[1], id)
			}
			r := e.Post("/api/v1"+c[0], key, c[0], body)
			if r.Status != 201 {
				t.Fatalf("%s: %d %s", c[0], r.Status, r.Raw)
			}
			id = r.Body["data"].(map[string]any)["id"].(string)
		}
		r := e.Do("POST", "/api/v1/webhooks", key, strings.NewReader(`{"url":"https://127.0.0.1:9/hook","event_types":["matter.created"]}`))
		if r.Status != 201 {
			t.Fatalf("endpoint: %d %s", r.Status, r.Raw)
		}
		hook := "/api/v1/webhooks/" + r.Body["data"].(map[string]any)["id"].(string)
		for _, c := range []call{
			{"GET", "/api/v1/events?after=9223372036854775807", "", "after"},
			{"GET", "/api/v1/events?after=9007199254740992", "", "after"},
			{"POST", hook + "/replay", `{"since":"` + zero + `"}`, "since"},
			{"POST", hook + "/replay", `{"since":"0001-01-01"}`, "since"},
			{"POST", hook + "/replay", `{"since":"` + recent + `","until":"` + zero + `"}`, "until"},
			{"PATCH", hook, `{"is_active":true,"replay_since":"` + zero + `"}`, "replay_since"},
			{"PATCH", hook, `{"is_active":true,"replay_since":"0001-01-01T00:00:00+00:00"}`, "replay_since"},
			{"GET", "/api/v1/events?after=9007199254740991", "", ""},
			{"GET", "/api/v1/events", "", ""},
		} {
			wg.Go(func() {
				var r apitest.Response
				if c.body == "" {
					r = e.Get(c.path, key)
				} else {
					r = e.Do(c.method, c.path, key, strings.NewReader(c.body))
				}
				switch {
				case c.field != "":
					if r.Status != 422 || r.Body["field"] != c.field {
						t.Errorf("org %d: %s %s %s: %d %s; want 422 on %s", o, c.method, c.path, c.body, r.Status, r.Raw, c.field)
					}
				case r.Status != 200:
					t.Errorf("org %d: %s %s: %d %s", o, c.method, c.path, r.Status, r.Raw)
				case strings.Contains(c.path, "after=") && len(r.Data()) != 0:
					t.Errorf("org %d: %s: %d events after the highest sequence", o, c.path, len(r.Data()))
				case !strings.Contains(c.path, "after=") && len(r.Data()) == 0:
					t.Errorf("org %d: %s: no events, want the organisation's (the matter's among them)", o, c.path)
				}
			})
		}
	}
	wg.Wait()
}
