package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/webhook"
)

// hit is one request a receiver got.
type hit struct {
	path   string
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is a real HTTPS subscriber on loopback. Each path answers with
// its behaviour (by the path's first segment): a status, after a delay;
// "hang" waits until the request is abandoned.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	hits     []hit
	status   map[string]int                   // first path segment -> status (200 when absent)
	delay    map[string]time.Duration         // first path segment -> how long before answering
	byTry    map[string]func(attempt int) int // first path segment -> status by Service-Delivery-Attempt (0: hang)
	inFlight map[string]int                   // first path segment -> requests being served
	peak     map[string]int
	served   atomic.Int64
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{status: map[string]int{}, delay: map[string]time.Duration{}, inFlight: map[string]int{}, peak: map[string]int{},
		byTry: map[string]func(int) int{}}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func segment(path string) string {
	return strings.SplitN(strings.TrimPrefix(path, "/"), "/", 2)[0]
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	seg := segment(r.URL.Path)
	rc.mu.Lock()
	rc.hits = append(rc.hits, hit{r.URL.Path, r.Header.Clone(), b, time.Now()})
	status, ok := rc.status[seg]
	if !ok {
		status = 200
	}
	if f := rc.byTry[seg]; f != nil {
		n, _ := strconv.Atoi(r.Header.Get("Service-Delivery-Attempt"))
		status = f(n)
	}
	delay := rc.delay[seg]
	rc.inFlight[seg]++
	rc.peak[seg] = max(rc.peak[seg], rc.inFlight[seg])
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.inFlight[seg]--
		rc.mu.Unlock()
		rc.served.Add(1)
	}()
	switch {
	case status == 0: // hang
		<-r.Context().Done()
		return
	case delay > 0:
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(status)
}

// byAttempt makes the paths under seg answer as f says for each attempt
// number (0: hang).
func (rc *receiver) byAttempt(seg string, f func(attempt int) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.byTry[seg] = f
}

// set makes the paths under seg answer status after delay.
func (rc *receiver) set(seg string, status int, delay time.Duration) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.status[seg], rc.delay[seg] = status, delay
}

func (rc *receiver) url(path string) string { return rc.srv.URL + path }

// got returns the requests so far whose path starts with prefix.
func (rc *receiver) got(prefix string) []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []hit
	for _, h := range rc.hits {
		if strings.HasPrefix(h.path, prefix) {
			out = append(out, h)
		}
	}
	return out
}

func (rc *receiver) peakOf(seg string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.peak[seg]
}

// logs is a logger whose JSON lines a test reads back.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// lines returns the logged lines whose msg is msg, decoded.
func (l *logs) lines(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// world is an API test Env whose delivery worker trusts the receivers and
// logs into lg, with the outbox's dispatcher wired as the app wires it.
type world struct {
	*apitest.Env
	t    testing.TB
	d    *outbox.Dispatcher
	lg   *logs
	idem atomic.Int64
}

func newWorld(t testing.TB, receivers ...*receiver) *world {
	e := apitest.New(t, apitest.Options{RateLimit: 100000})
	pool, _ := webhook.NewHTTPClient("", true)
	tr := pool.Transport.(*http.Transport)
	for _, rc := range receivers {
		tr.TLSClientConfig.RootCAs.AddCert(rc.srv.Certificate())
	}
	tr.MaxIdleConnsPerHost = 64
	lg := &logs{}
	e.Deliverer.Client, e.Deliverer.Schedule, e.Deliverer.Log = pool, []time.Duration{0, 0, 0, 0}, lg.logger()
	// A job whose worker failed (a store call past its time on a loaded
	// machine) comes back in seconds, not the API test's minute.
	e.Deliveries = queue.NewMemory(10 * time.Second)
	e.Deliverer.Queue = e.Deliveries
	routes := map[outbox.Type][]outbox.Sink{outbox.CompanyCreated: {queue.NewMemory(time.Minute)}}
	for _, typ := range outbox.Types {
		routes[typ] = []outbox.Sink{&webhook.Fanout{Store: e.Deliverer.Store, Queue: e.Deliveries}}
	}
	return &world{Env: e, t: t, d: &outbox.Dispatcher{DB: e.DB, Routes: routes}, lg: lg}
}

// tenant is an organisation of the world with a key and a client to open
// matters for.
type tenant struct {
	w                 *world
	org, key, client_ string
}

func (w *world) tenant(name string) *tenant {
	w.t.Helper()
	org := w.Org(name)
	tn := &tenant{w: w, org: org, key: w.Key(org)}
	co := tn.post("/api/v1/companies", fmt.Sprintf(`{"name":"%s ApS","cvr":"%08d"}`, name, 10000000+w.idem.Add(1)))
	tn.client_ = tn.post("/api/v1/clients", fmt.Sprintf(`{"company_id":%q}`, co))
	return tn
}

func (tn *tenant) post(path, body string) string {
	tn.w.t.Helper()
	// A 503 is retried with the same Idempotency-Key, as the answer says
	// (on a loaded make test the engine misses the store's deadline now
	// and then; a create that failed so stopped its goroutine's creates).
	idem := fmt.Sprint("k", tn.w.idem.Add(1))
	r := tn.w.Post(path, tn.key, idem, body)
	for try := 0; r.Status == 503 && try < 5; try++ {
		time.Sleep(time.Second)
		r = tn.w.Post(path, tn.key, idem, body)
	}
	if r.Status != 201 {
		tn.w.t.Fatalf("POST %s: %d %s", path, r.Status, r.Raw)
	}
	return r.Body["data"].(map[string]any)["id"].(string)
}

// matter opens a matter (its matter.created event is in the outbox).
func (tn *tenant) matter() string {
	return tn.post("/api/v1/matters", fmt.Sprintf(`{"client_id":%q}`, tn.client_))
}

// subscribe registers an endpoint for matter.created at url.
func (tn *tenant) subscribe(url string) string {
	tn.w.t.Helper()
	r := tn.w.Do("POST", "/api/v1/webhooks", tn.key, strings.NewReader(fmt.Sprintf(`{"url":%q,"event_types":["matter.created"]}`, url)))
	if r.Status != 201 {
		tn.w.t.Fatalf("subscribe: %d %s", r.Status, r.Raw)
	}
	return r.Body["data"].(map[string]any)["id"].(string)
}

// dispatch sends the pending events' jobs to the delivery queue.
func (w *world) dispatch() {
	w.t.Helper()
	if _, err := w.d.Sweep(context.Background(), 0); err != nil {
		w.t.Fatal(err)
	}
}

// jobs takes every visible job off the queue (deleted), decoded.
func (w *world) jobs() []webhook.Job {
	w.t.Helper()
	var out []webhook.Job
	for {
		msgs, _ := w.Deliveries.Receive(context.Background(), 10, 10*time.Millisecond)
		if len(msgs) == 0 {
			return out
		}
		for _, m := range msgs {
			var j webhook.Job
			if err := json.Unmarshal(m.Body, &j); err != nil {
				w.t.Fatal(err)
			}
			out = append(out, j)
			_ = w.Deliveries.Delete(context.Background(), m)
		}
	}
}

// handle runs a job body as the worker gets it from the queue.
func (w *world) handle(body []byte) error {
	return w.Deliverer.Handle(context.Background(), queue.Message{ID: fmt.Sprint("msg-", w.idem.Add(1)), Body: body})
}

// drain dispatches and runs deliveries (workers at once) until the queue
// is empty or within is up.
func (w *world) drain(workers int, within time.Duration) {
	w.t.Helper()
	w.dispatch()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	go queue.Run(ctx, w.lg.logger(), w.Deliveries, "webhook-delivery", workers, func(ctx context.Context, m queue.Message) error {
		err := w.Deliverer.Handle(ctx, m)
		if err != nil && os.Getenv("DEBUG_DRAIN") != "" {
			w.t.Logf("%s: %v", m.Body, err)
		}
		return err
	})
	for ctx.Err() == nil && w.Deliveries.Len() > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if w.Deliveries.Len() > 0 {
		w.t.Fatalf("deliveries did not drain within %s: %d left", within, w.Deliveries.Len())
	}
}

// matterEvents is a feed page's matter.created events, the type the tests'
// endpoints subscribe to (a matter's client and company raise their own).
func matterEvents(feed []map[string]any) []map[string]any {
	var out []map[string]any
	for _, ev := range feed {
		if ev["event"] == "matter.created" {
			out = append(out, ev)
		}
	}
	return out
}
