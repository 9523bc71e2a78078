package queue

import (
	"context"
	"time"

	"github.com/practice-api/practice-api/shared/clock"
)

// The parts the in-process queues (Memory, Table) share: a receive that
// waits for its first message, a wake-up for it, and SendBatch as sends.

// receiveWaiting calls take until it returns messages or an error, or wait
// has passed; between calls it sleeps at most poll, and wakes at once when
// a send in this process signals wake. The wait and the poll are the wall
// clock's, whatever the queue's Clock: they bound a call, as SQS's
// WaitTimeSeconds does, so a receive on a manual clock that no test moves
// still returns (what is due is the queue's Clock's to say, in take).
func receiveWaiting(ctx context.Context, wait, poll time.Duration, wake <-chan struct{}, take func() ([]Message, error)) ([]Message, error) {
	wall := clock.Real{}
	deadline := wall.Now().Add(wait)
	for {
		out, err := take()
		if err != nil || len(out) > 0 {
			return out, err
		}
		left := deadline.Sub(wall.Now())
		if left <= 0 {
			return nil, nil
		}
		t, fired := wall.NewTimer(min(left, poll))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-wake:
			t.Stop()
		case <-fired:
		}
	}
}

// notify wakes one waiting receiver, if any, without blocking.
func notify(wake chan<- struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// sendEach sends each body after its delay; the bodies from the first that
// fails on are the BatchError's.
func sendEach(ctx context.Context, group string, send func(context.Context, string, []byte, time.Duration) error, bodies [][]byte, delays []time.Duration) error {
	for i, b := range bodies {
		if err := send(ctx, group, b, DelayOf(delays, i)); err != nil {
			unsent := make([]int, 0, len(bodies)-i)
			for j := i; j < len(bodies); j++ {
				unsent = append(unsent, j)
			}
			return &BatchError{Unsent: unsent, Err: err}
		}
	}
	return nil
}
