package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/store/storetest"
)

// slowSink takes wait per send, fails every send of the organisations in
// failing, and keeps the peak of sends at once. With meet set, a send
// instead waits until meet sends are in flight at once (at most 10 s, once:
// sends that never meet then go on one by one), so a test sees sends
// overlap without timing them.
type slowSink struct {
	wait    time.Duration
	meet    int32
	met     chan struct{}
	metOnce sync.Once
	failing map[string]bool
	now     atomic.Int32
	peak    atomic.Int32
	mu      sync.Mutex
	sent    map[string]int // event id -> sends
	reads   atomic.Int32   // a per-round read each event asks for
}

func (s *slowSink) Send(ctx context.Context, group string, body []byte, _ time.Duration) error {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	_, _ = RoundOf(ctx).Once("read "+group, func() (any, error) { s.reads.Add(1); return nil, nil })
	if s.meet > 0 {
		if n >= s.meet {
			s.metOnce.Do(func() { close(s.met) })
		}
		select {
		case <-s.met:
		case <-time.After(10 * time.Second):
			s.metOnce.Do(func() { close(s.met) })
		}
	} else {
		time.Sleep(s.wait)
	}
	if s.failing[group] {
		return errors.New("the queue refuses it")
	}
	var m Message
	_ = json.Unmarshal(body, &m)
	s.mu.Lock()
	s.sent[m.ID]++
	s.mu.Unlock()
	return nil
}

// TestADispatchRoundSendsItsEventsAtOnce (#40, item 5): a stream batch of
// 64 events of four organisations, whose sends take 50 ms each, run by two
// dispatchers and a sweep at the same time: the events of the organisation
// whose sends fail stay pending, the others are sent once each (the claim
// decides). Then a round of 16 events whose sends take 300 ms goes at once
// (one after another it took 4.8 s), at most 16 at a time, and what the
// sink reads for their organisation is read once in the round.
func TestADispatchRoundSendsItsEventsAtOnce(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := context.Background()
	var evs []Event
	for i := range 64 {
		commitEvent(t, db, fmt.Sprint("org", i%4), "n", i, time.Now())
	}
	for i := range 4 {
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
	s := &slowSink{wait: 50 * time.Millisecond, failing: map[string]bool{"org3": true}, sent: map[string]int{}}
	d := &Dispatcher{DB: db, Routes: map[Type][]Sink{MatterCreated: {s}}}
	var wg sync.WaitGroup
	var sentByAll atomic.Int32
	var errs [2]error
	for i := range 2 {
		wg.Go(func() {
			n, err := d.DispatchAll(ctx, evs)
			sentByAll.Add(int32(n))
			errs[i] = err
		})
	}
	wg.Go(func() {
		n, _ := d.Sweep(ctx, 0)
		sentByAll.Add(int32(n))
	})
	wg.Wait()
	if sentByAll.Load() != 48 || len(s.sent) != 48 {
		t.Fatalf("sent %d (the sink has %d events); want the 48 of the three organisations that take them", sentByAll.Load(), len(s.sent))
	}
	for id, n := range s.sent {
		if n != 1 {
			t.Fatalf("event %s sent %d times", id, n)
		}
	}
	var failed *FailedEvents
	if !errors.As(errs[0], &failed) && !errors.As(errs[1], &failed) {
		t.Fatalf("the refused events were not reported: %v %v", errs[0], errs[1])
	}
	if s.peak.Load() > 3*int32(DefaultDispatchConcurrency) {
		t.Fatalf("%d sends at once across the three rounds, over their bound", s.peak.Load())
	}
	// One round alone, 16 events whose sends each wait until 8 are in
	// flight: at once, not one after another (then the first waits out its
	// 10 s and the peak stays 1), and the sink's read for their
	// organisation made once.
	s2 := &slowSink{meet: 8, met: make(chan struct{}), sent: map[string]int{}}
	var pending []Event
	for _, ev := range evs {
		if ev.OrgID == "org3" {
			pending = append(pending, ev)
		}
	}
	d2 := &Dispatcher{DB: db, Routes: map[Type][]Sink{MatterCreated: {s2}}}
	if n, err := d2.DispatchAll(ctx, pending); n != 16 || err != nil {
		t.Fatalf("the pending 16: %d, %v", n, err)
	}
	if s2.peak.Load() < 8 || s2.peak.Load() > int32(DefaultDispatchConcurrency) || s2.reads.Load() != 1 {
		t.Fatalf("16 events: %d at once, %d reads; want them at once (8 to 16), one read", s2.peak.Load(), s2.reads.Load())
	}
	t.Logf("16 events dispatched, %d at once", s2.peak.Load())
}
