package outbox

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// countingQueries is a fresh table whose client counts its Queries (and
// carries more, the test's other options).
// commitEvent writes one pending matter.created event of org, alone in
// its transaction, as a write request does.
func commitEvent(t *testing.T, db *store.DB, org, subject string, data any, at time.Time) {
	t.Helper()
	ev, err := New(org, MatterCreated, subject, data, at)
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Tx()
	Add(tx, ev)
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func countingQueries(t *testing.T, more ...func(*middleware.Stack) error) (*store.DB, *atomic.Int64) {
	var queries atomic.Int64
	count := func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if _, ok := in.Parameters.(*dynamodb.QueryInput); ok {
				queries.Add(1)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
	}
	return storetest.NewDB(t, append([]func(*middleware.Stack) error{count}, more...)...), &queries
}

// TestPollBacksOffWhenIdle: the devserver's poller sweeps every interval
// while sweeps find events, doubles its wait after each that finds none
// (up to IdlePolls intervals), and comes back to one interval on a kick.
// Each sweep is counted by its Queries on DynamoDB Local, one per shard.
func TestPollBacksOffWhenIdle(t *testing.T) {
	t.Parallel()
	db, queries := countingQueries(t)
	shards := int64(ShardsOf(db))
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	tick := clock.NewManual(time.Now())
	d := &Dispatcher{DB: db, Routes: map[Type][]Sink{}, Clock: tick}
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Poll(ctx, kick, time.Second, func(err error) { t.Errorf("sweep: %v", err) })
	}()
	// sweeps waits until n sweeps have been made and the poller waits on
	// its timer again.
	sweeps := func(n int64) {
		t.Helper()
		for ctx.Err() == nil && queries.Load() < n*shards {
			time.Sleep(5 * time.Millisecond)
		}
		if err := tick.AwaitPending(ctx, 1); err != nil || queries.Load() != n*shards {
			t.Fatalf("%d queries, want %d sweeps of %d shards (%v)", queries.Load(), n, shards, err)
		}
	}
	sweeps(1) // at once
	// Idle: the next sweep comes 1, 2, 4, 8 and again 8 s after the last.
	var swept int64 = 1
	for _, wait := range []int{1, 2, 4, 8, 8} {
		if wait > 1 {
			tick.Advance(time.Duration(wait-1) * time.Second)
			sweeps(swept) // not yet
		}
		tick.Advance(time.Second)
		swept++
		sweeps(swept)
	}
	// A write in this process: a sweep at once, then one a second later.
	kick <- struct{}{}
	swept++
	sweeps(swept)
	tick.Advance(time.Second)
	swept++
	sweeps(swept)
	stop()
	<-done
}

// countSink counts what it is sent.
type countSink struct{ n atomic.Int32 }

func (s *countSink) Send(context.Context, string, []byte, time.Duration) error {
	s.n.Add(1)
	return nil
}

// TestPollSweepsTheShardsThisProcessWrote: with its client's writes
// watched (Written), the poller dispatches an event the process commits at
// once, reading only that event's shard, and leaves its timer's sweep of
// every shard where it was.
func TestPollSweepsTheShardsThisProcessWrote(t *testing.T) {
	t.Parallel()
	written := NewWritten()
	db, queries := countingQueries(t, written.Watch)
	shards := int64(ShardsOf(db))
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	tick := clock.NewManual(time.Now())
	db.Clock = tick // events' times, which a sweep compares with its own
	sink := &countSink{}
	d := &Dispatcher{DB: db, Routes: map[Type][]Sink{MatterCreated: {sink}}, Clock: tick, Written: written}
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Poll(ctx, nil, time.Second, func(err error) { t.Errorf("sweep: %v", err) })
	}()
	until := func(what string, cond func() bool) {
		t.Helper()
		for ctx.Err() == nil && !cond() {
			time.Sleep(5 * time.Millisecond)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: never (%d queries, %d sent)", what, queries.Load(), sink.n.Load())
		}
	}
	until("the first sweep", func() bool { return queries.Load() == shards })
	if err := tick.AwaitPending(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		tick.Advance(time.Millisecond) // each event after the last (its sequence is a microsecond of the clock's), well before the timer
		commitEvent(t, db, "org", "matter", i, tick.Now())
		until("the event sent, the clock unmoved", func() bool { return sink.n.Load() == int32(i+1) })
	}
	if got := queries.Load(); got > shards+3 {
		t.Fatalf("%d queries after the first sweep for 3 events, want at most 3 (their shards)", got-shards)
	}
	before := queries.Load()
	tick.Advance(time.Second) // the timer's sweep of every shard, as it was set
	until("the timer's sweep", func() bool { return queries.Load() >= before+shards })
	stop()
	<-done
	if sink.n.Load() != 3 {
		t.Fatalf("%d sends, want 3", sink.n.Load())
	}
}

func TestPendingShardOfAWrite(t *testing.T) {
	w := NewWritten()
	for _, c := range []struct {
		pk    string
		shard int
		ok    bool
	}{
		{PendingPK(0), 0, true}, {PendingPK(31), 31, true}, {ParkedPK, 0, false}, {"OUTBOX#PENDING#x", 0, false}, {"O#org", 0, false},
	} {
		t.Run(c.pk, func(t *testing.T) {
			shard, ok := pendingShard(map[string]ddbtypes.AttributeValue{"GSI6PK": &ddbtypes.AttributeValueMemberS{Value: c.pk}})
			if shard != c.shard || ok != c.ok {
				t.Fatalf("pendingShard(%s) = %d, %v; want %d, %v", c.pk, shard, ok, c.shard, c.ok)
			}
		})
	}
	w.Mark(3)
	w.Mark(1)
	w.Mark(3)
	if got := w.Take(); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("Take() = %v, want [1 3]", got)
	}
	if got := w.Take(); len(got) != 0 {
		t.Fatalf("a second Take() = %v, want none", got)
	}
}
