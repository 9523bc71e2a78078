package app_test

import (
	"context"
	"encoding/json"
	"errors"
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

func (s *countingSink) Send(_ context.Context, body []byte, _ time.Duration) error {
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
	for shard := range outbox.Shards {
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
	d := &outbox.Dispatcher{DB: db, Routes: map[string][]outbox.Sink{outbox.MatterCreated: {sink}}}
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
			if err := app.DispatcherHandler(d)(ctx, json.RawMessage(`{"source":"aws.scheduler"}`)); err != nil {
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
	d := &outbox.Dispatcher{DB: db, Routes: map[string][]outbox.Sink{outbox.MatterCreated: {sink}}}
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
