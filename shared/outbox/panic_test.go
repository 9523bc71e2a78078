package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// panicSink panics on the first send of one organisation's events.
type panicSink struct {
	org  string
	hits atomic.Int32
	sent atomic.Int32
}

func (s *panicSink) Send(_ context.Context, group string, body []byte, _ time.Duration) error {
	var m Message
	_ = json.Unmarshal(body, &m)
	if group == s.org && s.hits.Add(1) == 1 {
		panic("a sink met an item it did not expect: 010190-1234")
	}
	s.sent.Add(1)
	return nil
}

// TestAPanickingDispatchIsCarriedAndPollGoesOn: a panic in one event's
// dispatch (a goroutine of the round's) comes back to the caller of
// DispatchAll as a *store.Panic, not a crash of the process; Poll (the
// devserver's sweeper) reports it as the sweep's error, with its stack,
// and its next sweep dispatches what is left.
func TestAPanickingDispatchIsCarriedAndPollGoesOn(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := context.Background()
	var evs []Event
	for i := range 6 {
		commitEvent(t, db, fmt.Sprint("org", i%2), "n", i, time.Now())
	}
	for i := range 2 { // as the stream hands them over (TestADispatchRoundSendsItsEventsAtOnce)
		page, err := Feed(ctx, db, FeedQuery{Org: fmt.Sprint("org", i), Limit: 100, Now: time.Now().Add(time.Minute), Retention: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Events {
			ev := Event{ID: m.ID, OrgID: m.OrgID, Type: m.Type, Seq: m.Sequence}
			ev.PK, ev.SK, ev.GSI6PK = "O#"+m.OrgID, SeqSK(m.Sequence), pendingPKOf(m.ID, DefaultShards)
			evs = append(evs, ev)
		}
	}
	s := &panicSink{org: "org0"}
	d := &Dispatcher{DB: db, Routes: map[Type][]Sink{MatterCreated: {s}}}
	p := func() (p any) {
		defer func() { p = recover() }()
		_, _ = d.DispatchAll(ctx, evs)
		return nil
	}()
	if _, ok := p.(*store.Panic); !ok || !strings.Contains(fmt.Sprint(p), "did not expect") {
		t.Fatalf("DispatchAll's panic: %#v, want the sink's, carried", p)
	}

	commit := func(org string) {
		commitEvent(t, db, org, "n", 99, time.Now())
	}
	s.hits.Store(0) // the next send of org0's panics again: in Poll's sweep
	commit("org0")
	pollCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	var mu sync.Mutex
	var errs []error
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	tick := clock.NewManual(time.Now()) // the poller's minute passes when the test says
	d.Clock = tick
	go func() {
		defer close(done)
		d.Poll(pollCtx, kick, time.Minute, func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() })
	}()
	reported := func() []error { mu.Lock(); defer mu.Unlock(); return append([]error(nil), errs...) }
	for pollCtx.Err() == nil && len(reported()) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	base := s.sent.Load()
	commit("org1") // after the panic, Poll sweeps on: at its next tick
	tick.Advance(time.Minute)
	for pollCtx.Err() == nil && s.sent.Load() == base {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done
	if s.sent.Load() == base {
		t.Fatal("Poll sent nothing after the panic")
	}
	if e := reported(); len(e) == 0 || !strings.Contains(e[0].Error(), "sweep panicked") || !strings.Contains(e[0].Error(), "goroutine") {
		t.Fatalf("Poll's errors: %v; want the sweep's panic with its stack", e)
	}
}
