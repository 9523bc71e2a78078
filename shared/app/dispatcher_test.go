package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// countingSink counts what it is sent, by event id; failFor refuses one.
type countingSink struct {
	mu      sync.Mutex
	sent    map[string]int
	failFor string
}

func (s *countingSink) Send(_ context.Context, _ string, body []byte, _ time.Duration) error {
	var m outbox.Message
	_ = json.Unmarshal(body, &m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.ID == s.failFor {
		return errors.New("queue unavailable")
	}
	s.sent[m.ID]++
	return nil
}

func pendingEvents(t *testing.T, db *store.DB, n int) ([]outbox.Event, []events.DynamoDBEventRecord) {
	t.Helper()
	var evs []outbox.Event
	var items []map[string]ddbtypes.AttributeValue
	var records []events.DynamoDBEventRecord
	for range n {
		ev, err := outbox.New("5eed0000-0000-4000-8000-000000000009", outbox.MatterCreated, "matter", map[string]string{"id": "m"}, time.Now().Add(-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ev = outbox.Pending(db, ev)
		item, _ := store.Marshal(ev)
		img := map[string]events.DynamoDBAttributeValue{}
		for k, v := range item {
			img[k] = events.NewStringAttribute(v.(*ddbtypes.AttributeValueMemberS).Value)
		}
		evs, items = append(evs, ev), append(items, item)
		records = append(records, events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{NewImage: img}})
	}
	if err := db.BatchPut(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	return evs, records
}

func pendingLeft(t *testing.T, db *store.DB) int {
	n := 0
	for shard := range outbox.ShardsOf(db) {
		page, err := db.Query(context.Background(), store.ListQuery{Index: "GSI6", PK: outbox.PendingPK(shard), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
	}
	return n
}

// TestStreamAndScheduleDispatchEachEventOnce: the stream trigger and two
// scheduled sweeps run at once over 200 pending events; each event reaches
// the queue exactly once.
func TestStreamAndScheduleDispatchEachEventOnce(t *testing.T) {
	db := storetest.NewDB(t)
	sink := &countingSink{sent: map[string]int{}}
	d := &outbox.Dispatcher{DB: db, Routes: map[outbox.Type][]outbox.Sink{outbox.MatterCreated: {sink}}}
	evs, records := pendingEvents(t, db, 200)
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := app.DispatchRecords(ctx, d, records); err != nil {
			t.Error(err)
		}
	})
	for range 2 {
		wg.Go(func() {
			if err := app.DispatcherHandler(d, nil, app.Metrics{})(ctx, json.RawMessage(`{"source":"aws.scheduler"}`)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, ev := range evs {
		if sink.sent[ev.ID] != 1 {
			t.Fatalf("event %s sent %d times", ev.ID, sink.sent[ev.ID])
		}
	}
	if len(sink.sent) != 200 || pendingLeft(t, db) != 0 {
		t.Fatalf("%d events sent, %d still pending", len(sink.sent), pendingLeft(t, db))
	}
	if n, err := d.Sweep(ctx, 0); n != 0 || err != nil {
		t.Fatalf("a later sweep sent %d (%v)", n, err)
	}
}

// TestAFailingEventHoldsBackNoOther: one event's queue refuses it; the
// sweep sends the rest, reports the failure, and the next sweep sends it.
func TestAFailingEventHoldsBackNoOther(t *testing.T) {
	db := storetest.NewDB(t)
	evs, _ := pendingEvents(t, db, 30)
	sink := &countingSink{sent: map[string]int{}, failFor: evs[7].ID}
	d := &outbox.Dispatcher{DB: db, Routes: map[outbox.Type][]outbox.Sink{outbox.MatterCreated: {sink}}}
	n, err := d.Sweep(context.Background(), 0)
	if n != 29 || err == nil || pendingLeft(t, db) != 1 {
		t.Fatalf("first sweep: %d sent, err %v, %d pending", n, err, pendingLeft(t, db))
	}
	sink.mu.Lock()
	sink.failFor = ""
	sink.mu.Unlock()
	if n, err := d.Sweep(context.Background(), 0); n != 1 || err != nil || sink.sent[evs[7].ID] != 1 || pendingLeft(t, db) != 0 {
		t.Fatalf("second sweep: %d sent (%v)", n, err)
	}
}

// TestPoisonedEventsArePutAside: an item in the pending index that is not
// an event, an event whose sends always fail and an event of a type no
// route knows hold back none of the others (every shard is swept); each is
// parked once (after MaxDispatchAttempts for the failing one) and counted,
// then left alone by later sweeps; a replay puts it back and the next sweep
// sends it.
func TestPoisonedEventsArePutAside(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := context.Background()
	evs, _ := pendingEvents(t, db, 30)
	sink := &countingSink{sent: map[string]int{}, failFor: evs[3].ID}
	d := &outbox.Dispatcher{DB: db, Routes: map[outbox.Type][]outbox.Sink{outbox.MatterCreated: {sink}}}
	// Not an event: data is a map, not JSON text; and it sits in shard 0.
	bad := map[string]ddbtypes.AttributeValue{
		"PK": &ddbtypes.AttributeValueMemberS{Value: "O#x"}, "SK": &ddbtypes.AttributeValueMemberS{Value: "EVT#broken"},
		"kind": &ddbtypes.AttributeValueMemberS{Value: "event"}, "GSI6PK": &ddbtypes.AttributeValueMemberS{Value: outbox.PendingPK(0)},
		"GSI6SK": &ddbtypes.AttributeValueMemberS{Value: "0000"}, "data": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{}},
	}
	odd, _ := outbox.New("5eed0000-0000-4000-8000-000000000009", "matter.renamed", "matter", map[string]string{"id": "m"}, time.Now().Add(-time.Second))
	oddItem, _ := store.Marshal(outbox.Pending(db, odd))
	if err := db.BatchPut(ctx, []map[string]ddbtypes.AttributeValue{bad, oddItem}); err != nil {
		t.Fatal(err)
	}
	var parked, unknown, unreadable, sent int
	for sweep := 1; sweep <= outbox.MaxDispatchAttempts+2; sweep++ {
		n, err := d.Sweep(ctx, 0)
		sent += n
		var fe *outbox.FailedEvents
		if errors.As(err, &fe) {
			parked, unknown, unreadable = parked+fe.Parked, unknown+fe.UnknownTypes, unreadable+fe.Unreadable
		}
		if sweep == 1 && (n != 29 || fe == nil || fe.Count != 1 || fe.Parked != 2) {
			t.Fatalf("first sweep: %d sent, %+v", n, fe)
		}
	}
	if sent != 29 || parked != 3 || unknown != 1 || unreadable != 1 || pendingLeft(t, db) != 0 {
		t.Fatalf("%d sent, %d parked (%d unknown, %d unreadable), %d pending", sent, parked, unknown, unreadable, pendingLeft(t, db))
	}
	list, err := outbox.Parked(ctx, db, 10)
	if err != nil || len(list) != 3 {
		t.Fatalf("parked: %v %v", list, err)
	}
	for _, ev := range list {
		if ev.ParkedReason == "" || ev.ParkedAt == "" {
			t.Errorf("parked without a reason: %+v", ev)
		}
		if ev.ID == evs[3].ID && (ev.DispatchAttempts != outbox.MaxDispatchAttempts || !strings.Contains(ev.ParkedReason, "queue unavailable")) {
			t.Errorf("the failing event: %+v", ev)
		}
	}
	// Replayed once the queue works, it is sent by the next sweep.
	sink.failFor = ""
	for _, ev := range list {
		if ev.ID == evs[3].ID {
			if ok, err := outbox.Replay(ctx, db, ev); !ok || err != nil {
				t.Fatalf("replay: %v %v", ok, err)
			}
		}
	}
	if n, err := d.Sweep(ctx, 0); n != 1 || err != nil || sink.sent[evs[3].ID] != 1 {
		t.Fatalf("after the replay: %d sent, %v", n, err)
	}
	if left, _ := outbox.Parked(ctx, db, 10); len(left) != 2 {
		t.Fatalf("%d still parked, want 2", len(left))
	}
}

// TestCompanyInsertsStartTheirEnrichment: a company's insert on the stream
// (it writes no outbox event) sends its enrichment job, with the company's
// id and CVR; a batch whose job could not be sent fails as a whole, so the
// stream delivers it again (a company has no other trigger), while an
// event in the same batch, sent already, is not sent twice.
func TestCompanyInsertsStartTheirEnrichment(t *testing.T) {
	db := storetest.NewDB(t)
	enrich := &countingSink{sent: map[string]int{}}
	events2 := &countingSink{sent: map[string]int{}}
	d := &outbox.Dispatcher{DB: db, Routes: map[outbox.Type][]outbox.Sink{outbox.CompanyEnrich: {enrich}, outbox.MatterCreated: {events2}}}
	_, records := pendingEvents(t, db, 1)
	company := func(id string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{NewImage: map[string]events.DynamoDBAttributeValue{
			"PK": events.NewStringAttribute("O#5eed0000-0000-4000-8000-000000000009"), "SK": events.NewStringAttribute("COMPANY#" + id),
			"kind": events.NewStringAttribute("company"), "id": events.NewStringAttribute(id), "cvr": events.NewStringAttribute("12345678"),
			"created_at": events.NewStringAttribute("2026-01-01T00:00:00.000000Z"),
		}}}
	}
	records = append(records, company("c-ok"), company("c-fails"))
	modified := company("c-changed") // an enrichment's own rewrite: not a new company
	modified.EventName = "MODIFY"
	records = append(records, modified)
	enrich.failFor = "c-fails"
	ctx := context.Background()
	n, err := app.DispatchRecords(ctx, d, records)
	var ce *app.CompanyTriggerError
	if !errors.As(err, &ce) || n != 2 {
		t.Fatalf("dispatched %d, err %v: want the event and one company, and the failed company's error", n, err)
	}
	if err := app.DispatcherHandler(d, nil, app.Metrics{})(ctx, mustMarshal(t, events.DynamoDBEvent{Records: records})); err == nil {
		t.Fatal("the invocation succeeded with a company's job unsent: the stream would not deliver it again")
	}
	enrich.failFor = ""
	if err := app.DispatcherHandler(d, nil, app.Metrics{})(ctx, mustMarshal(t, events.DynamoDBEvent{Records: records})); err != nil {
		t.Fatal(err)
	}
	if enrich.sent["c-ok"] < 1 || enrich.sent["c-fails"] != 1 || enrich.sent["c-changed"] != 0 {
		t.Fatalf("enrichment jobs %v", enrich.sent)
	}
	for id, k := range events2.sent {
		if k != 1 {
			t.Fatalf("event %s sent %d times over the retried batches", id, k)
		}
	}
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
