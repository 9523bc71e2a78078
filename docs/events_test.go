package docs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/webhook"
	"github.com/practice-api/practice-api/shared/webhook/signature"
)

// eventRow is a row of api.md's table of events: a change and the event
// types it raises.
type eventRow struct {
	change string
	events []string
}

// eventRows reads the table "Which change raises which event" of api.md.
func eventRows(t *testing.T) []eventRow {
	t.Helper()
	raw, err := os.ReadFile("api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "### Which change raises which event\n")
	if !ok {
		t.Fatal("api.md has no section Which change raises which event")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	known := outbox.Names(outbox.Types)
	var rows []eventRow
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "Change" {
			continue
		}
		r := eventRow{change: strings.TrimSpace(cells[1])}
		for _, m := range regexp.MustCompile("`([a-z_.]+)`").FindAllStringSubmatch(cells[3], -1) {
			if slices.Contains(known, m[1]) && !slices.Contains(r.events, m[1]) {
				r.events = append(r.events, m[1])
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// world is one organisation of the test, with a client, a matter and an
// approved time entry to change, made before the change under test.
type world struct {
	e       *apitest.Env
	org     string
	key     string
	client  string
	matter  string
	entries []string // approved
	now     time.Time
}

func (w *world) post(t *testing.T, path, body string) map[string]any {
	t.Helper()
	idem := fmt.Sprintf("k-%d", time.Now().UnixNano())
	r := w.e.Post(path, w.key, idem, body)
	// A store that is briefly unavailable (a loaded machine's DynamoDB
	// Local) answers 503: the same request again, as its message says.
	for try := 0; r.Status == 503 && try < 5; try++ {
		time.Sleep(time.Second)
		r = w.e.Post(path, w.key, idem, body)
	}
	if r.Status != 201 && r.Status != 200 {
		t.Fatalf("POST %s: %d %s", path, r.Status, r.Raw)
	}
	return r.Body["data"].(map[string]any)
}

func (w *world) person(t *testing.T) string {
	return w.post(t, "/api/v1/people", fmt.Sprintf(`{"name":"Ida Holm","email":"ida-%d@example.dk"}`, time.Now().UnixNano()))["id"].(string)
}

func (w *world) company(t *testing.T, cvr string) string {
	return w.post(t, "/api/v1/companies", `{"name":"Nordlys ApS","cvr":"`+cvr+`"}`)["id"].(string)
}

// invoice creates an invoice of the world's matter in status st, billing
// its approved entries when bill.
func (w *world) invoice(t *testing.T, st billing.Status, bill bool) billing.Invoice {
	t.Helper()
	lines := []billing.Line{{Description: "Rådgivning", Amount: 100000}}
	if bill {
		lines = nil
		for _, id := range w.entries {
			lines = append(lines, billing.Line{Description: "Timer", Amount: 50000, TimeEntryID: id})
		}
	}
	v, err := billing.NewStore(w.e.DB).Create(context.Background(), w.org, billing.NewInvoice{MatterID: w.matter, IssueDate: "2025-03-31", Lines: lines, Status: st}, w.now)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// scenarios make each change of the table; a scenario prepares what it
// needs with prepare (its events are not the change's) and then makes the
// change in change.
type scenario struct {
	prepare func(t *testing.T, w *world) any
	change  func(t *testing.T, w *world, prepared any)
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

var scenarios = map[string]scenario{
	"A person is created": {change: func(t *testing.T, w *world, _ any) { w.person(t) }},
	"A company is created": {change: func(t *testing.T, w *world, _ any) {
		w.company(t, "12340002")
	}},
	"A company's enrichment records an outcome: the register's snapshot arrived, the lookup failed, or a retry is scheduled": {
		prepare: func(t *testing.T, w *world) any { return w.company(t, "12340003") },
		change: func(t *testing.T, w *world, id any) {
			// No register configured: the outcome is skipped, recorded on
			// the company with its event.
			job, _ := json.Marshal(outbox.Message{ID: id.(string), OrgID: w.org, Type: outbox.CompanyEnrich,
				Data: json.RawMessage(`{"company":{"id":"` + id.(string) + `","cvr":"x"}}`)})
			en := &party.Enricher{Store: party.NewStore(w.e.DB), Queue: queue.NewMemory(time.Minute)}
			if err := en.Handle(context.Background(), queue.Message{Body: job}); err != nil {
				t.Fatal(err)
			}
		}},
	"A client engagement is created": {
		prepare: func(t *testing.T, w *world) any { return w.person(t) },
		change: func(t *testing.T, w *world, p any) {
			w.post(t, "/api/v1/clients", `{"person_id":"`+p.(string)+`"}`)
		}},
	"A client's KYC status or expiry changes": {change: func(t *testing.T, w *world, _ any) {
		must[party.Client](t)(party.NewStore(w.e.DB).SetKYC(context.Background(), w.org, w.client, party.KYCRejected, time.Time{}, w.now))
	}},
	"A matter is created": {change: func(t *testing.T, w *world, _ any) {
		w.post(t, "/api/v1/matters", `{"client_id":"`+w.client+`"}`)
	}},
	"A matter is closed": {change: func(t *testing.T, w *world, _ any) {
		must[matter.Matter](t)(matter.NewStore(w.e.DB).SetStatus(context.Background(), w.org, w.matter, matter.Closed, w.now))
	}},
	"A matter's status moves otherwise: activated, made dormant, reopened, archived": {change: func(t *testing.T, w *world, _ any) {
		must[matter.Matter](t)(matter.NewStore(w.e.DB).SetStatus(context.Background(), w.org, w.matter, matter.Dormant, w.now))
	}},
	"A time entry is created": {change: func(t *testing.T, w *world, _ any) {
		w.post(t, "/api/v1/time-entries", `{"matter_id":"`+w.matter+`","date":"2025-03-03","duration_minutes":30}`)
	}},
	"A time entry's status moves: submitted, approved, sent back, written off": {change: func(t *testing.T, w *world, _ any) {
		must[timeentry.TimeEntry](t)(timeentry.NewStore(w.e.DB).SetStatus(context.Background(), w.org, w.entries[0], timeentry.Submitted, w.now))
	}},
	"An invoice is created as a draft or approved": {change: func(t *testing.T, w *world, _ any) { w.invoice(t, billing.Draft, false) }},
	"An invoice is created as sent":                {change: func(t *testing.T, w *world, _ any) { w.invoice(t, billing.Sent, false) }},
	"An invoice is created with lines that bill time entries": {change: func(t *testing.T, w *world, _ any) {
		w.invoice(t, billing.Draft, true)
	}},
	"An invoice is sent": {
		prepare: func(t *testing.T, w *world) any { return w.invoice(t, billing.Approved, false).ID },
		change: func(t *testing.T, w *world, id any) {
			must[billing.Invoice](t)(billing.NewStore(w.e.DB).SetStatus(context.Background(), w.org, id.(string), billing.Sent, w.now))
		}},
	"An invoice is paid in full": {
		prepare: func(t *testing.T, w *world) any { return w.invoice(t, billing.Sent, false).ID },
		change: func(t *testing.T, w *world, id any) {
			must[billing.Invoice](t)(billing.NewStore(w.e.DB).SetStatus(context.Background(), w.org, id.(string), billing.Paid, w.now))
		}},
	"An invoice's status moves otherwise: approved, back to draft, overdue, partially paid, credited": {
		prepare: func(t *testing.T, w *world) any { return w.invoice(t, billing.Sent, false).ID },
		change: func(t *testing.T, w *world, id any) {
			must[billing.Invoice](t)(billing.NewStore(w.e.DB).SetStatus(context.Background(), w.org, id.(string), billing.Overdue, w.now))
		}},
	"An invoice is cancelled": {
		prepare: func(t *testing.T, w *world) any { return w.invoice(t, billing.Draft, true).ID },
		change: func(t *testing.T, w *world, id any) {
			must[billing.Invoice](t)(billing.NewStore(w.e.DB).SetStatus(context.Background(), w.org, id.(string), billing.Cancelled, w.now))
		}},
	"A document is recorded in the register": {change: func(t *testing.T, w *world, _ any) {
		must[document.Document](t)(document.NewStore(w.e.DB).Create(context.Background(), w.org,
			document.NewDocument{MatterID: w.matter, Name: "Aftale", Filename: "aftale.pdf", MimeType: "application/pdf", SizeBytes: 10}, w.now))
	}},
	"A document's signing flow is sealed": {
		prepare: func(t *testing.T, w *world) any {
			return must[document.Document](t)(document.NewStore(w.e.DB).Create(context.Background(), w.org,
				document.NewDocument{MatterID: w.matter, Name: "Forlig", Filename: "forlig.pdf", MimeType: "application/pdf", SizeBytes: 10}, w.now)).ID
		},
		change: func(t *testing.T, w *world, id any) {
			must[document.SigningFlow](t)(document.NewStore(w.e.DB).Seal(context.Background(), w.org, id.(string), w.now))
		}},
	"A webhook endpoint is turned off after 20 failed deliveries in a row": {
		prepare: func(t *testing.T, w *world) any {
			failing := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { rw.WriteHeader(500) }))
			t.Cleanup(failing.Close)
			r := w.e.Post("/api/v1/webhooks", w.key, "", `{"url":"`+failing.URL+`/hooks","event_types":["document.created"]}`)
			if r.Status != 201 {
				t.Fatalf("subscribe: %d %s", r.Status, r.Raw)
			}
			return r.Body["data"].(map[string]any)["id"].(string)
		},
		change: func(t *testing.T, w *world, endpoint any) {
			// Twenty events, five failed attempts each: a failed delivery
			// is an event whose attempts are exhausted (#40), and the
			// twentieth turns the endpoint off. Their own document.created
			// are not the change's: they are left out of what it raised.
			for range webhook.DisableAfter {
				must[document.Document](t)(document.NewStore(w.e.DB).Create(context.Background(), w.org,
					document.NewDocument{MatterID: w.matter, Name: "Bilag", Filename: "bilag.pdf", MimeType: "application/pdf", SizeBytes: 10}, w.now))
			}
			deliver(t, w.e, w.org)
			ep := w.e.Get("/api/v1/webhooks/"+endpoint.(string), w.key).Body["data"].(map[string]any)
			if ep["is_active"] != false {
				t.Fatalf("the endpoint is still on: %v", ep)
			}
		}},
}

// configuration are the table's rows that raise no event, and why the test
// makes none of them.
var configuration = []string{
	"A webhook endpoint is created, changed, rotated or deleted",
	"An organisation, a key or a limit is made or changed",
	"Demo data is seeded",
}

// deliver dispatches the organisation's pending events to its endpoints
// and runs their deliveries (every attempt at once) until none is left.
func deliver(t *testing.T, e *apitest.Env, org string) {
	t.Helper()
	ctx := context.Background()
	deliveries := queue.NewMemory(time.Minute)
	// A short claim lease: a handling that failed midway (a deadline
	// missed under load) leaves its attempt claimed, and its retry below
	// waits the lease out ("being sent by another worker" until then).
	d := &webhook.Deliverer{Store: e.Deliverer.Store, Queue: deliveries, Schedule: []time.Duration{0, 0, 0, 0}, Client: must[*http.Client](t)(webhook.NewHTTPClient("", true)), ClaimLease: 2 * time.Second}
	routes := map[outbox.Type][]outbox.Sink{}
	for _, typ := range outbox.Types {
		routes[typ] = []outbox.Sink{&webhook.Fanout{Store: e.Deliverer.Store, Queue: deliveries}}
	}
	disp := &outbox.Dispatcher{DB: e.DB, Routes: routes}
	for range 20 {
		if _, err := disp.Sweep(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if deliveries.Len() == 0 {
			return
		}
		for deliveries.Len() > 0 {
			msgs, err := deliveries.Receive(ctx, 10, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				// A failed handling comes back, as on the queue: under a
				// loaded make test the engine misses a call's deadline
				// now and then (deliveries are made for redelivery).
				err := d.Handle(ctx, m)
				for try := 0; err != nil && try < 5; try++ {
					time.Sleep(time.Second)
					err = d.Handle(ctx, m)
				}
				if err != nil {
					t.Fatal(err)
				}
				_ = deliveries.Delete(ctx, m)
			}
		}
	}
}

// feedAfter reads the organisation's feed after sequence after, every
// event committed (no settle time).
func feedAfter(t *testing.T, e *apitest.Env, org string, after int64) ([]outbox.Message, int64) {
	t.Helper()
	var out []outbox.Message
	for {
		page, err := outbox.Feed(context.Background(), e.DB, outbox.FeedQuery{Org: org, After: after, Limit: 100, Now: time.Now(), Retention: outbox.DefaultFeedRetention})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Events...)
		after = max(after, page.Next)
		if !page.More {
			return out, after
		}
	}
}

// TestTheEventTableIsTheCode: api.md's table of events is what the code
// raises. Every row is made, each in an organisation of its own, four at
// once, beside a refused change in each (which raises nothing): the feed
// then holds exactly the row's event types, each written in one
// transaction with the item it names, with a payload of ids and status
// only; a subscriber of every type receives each of them, signed.
func TestTheEventTableIsTheCode(t *testing.T) {
	t.Parallel()
	rows := eventRows(t)
	e := apitest.New(t, apitest.Options{RateLimit: 100000})
	// Every transaction the store is sent, for the same-transaction check.
	var mu sync.Mutex
	var txs []*dynamodb.TransactWriteItemsInput
	e.Faults.Delay(func(in any) time.Duration {
		if tx, ok := in.(*dynamodb.TransactWriteItemsInput); ok {
			mu.Lock()
			txs = append(txs, tx)
			mu.Unlock()
		}
		return 0
	})
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.change] = true
		if _, ok := scenarios[r.change]; !ok && !slices.Contains(configuration, r.change) {
			t.Errorf("api.md's row %q has no scenario in this test", r.change)
		}
		if slices.Contains(configuration, r.change) && len(r.events) > 0 {
			t.Errorf("api.md's row %q names events but is configuration here", r.change)
		}
	}
	for name := range scenarios {
		if !seen[name] {
			t.Errorf("the scenario %q has no row in api.md", name)
		}
	}
	// Every type of the feed is raised by some row.
	raisedByRows := map[string]bool{}
	for _, r := range rows {
		for _, ev := range r.events {
			raisedByRows[ev] = true
		}
	}
	for _, typ := range outbox.Types {
		if !raisedByRows[string(typ)] {
			t.Errorf("no row of api.md's table raises %s", typ)
		}
	}
	if t.Failed() {
		return
	}

	type outcome struct {
		row    eventRow
		org    string
		events []outbox.Message
	}
	results := make([]outcome, len(rows))
	var wg sync.WaitGroup
	// Four organisations at a time: enough to make the changes race, few
	// enough for one DynamoDB Local on a loaded machine.
	slots := make(chan struct{}, 4)
	for i, r := range rows {
		sc, ok := scenarios[r.change]
		if !ok {
			continue
		}
		wg.Add(1)
		go t.Run(fmt.Sprintf("row %d", i), func(t *testing.T) {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			w := &world{e: e.For(t), now: time.Now()}
			w.org = w.e.Org(fmt.Sprintf("Org %d", i))
			w.key = w.e.Key(w.org)
			w.client = w.post(t, "/api/v1/clients", `{"company_id":"`+w.company(t, "12340001")+`"}`)["id"].(string)
			must[party.Client](t)(party.NewStore(w.e.DB).SetKYC(context.Background(), w.org, w.client, party.KYCApproved, time.Time{}, w.now))
			w.matter = w.post(t, "/api/v1/matters", `{"client_id":"`+w.client+`","status":"active","hourly_rate":100000}`)["id"].(string)
			for d := range 2 {
				id := w.post(t, "/api/v1/time-entries", fmt.Sprintf(`{"matter_id":"%s","date":"2025-03-0%d","duration_minutes":60}`, w.matter, d+1))["id"].(string)
				for _, st := range []timeentry.Status{timeentry.Submitted, timeentry.Approved} {
					must[timeentry.TimeEntry](t)(timeentry.NewStore(w.e.DB).SetStatus(context.Background(), w.org, id, st, w.now))
				}
				w.entries = append(w.entries, id)
			}
			var prepared any
			if sc.prepare != nil {
				prepared = sc.prepare(t, w)
			}
			// A refused change first: an archive of an active matter, a
			// draft's approval of an entry of another organisation's id.
			_, err := matter.NewStore(w.e.DB).SetStatus(context.Background(), w.org, w.matter, matter.Archived, w.now)
			_, err2 := timeentry.NewStore(w.e.DB).SetStatus(context.Background(), w.org, "00000000-0000-4000-8000-000000000000", timeentry.Approved, w.now)
			if err == nil || err2 == nil {
				t.Fatalf("refused changes went through: %v, %v", err, err2)
			}
			_, mark := feedAfter(t, w.e, w.org, 0)
			sc.change(t, w, prepared)
			evs, _ := feedAfter(t, w.e, w.org, mark)
			if r.change == "A webhook endpoint is turned off after 20 failed deliveries in a row" {
				evs = slices.DeleteFunc(evs, func(m outbox.Message) bool { return m.Type == outbox.DocumentCreated })
			}
			results[i] = outcome{row: r, org: w.org, events: evs}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// What each change raised, and how.
	personal := regexp.MustCompile(`(?i)"(name|email|phone|cvr|title|description|filename)"`)
	for _, o := range results {
		if o.org == "" {
			continue
		}
		var types []string
		for _, ev := range o.events {
			if !slices.Contains(types, string(ev.Type)) {
				types = append(types, string(ev.Type))
			}
		}
		slices.Sort(types)
		want := slices.Sorted(slices.Values(o.row.events))
		if !slices.Equal(types, want) {
			t.Errorf("%s: raised %v, api.md says %v", o.row.change, types, want)
		}
		for _, ev := range o.events {
			var data map[string]map[string]any
			if err := json.Unmarshal(ev.Data, &data); err != nil || len(data) != 1 {
				t.Errorf("%s: %s's data %s", o.row.change, ev.Type, ev.Data)
				continue
			}
			if personal.Match(ev.Data) {
				t.Errorf("%s: %s carries more than ids and status: %s", o.row.change, ev.Type, ev.Data)
			}
			var named string
			for _, obj := range data {
				named, _ = obj["id"].(string)
			}
			if !sameTransaction(txs, ev.ID, named) {
				t.Errorf("%s: %s %s was not written in one transaction with the item it names (%s)", o.row.change, ev.Type, ev.ID, named)
			}
		}
	}

	// A subscriber of every type receives what the changes raised, once
	// each, signed. One organisation holds a copy of every type: its own
	// changes, made again in a row.
	var got []map[string]any
	var gotMu sync.Mutex
	receiver := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var env map[string]any
		_ = json.Unmarshal(b, &env)
		env["_sig"] = r.Header.Get("Service-Signature")
		env["_body"] = string(b)
		gotMu.Lock()
		got = append(got, env)
		gotMu.Unlock()
	}))
	defer receiver.Close()
	w := &world{e: e, now: time.Now()}
	w.org = e.Org("Subscriber")
	w.key = e.Key(w.org)
	r := e.Post("/api/v1/webhooks", w.key, "", `{"url":"`+receiver.URL+`/hooks","event_types":`+must[string](t)(jsonString(outbox.Names(outbox.Types)))+`}`)
	if r.Status != 201 {
		t.Fatalf("subscribe to every type: %d %s", r.Status, r.Raw)
	}
	secret := r.Body["secret"].(string)
	w.client = w.post(t, "/api/v1/clients", `{"company_id":"`+w.company(t, "12340009")+`"}`)["id"].(string)
	w.matter = w.post(t, "/api/v1/matters", `{"client_id":"`+w.client+`","hourly_rate":100000}`)["id"].(string)
	w.entries = []string{w.post(t, "/api/v1/time-entries", `{"matter_id":"`+w.matter+`","date":"2025-03-01","duration_minutes":60}`)["id"].(string)}
	for _, st := range []timeentry.Status{timeentry.Submitted, timeentry.Approved} {
		must[timeentry.TimeEntry](t)(timeentry.NewStore(e.DB).SetStatus(context.Background(), w.org, w.entries[0], st, w.now))
	}
	inv := w.invoice(t, billing.Approved, true)
	must[billing.Invoice](t)(billing.NewStore(e.DB).SetStatus(context.Background(), w.org, inv.ID, billing.Sent, w.now))
	must[billing.Invoice](t)(billing.NewStore(e.DB).SetStatus(context.Background(), w.org, inv.ID, billing.Paid, w.now))
	must[billing.Invoice](t)(billing.NewStore(e.DB).SetStatus(context.Background(), w.org, inv.ID, billing.Credited, w.now))
	w.person(t)
	scenarios["A company's enrichment records an outcome: the register's snapshot arrived, the lookup failed, or a retry is scheduled"].change(t, w, w.company(t, "12340008"))
	must[party.Client](t)(party.NewStore(e.DB).SetKYC(context.Background(), w.org, w.client, party.KYCApproved, time.Time{}, w.now))
	must[matter.Matter](t)(matter.NewStore(e.DB).SetStatus(context.Background(), w.org, w.matter, matter.Active, w.now))
	doc := must[document.Document](t)(document.NewStore(e.DB).Create(context.Background(), w.org,
		document.NewDocument{MatterID: w.matter, Name: "Aftale", Filename: "a.pdf", MimeType: "application/pdf", SizeBytes: 1}, w.now))
	must[document.SigningFlow](t)(document.NewStore(e.DB).Seal(context.Background(), w.org, doc.ID, w.now))
	must[matter.Matter](t)(matter.NewStore(e.DB).SetStatus(context.Background(), w.org, w.matter, matter.Closed, w.now))
	deliver(t, e, w.org)
	raised, _ := feedAfter(t, e, w.org, 0)
	byID := map[string]map[string]any{}
	for _, env := range got {
		id, _ := env["id"].(string)
		if byID[id] != nil {
			t.Errorf("%v was delivered twice", env["event"])
		}
		byID[id] = env
		if err := signature.Verify(secret, env["_sig"].(string), []byte(env["_body"].(string)), time.Now(), signature.DefaultTolerance); err != nil {
			t.Errorf("%v: %v", env["event"], err)
		}
	}
	delivered := map[string]bool{}
	for _, ev := range raised {
		env := byID[ev.ID]
		if env == nil {
			t.Errorf("%s %s was raised but not delivered", ev.Type, ev.ID)
			continue
		}
		delivered[string(ev.Type)] = true
		if env["event"] != string(ev.Type) || env["sequence"] != float64(ev.Sequence) {
			t.Errorf("%s delivered as %v", ev.Type, env)
		}
	}
	for _, typ := range outbox.Types {
		if typ != outbox.WebhookEndpointDisabled && !delivered[string(typ)] {
			t.Errorf("no %s reached the subscriber of every type (it got %v)", typ, slices.Sorted(maps.Keys(delivered)))
		}
	}
}

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// sameTransaction reports whether one of txs wrote the event with id
// eventID and an item whose id (or key) is named.
func sameTransaction(txs []*dynamodb.TransactWriteItemsInput, eventID, named string) bool {
	str := func(m map[string]ddbtypes.AttributeValue, k string) string {
		v, _ := m[k].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	for _, tx := range txs {
		hasEvent, hasItem := false, false
		for _, it := range tx.TransactItems {
			switch {
			case it.Put != nil && str(it.Put.Item, "kind") == "event":
				hasEvent = hasEvent || str(it.Put.Item, "id") == eventID
			case it.Put != nil:
				hasItem = hasItem || str(it.Put.Item, "id") == named
			case it.Update != nil:
				hasItem = hasItem || strings.HasSuffix(str(it.Update.Key, "SK"), named)
			}
		}
		if hasEvent && hasItem {
			return true
		}
	}
	return false
}
