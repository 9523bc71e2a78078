package outbox

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// TestPollBacksOffWhenIdle: the devserver's poller sweeps every interval
// while sweeps find events, doubles its wait after each that finds none
// (up to IdlePolls intervals), and comes back to one interval on a kick.
// Each sweep is counted by its Queries on DynamoDB Local, one per shard.
func TestPollBacksOffWhenIdle(t *testing.T) {
	t.Parallel()
	var queries atomic.Int64
	db := storetest.NewDB(t, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if _, ok := in.Parameters.(*dynamodb.QueryInput); ok {
				queries.Add(1)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
	})
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
