package apitest

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/openapi/conformance"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/webhook"
)

// Receiver is a real HTTPS subscriber for webhook tests: it records the
// deliveries it gets, checks each against the OpenAPI document's webhooks
// (a mismatch fails the test), and answers with the next status of its
// script (the last one repeats).
type Receiver struct {
	// Srv is the receiver's TLS server (its URL, its certificate).
	Srv    *httptest.Server
	mu     sync.Mutex
	got    []Delivery
	script []int
}

// Delivery is one request a Receiver got.
type Delivery struct {
	Header http.Header
	Body   []byte
}

// NewReceiver starts a Receiver answering script's statuses in turn; it
// stops when the test ends.
func NewReceiver(t testing.TB, script ...int) *Receiver {
	rc := &Receiver{script: script}
	checker, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range checker.Problems() {
			t.Errorf("OpenAPI mismatch: %s", p)
		}
	})
	rc.Srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		checker.CheckDelivery(r, b) // every delivery as the document's webhooks describe it
		rc.mu.Lock()
		rc.got = append(rc.got, Delivery{r.Header.Clone(), b})
		status := rc.script[min(len(rc.got), len(rc.script))-1]
		rc.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(strings.Repeat("x", 100_000))) // only a little of this is read
	}))
	t.Cleanup(rc.Srv.Close)
	return rc
}

// Answer replaces the receiver's script: from now on it answers these
// statuses in turn, counted from its first delivery (the last repeats).
func (rc *Receiver) Answer(script ...int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.script = script
}

// Deliveries is what the receiver got so far, in order.
func (rc *Receiver) Deliveries() []Delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Delivery(nil), rc.got...)
}

// HookEnv is an API test Env whose delivery worker trusts the receiver's
// self-signed CA, as WEBHOOK_CA_FILE does, retries at once, and a
// dispatcher routed as the real wiring routes: company.enrich to
// enrichment (a queue no one consumes here), the webhook types to the
// fan-out onto the Env's delivery queue.
func HookEnv(t testing.TB, rc *Receiver) (*Env, *outbox.Dispatcher) {
	e := New(t, Options{RateLimit: 10000})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := webhook.NewHTTPClient(ca, true)
	if err != nil {
		t.Fatal(err)
	}
	e.Deliverer.Client, e.Deliverer.Schedule = client, []time.Duration{0, 0, 0, 0}
	routes := map[outbox.Type][]outbox.Sink{outbox.CompanyEnrich: {queue.NewMemory(time.Minute)}}
	for _, typ := range outbox.Types {
		routes[typ] = []outbox.Sink{&webhook.Fanout{Store: e.Deliverer.Store, Queue: e.Deliveries}}
	}
	return e, &outbox.Dispatcher{DB: e.DB, Routes: routes}
}

// Trust makes the Env's deliveries trust these TLS receivers (and only
// them, besides the system roots); it returns the transport, for more.
func Trust(e *Env, servers ...*httptest.Server) *http.Transport {
	pool, _ := webhook.NewHTTPClient("", true)
	tr := pool.Transport.(*http.Transport)
	for _, s := range servers {
		tr.TLSClientConfig.RootCAs.AddCert(s.Certificate())
	}
	e.Deliverer.Client = pool
	return tr
}

// DeliverAll dispatches pending events and runs deliveries until the
// queue is empty; workers > 1 runs them concurrently.
func DeliverAll(t testing.TB, e *Env, d *outbox.Dispatcher, workers int) {
	t.Helper()
	ctx := context.Background()
	if _, err := d.Sweep(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for rounds := 0; e.Deliveries.Len() > 0; rounds++ {
		if rounds > 200 {
			t.Fatal("deliveries do not drain")
		}
		msgs, _ := e.Deliveries.Receive(ctx, 10, 100*time.Millisecond)
		var wg sync.WaitGroup
		sem := make(chan struct{}, workers)
		for _, m := range msgs {
			wg.Add(1)
			sem <- struct{}{}
			go func(m queue.Message) {
				defer wg.Done()
				defer func() { <-sem }()
				// A handling that fails comes back, as SQS redelivers it:
				// under load a store call can miss its deadline (load 30:
				// a GetItem of the endpoint did). Three tries, then it is
				// the test's failure.
				var err error
				for try := 0; try < 3; try++ {
					if err = e.Deliverer.Handle(ctx, m); err == nil {
						break
					}
					t.Logf("a delivery handling failed and is redelivered: %v", err)
				}
				if err != nil {
					t.Error(err)
				}
				_ = e.Deliveries.Delete(ctx, m)
			}(m)
		}
		wg.Wait()
	}
}

// Subscribe creates a webhook endpoint for url and types with key and
// returns its id and signing secret (the test fails on anything but 201).
func Subscribe[T ~string](t testing.TB, e *Env, key, url string, types ...T) (id, secret string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"url": url, "event_types": types})
	r := e.Do("POST", "/api/v1/webhooks", key, strings.NewReader(string(b)))
	MustStatus(t, r, 201)
	return r.Body["data"].(map[string]any)["id"].(string), r.Body["secret"].(string)
}
