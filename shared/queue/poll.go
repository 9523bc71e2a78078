package queue

import (
	"context"
	"time"
)

// The parts the in-process queues (Memory, Table) share: a receive that
// waits for its first message, a wake-up for it, and SendBatch as sends.

// receiveWaiting calls take until it returns messages or an error, or wait
// has passed; between calls it sleeps at most poll, and wakes at once when
// a send in this process signals wake.
func receiveWaiting(ctx context.Context, wait, poll time.Duration, wake <-chan struct{}, take func() ([]Message, error)) ([]Message, error) {
	deadline := time.Now().Add(wait)
	for {
		out, err := take()
		if err != nil || len(out) > 0 {
			return out, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		case <-time.After(min(left, poll)):
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
		if err := send(ctx, group, b, delayOf(delays, i)); err != nil {
			unsent := make([]int, 0, len(bodies)-i)
			for j := i; j < len(bodies); j++ {
				unsent = append(unsent, j)
			}
			return &BatchError{Unsent: unsent, Err: err}
		}
	}
	return nil
}
