package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/lambdahttp"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/openapi"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
	"github.com/practice-api/practice-api/shared/webhook"
)

func sqsEvent(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), Body: b,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	}
	return ev
}

// TestBatchRecordsRunConcurrentlyUnderTheirDeadline: quick, failing and
// overrunning records in one batch; the invocation ends before its deadline
// and names exactly the records that failed or overran.
func TestBatchRecordsRunConcurrentlyUnderTheirDeadline(t *testing.T) {
	// In a bubble: the deadlines pass on its clock, at once when every
	// record waits on one.
	synctest.Test(t, func(t *testing.T) {
		ev := sqsEvent("ok", "ok", "ok", "ok", "fail", "fail", "hang", "hang", "hang", "hang")
		h := app.SQSHandler(func(ctx context.Context, m queue.Message) error {
			switch string(m.Body) {
			case "fail":
				return errors.New("failed")
			case "hang":
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
		timeout := app.RecordMargin + time.Second
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		resp, err := h(ctx, ev)
		took := time.Since(start)
		if err != nil || took != timeout-app.RecordMargin {
			t.Fatalf("the batch took %s of its %s (%v); want it to end at its records' deadline, RecordMargin before its own", took, timeout, err)
		}
		var failed []string
		for _, f := range resp.BatchItemFailures {
			failed = append(failed, f.ItemIdentifier)
		}
		slices.Sort(failed)
		if want := []string{"m4", "m5", "m6", "m7", "m8", "m9"}; !slices.Equal(failed, want) {
			t.Fatalf("batch item failures %v, want %v", failed, want)
		}
		// With no time left to start, every record comes back.
		late, cancel2 := context.WithTimeout(context.Background(), app.RecordMargin/2)
		defer cancel2()
		resp, _ = h(late, sqsEvent("ok", "ok"))
		if len(resp.BatchItemFailures) != 2 {
			t.Fatalf("records started without time: %v", resp.BatchItemFailures)
		}
	})
}

// TestDeliveriesToAHangingReceiverFinishInTime: ten deliveries in one batch
// to a receiver that never answers. The invocation ends inside its timeout,
// each attempt is logged once, each retry is queued, and no record comes
// back to be sent again.
// deliveryVisibility is the delivery queue's visibility timeout (infra's
// addQueue("delivery", 180)).
const deliveryVisibility = 180 * time.Second

func TestDeliveriesToAHangingReceiverFinishInTime(t *testing.T) {
	release := make(chan struct{})
	rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer rcv.Close()
	defer close(release)
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	r := e.Do("POST", "/api/v1/webhooks", key, strings.NewReader(`{"url":"`+rcv.URL+`","event_types":["matter.created"]}`))
	if r.Status != 201 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Raw)
	}
	id := r.Body["data"].(map[string]any)["id"].(string)
	client, err := webhook.NewHTTPClient("", true)
	if err != nil {
		t.Fatal(err)
	}
	client.Transport.(*http.Transport).TLSClientConfig.RootCAs.AddCert(rcv.Certificate())
	e.Deliverer.Client = client
	// Ten events of the organisation, and a job naming each.
	co := e.Post("/api/v1/companies", key, "co", `{"name":"Hang ApS","cvr":"12345678"}`).Body["data"].(map[string]any)["id"].(string)
	cl := e.Post("/api/v1/clients", key, "cl", `{"company_id":"`+co+`"}`).Body["data"].(map[string]any)["id"].(string)
	for i := range 10 {
		if r := e.Post("/api/v1/matters", key, fmt.Sprint("m", i), `{"client_id":"`+cl+`"}`); r.Status != 201 {
			t.Fatalf("matter: %d %s", r.Status, r.Raw)
		}
	}
	page, err := outbox.Feed(context.Background(), e.DB, outbox.FeedQuery{Org: org, Limit: 100, Now: time.Now(), Retention: time.Hour})
	var matters []outbox.Message // the client's and company's events beside
	for _, ev := range page.Events {
		if ev.Type == outbox.MatterCreated {
			matters = append(matters, ev)
		}
	}
	if err != nil || len(matters) != 10 {
		t.Fatalf("the feed: %d matter events, %v", len(matters), err)
	}
	var bodies []string
	for _, ev := range matters {
		job, _ := json.Marshal(webhook.Job{OrgID: org, EventID: ev.ID, Sequence: ev.Sequence, EndpointID: id, Attempt: 1})
		bodies = append(bodies, string(job))
	}
	// The receiver would hold each for 15 s. Each record gets 6 s to read
	// its endpoint and event and start its attempt: with 2 s, one record
	// of ten missed it beside make test's other tiers (load ~10) and came
	// back, as it should when its reads are that slow; the test is about
	// the hang, not the reads.
	timeout := app.RecordMargin + 6*time.Second
	// A record whose store calls missed their own deadlines on a loaded
	// engine comes back, as it should, and SQS sends it again: so does
	// this test, up to five invocations, the delivery queue's
	// maxReceiveCount (ten records updating one endpoint's budget item at
	// once met DynamoDB Local's lock waits in fresh clones: seven of ten
	// came back twice in a row). Every invocation must end in time; the
	// last must send none back.
	ev := sqsEvent(bodies...)
	cameBack := false
	for round := 1; ; round++ {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		start := time.Now()
		resp, _ := app.SQSHandler(e.Deliverer.Handle)(ctx, ev)
		took := time.Since(start)
		cancel()
		// Every wait of the batch ends with a context made from the
		// invocation's (the attempts RecordMargin before it, the
		// bookkeeping BookkeepingTime after them, within the margin), so
		// it ends inside its timeout; a wait that ignored its context
		// would hold until the receiver let go (never, here). The bound
		// allows 5 s of lateness for a loaded machine, on which the
		// goroutines run late (10.04 s of 9 s at load 22, once): the test
		// asserts the waits end, not the machine's speed.
		if took >= timeout+5*time.Second {
			t.Fatalf("invocation %d took %s, over its %s (and 5 s of a loaded machine's lateness)", round, took, timeout)
		}
		if len(resp.BatchItemFailures) == 0 {
			break
		}
		if round == 5 {
			t.Fatalf("records sent back to be delivered again, five invocations in a row (the queue would dead-letter them): %v", resp.BatchItemFailures)
		}
		t.Logf("invocation %d sent back %d records (a loaded engine); SQS would send them again", round, len(resp.BatchItemFailures))
		cameBack = true
		// SQS sends a record again once its visibility timeout has passed
		// (the delivery queue's is 180 s, infra's addQueue), by when the
		// 60 s claim of an attempt that missed its deadline has lapsed.
		// Sent again at once, a record met its own claim still held ("this
		// attempt is being sent by another worker") five times in a row in
		// a fresh clone at load 40: so the clock moves past the timeout.
		e.SetNow(e.Now().Add(deliveryVisibility))
		back := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			back[f.ItemIdentifier] = true
		}
		var again events.SQSEvent
		for _, r := range ev.Records {
			if back[r.MessageId] {
				r.Attributes = map[string]string{"ApproximateReceiveCount": fmt.Sprint(round + 1)}
				again.Records = append(again.Records, r)
			}
		}
		ev = again
	}
	ep := e.Get("/api/v1/webhooks/"+id, key).Body["data"].(map[string]any)
	log := e.Get("/api/v1/webhooks/"+id+"/deliveries?per_page=100", key).Data()
	// None is a failed delivery yet (each has attempts left): no failure
	// is counted.
	if ep["consecutive_failures"] != 0.0 || len(log) != 10 {
		t.Fatalf("consecutive_failures %v, %d attempts logged; want 0, 10", ep["consecutive_failures"], len(log))
	}
	// Each event's second attempt is queued. When records came back, the
	// queue may hold more, all correct under at-least-once delivery: a
	// record that came back after its retry was sent but before that was
	// recorded sends it again (a duplicate job, which the second attempt's
	// claim answers once); and a record that came back while its
	// endpoint's slots were still held (a slot whose release missed its
	// deadline lapses with its hold) waits its turn as the same attempt,
	// 1, whose claim, when it runs, finds it done and queues the retry if
	// no one has. So: every event has a job queued, to this endpoint, for
	// attempt 2 (or 1 waiting its turn, only when records came back), and
	// with no record back exactly the ten second attempts.
	queued := map[string]int{}
	bodies2 := e.Deliveries.Bodies()
	for _, b := range bodies2 {
		var j webhook.Job
		if err := json.Unmarshal(b, &j); err != nil || j.EndpointID != id || (j.Attempt != 2 && !(cameBack && j.Attempt == 1)) {
			t.Fatalf("a queued job that is not a second attempt to the endpoint (or a first waiting its turn after records came back: %v): %s (%v)", cameBack, b, err)
		}
		queued[j.EventID]++
	}
	for _, ev := range matters {
		if queued[ev.ID] == 0 {
			t.Errorf("event %s: no job queued for it", ev.ID)
		}
	}
	if len(queued) != 10 || (!cameBack && len(bodies2) != 10) {
		t.Fatalf("jobs queued for %d events (%d jobs, records came back: %v), want the 10 events, once each unless records came back", len(queued), len(bodies2), cameBack)
	}
}

// blackhole forwards to upstream until hang is set; then it swallows what
// it is sent and answers nothing, as a store that stopped responding.
func blackhole(t *testing.T, upstream string) (url string, hang *atomic.Bool) {
	hang = &atomic.Bool{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	target := strings.TrimPrefix(upstream, "http://")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(c, u) }()
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if !hang.Load() {
						if _, err := u.Write(buf[:n]); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), hang
}

// TestSlowStoreAnswers503BeforeTheDeadline: a request's deadline falls
// RequestMargin before the invocation's, so a store that stops answering
// gives the API's JSON 503, in time; and a cold start on such a store fails
// within StartupTimeout instead of hanging.
func TestSlowStoreAnswers503BeforeTheDeadline(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := context.Background()
	org, err := auth.NewStore(db, 0).CreateOrg(ctx, "", "A", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := auth.NewStore(db, 0).CreateKey(ctx, auth.KeyRequest{OrgID: org.ID, Mode: auth.ModeTest, Scopes: auth.Catalogue}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	url, hang := blackhole(t, storetest.Endpoint(t))
	cfg := config.Defaults()
	cfg.DynamoDBEndpoint, cfg.TableName = url, db.Table
	build := apiapp.On(func(db *store.DB) httpapi.Handlers { return matter.Handlers(matter.NewStore(db)) })
	h, err := apiapp.FamilyHandler(ctx, cfg, slog.Default(), routes.Matters, build)
	if err != nil {
		t.Fatal(err)
	}
	h = lambdahttp.WithRequestDeadline(h, lambdahttp.RequestMargin)
	get := func(invocation time.Duration) (*httptest.ResponseRecorder, time.Duration) {
		ictx, cancel := context.WithTimeout(context.Background(), invocation)
		defer cancel()
		req := httptest.NewRequestWithContext(ictx, "GET", "/api/v1/matters", nil)
		req.Header.Set("Authorization", "Bearer "+tok.String())
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		return rec, time.Since(start)
	}
	if rec, _ := get(10 * time.Second); rec.Code != 200 {
		t.Fatalf("before the store hangs: %d %s", rec.Code, rec.Body)
	}
	hang.Store(true)
	invocation := 2 * time.Second
	rec, took := get(invocation)
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "temporarily unavailable") {
		t.Fatalf("a hanging store: %d %s", rec.Code, rec.Body)
	}
	if took >= invocation-lambdahttp.RequestMargin/2 {
		t.Fatalf("answered after %s of a %s invocation", took, invocation)
	}

	start := time.Now()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := apiapp.FamilyHandler(sctx, cfg, slog.Default(), routes.Matters, build); err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("a cold start on a hanging store: %v after %s", err, time.Since(start))
	}
}

// TestTheCatchAllAnswersForEveryFamily: on AWS, what matches no route goes
// to the meta function ($default); it answers the API's JSON 404, or 405
// with Allow for any family's path, with a request id.
func TestTheCatchAllAnswersForEveryFamily(t *testing.T) {
	h, err := lambdahttp.PublicHandler(config.Defaults(), slog.Default(), routes.Meta, openapi.Handlers())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"DELETE", "/api/v1/matters", 405, "GET, POST"},
		{"PUT", "/api/v1/webhooks/00000000-0000-4000-8000-000000000000", 405, "GET, PATCH, DELETE"},
		{"GET", "/api/v1/nowhere", 404, ""},
		{"GET", "/", 404, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		var body map[string]any
		if rec.Code != c.status || rec.Header().Get("Allow") != c.allow || rec.Header().Get("X-Request-Id") == "" ||
			json.Unmarshal(rec.Body.Bytes(), &body) != nil || body["message"] == nil {
			t.Errorf("%s %s: %d Allow %q, %s", c.method, c.path, rec.Code, rec.Header().Get("Allow"), rec.Body)
		}
	}
}
