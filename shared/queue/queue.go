// Package queue is the work-queue port of the background jobs (company
// enrichment, webhook delivery): SQS in AWS, an in-process adapter in the
// devserver, both behind Queue. Delivery is at least once.
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/practice-api/practice-api/shared/clock"
)

// MaxDelay is the longest delay a Send may ask for (SQS's DelaySeconds limit).
const MaxDelay = 15 * time.Minute

// Message is one received message; Receipt identifies this receipt of it.
// Group is the group it was sent with (SQS's MessageGroupId).
type Message struct {
	ID           string
	Body         []byte
	Receipt      string
	ReceiveCount int
	Group        string
}

// Queue is a work queue with visibility timeouts. Every message is sent
// with a group, its tenant: on SQS the MessageGroupId of a fair queue (a
// standard queue whose messages carry one), so that a tenant that floods
// the queue or holds its consumers does not delay the others (see Fair).
// Our groups are organisations.
type Queue interface {
	// Send enqueues body in group, visible after delay (at most MaxDelay).
	Send(ctx context.Context, group string, body []byte, delay time.Duration) error
	// SendBatch enqueues bodies in group, in as few calls as the queue
	// allows, each visible at once or, when delays are given (one per
	// body, each at most MaxDelay), after its own delay; it returns an
	// error when any of them could not be sent (after retrying those),
	// having sent the others: a *BatchError says which.
	SendBatch(ctx context.Context, group string, bodies [][]byte, delays ...time.Duration) error
	// Receive waits up to wait for up to max visible messages and hides them
	// for the queue's visibility timeout.
	Receive(ctx context.Context, max int, wait time.Duration) ([]Message, error)
	// Delete acknowledges a message for good.
	Delete(ctx context.Context, m Message) error
}

// ErrDelayTooLong is returned for a delay beyond MaxDelay.
var ErrDelayTooLong = errors.New("queue: delay beyond 15 minutes")

// BatchError is a SendBatch of which some bodies were not sent: Unsent
// holds their indexes, in order; the others were sent.
type BatchError struct {
	Unsent []int
	Err    error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("queue: %d messages of the batch not sent: %v", len(e.Unsent), e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// Handler processes one message; an error leaves it to reappear after the
// visibility timeout.
type Handler func(ctx context.Context, m Message) error

// Run receives and handles messages until ctx ends: the devserver's stand-in
// for a Lambda's SQS event source. Up to workers messages are handled at
// once, each as soon as a worker is free (a slow one holds only its own
// worker, never a batch), and deleted when its handler succeeds. A handler
// that fails leaves its message to come back; failures are summed into one
// WARN every ten seconds (the count and the first error), so a backlog or a
// failing receiver is one line, not one per message. Receive errors go to
// log at ERROR.
func Run(ctx context.Context, log *slog.Logger, q Queue, name string, workers int, h Handler) {
	workers = max(workers, 1)
	free := make(chan struct{}, workers)
	for range workers {
		free <- struct{}{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	failed, first := 0, error(nil)
	report := time.NewTicker(10 * time.Second)
	defer report.Stop()
	flush := func() {
		mu.Lock()
		n, err := failed, first
		failed, first = 0, nil
		mu.Unlock()
		if n > 0 {
			log.Warn("queue handler failures", "queue", name, "messages", n, "first", err)
		}
	}
	defer flush()
	for ctx.Err() == nil {
		select {
		case <-report.C:
			flush()
		default:
		}
		// Wait for one free worker, then take as many as are free.
		select {
		case <-ctx.Done():
			return
		case <-free:
		}
		n := 1
		for n < min(workers, 10) {
			select {
			case <-free:
				n++
				continue
			default:
			}
			break
		}
		msgs, err := q.Receive(ctx, n, time.Second)
		for range n - len(msgs) {
			free <- struct{}{}
		}
		if err != nil {
			if ctx.Err() == nil {
				log.Error("queue receive", "queue", name, "err", err)
				_ = clock.Sleep(ctx, time.Second)
			}
			continue
		}
		for _, m := range msgs {
			wg.Go(func() {
				defer func() { free <- struct{}{} }()
				if err := handle(ctx, log, name, h, m); err != nil {
					mu.Lock()
					failed++
					if first == nil {
						first = fmt.Errorf("message %s: %w", m.ID, err)
					}
					mu.Unlock()
					return
				}
				if err := q.Delete(context.WithoutCancel(ctx), m); err != nil {
					log.Error("queue delete", "queue", name, "message", m.ID, "err", err)
				}
			})
		}
	}
}

// DelayOf is body i's delay in a SendBatch's delays (none: 0).
func DelayOf(delays []time.Duration, i int) time.Duration {
	if i < len(delays) {
		return min(max(delays[i], 0), MaxDelay)
	}
	return 0
}

// handle runs h on m. A panic is the message's failure (it comes back),
// logged through log with its stack, as app.SQSHandler does on AWS: in a
// worker's goroutine it would end the process (the devserver, with every
// family) with the Go runtime's report, which no logger redacts.
func handle(ctx context.Context, log *slog.Logger, name string, h Handler, m Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "message panicked", "queue", name, "message", m.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return h(ctx, m)
}
