package webhook_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
)

// TestEveryRotatedSecretSignsThroughItsGrace (#38, item 5): a probe's
// rotations in a row each got 200 and ended the grace of the secret
// before at once. Now, in each of four organisations at once: a rotation
// with an hour's grace (s0 out, s1 in); five more at once while s0 is in
// its grace are 409 with Retry-After (the hour) and change nothing; one
// with grace 0 retires s1 as asked and leaves s0 its hour (s0 and s2
// sign); after the hour a rotation with a grace is 200 again (s2 and s3
// sign). Whatever the order, no secret handed out stops signing before
// its own grace ends.
func TestEveryRotatedSecretSignsThroughItsGrace(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 10000})
	t0 := time.Now().Truncate(time.Second)
	e.SetNow(t0)
	type org struct{ id, key, hook, s0, s2 string }
	orgs := make([]*org, 4)
	signs := func(o *org, want ...string) {
		t.Helper()
		ep, err := e.Deliverer.Store.Get(context.Background(), o.id, o.hook)
		if err != nil {
			t.Fatal(err)
		}
		got := ep.SigningSecrets(e.Now())
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s signs with %d secrets %v, want %v", o.id, len(got), got, want)
		}
	}
	rotate := func(o *org, body string) apitest.Response {
		return e.Do("POST", "/api/v1/webhooks/"+o.hook+"/rotate-secret", o.key, strings.NewReader(body))
	}
	var wg sync.WaitGroup
	for i := range orgs {
		o := &org{id: e.Org(fmt.Sprintf("Rotations %d", i))}
		o.key = e.Key(o.id)
		orgs[i] = o
		wg.Go(func() {
			r := e.Do("POST", "/api/v1/webhooks", o.key, strings.NewReader(`{"url":"https://127.0.0.1:9/hook","event_types":["matter.created"]}`))
			if r.Status != 201 {
				t.Errorf("endpoint: %d %s", r.Status, r.Raw)
				return
			}
			o.hook, o.s0 = r.Body["data"].(map[string]any)["id"].(string), r.Body["secret"].(string)
			r = rotate(o, `{"grace_period_seconds":3600}`)
			if r.Status != 200 {
				t.Errorf("first rotation: %d %s", r.Status, r.Raw)
				return
			}
			s1 := r.Body["secret"].(string)
			var mu sync.Mutex
			codes := map[string]int{}
			var inner sync.WaitGroup
			for j := range 5 {
				inner.Go(func() {
					r := rotate(o, []string{"", `{"grace_period_seconds":60}`}[j%2])
					mu.Lock()
					defer mu.Unlock()
					codes[fmt.Sprintf("%d Retry-After %s", r.Status, r.Header.Get("Retry-After"))]++
					if r.Status == 409 && !strings.Contains(fmt.Sprint(r.Body["message"]), "grace_period_seconds 0") {
						t.Errorf("a refused rotation does not say what to do: %s", r.Raw)
					}
				})
			}
			inner.Wait()
			if codes["409 Retry-After 3600"] != 5 {
				t.Errorf("rotations during a grace period: %v, want five 409 with Retry-After 3600", codes)
			}
			signs(o, s1, o.s0)
			r = rotate(o, `{"grace_period_seconds":0}`)
			if r.Status != 200 || r.Body["data"].(map[string]any)["previous_secret_expires_at"] != t0.Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000000Z") {
				t.Errorf("a rotation with no grace during one: %d %s", r.Status, r.Raw)
				return
			}
			o.s2 = r.Body["secret"].(string)
			signs(o, o.s2, o.s0)
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	e.SetNow(t0.Add(time.Hour)) // s0's grace is over
	for _, o := range orgs {
		signs(o, o.s2)
		wg.Go(func() {
			r := rotate(o, "")
			if r.Status != 200 {
				t.Errorf("a rotation after the grace: %d %s", r.Status, r.Raw)
				return
			}
			signs(o, r.Body["secret"].(string), o.s2)
		})
	}
	wg.Wait()
}
