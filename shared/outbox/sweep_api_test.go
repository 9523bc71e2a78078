package outbox_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
)

// flakySink fails its first n sends, as a queue outage would.
type flakySink struct {
	fails atomic.Int64
	q     *queue.Memory
}

func (f *flakySink) Send(ctx context.Context, group string, body []byte, d time.Duration) error {
	if f.fails.Add(-1) >= 0 {
		return errors.New("queue unavailable")
	}
	return f.q.Send(ctx, group, body, d)
}

// TestStuckOutboxEventsAreSweptAgain: a dispatch that dies at the queue send
// leaves the event pending, and the next sweep sends it; a dispatch that
// dies after the send but before marking sends it again (at least once).
func TestStuckOutboxEventsAreSweptAgain(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	ctx := context.Background()
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("11111111"))
	im.Matter(cl, "")
	q := queue.NewMemory(time.Minute)
	sink := &flakySink{q: q}
	sink.fails.Store(1)
	d := &outbox.Dispatcher{DB: e.DB, Routes: map[outbox.Type][]outbox.Sink{outbox.MatterCreated: {sink}}}
	if _, err := d.Sweep(ctx, 0); err == nil || q.Len() != 0 {
		t.Fatalf("first sweep: %v, %d queued", err, q.Len())
	}
	n, err := d.Sweep(ctx, 0)
	if err != nil || q.Len() != 1 {
		t.Fatalf("second sweep: %d dispatched, %d queued, %v", n, q.Len(), err)
	}
	if n, _ := d.Sweep(ctx, 0); n != 0 || q.Len() != 1 {
		t.Fatalf("a dispatched event was sent again: %d", n)
	}
	// The mark fails after the send (Dispatch's second store call, after the
	// claim): the event stays pending and goes out again on the first sweep
	// after the claim's lease.
	im.Matter(cl, "")
	lease := clock.NewManual(time.Now()) // from here the dispatcher's time moves only by the test
	d.Clock = lease
	var pending outbox.Event
	for _, it := range e.Items(org)["event"] {
		var ev outbox.Event
		if err := store.Unmarshal(it, &ev); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(ev.GSI6PK, "OUTBOX#PENDING#") { // not the company's event, parked: this dispatcher has no route for it
			pending = ev
		}
	}
	e.Faults.Arm(apitest.FailBefore, 2)
	_, err = d.Dispatch(ctx, pending)
	e.Faults.Disarm()
	if err == nil || q.Len() != 2 {
		t.Fatalf("dispatch with a lost mark: %v, %d queued", err, q.Len())
	}
	if n, err := d.Sweep(ctx, 0); err != nil || n != 0 || q.Len() != 2 {
		t.Fatalf("within the lease the claimed event waits: %d, %d queued, %v", n, q.Len(), err)
	}
	lease.Advance(outbox.ClaimLease - time.Second)
	if n, err := d.Sweep(ctx, 0); err != nil || n != 0 || q.Len() != 2 {
		t.Fatalf("a second before the lease ends the claimed event waits: %d, %d queued, %v", n, q.Len(), err)
	}
	lease.Advance(2 * time.Second)
	if n, err := d.Sweep(ctx, 0); err != nil || n != 1 || q.Len() != 3 {
		t.Fatalf("resend after the lost mark: %d, %d queued, %v", n, q.Len(), err)
	}
}
