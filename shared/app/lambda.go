package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/practice-api/practice-api/shared/queue"
)

// RecordMargin is the part of a worker invocation's time kept back from
// its records: for their bookkeeping after a cut-off call, and for the
// answer to Lambda.
const RecordMargin = 3 * time.Second

// errNoTime is a record the invocation had no time left to start.
var errNoTime = errors.New("no time left in the invocation to start it")

// SQSHandler adapts a queue handler to an SQS-triggered Lambda with partial
// batch responses. The batch's records run concurrently, each under a
// deadline RecordMargin before the invocation's, so one slow receiver or
// register cannot time the batch out (which would send the finished records
// again and count their failures twice). Records that failed, and any the
// time left no room to start, are reported as batch item failures and come
// back; the others are deleted.
func SQSHandler(h queue.Handler) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		rctx := ctx
		if d, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			rctx, cancel = context.WithDeadline(ctx, d.Add(-RecordMargin))
			defer cancel()
		}
		failed := make([]error, len(ev.Records))
		var wg sync.WaitGroup
		for i, r := range ev.Records {
			if rctx.Err() != nil {
				failed[i] = errNoTime // no time to start it: it comes back
				continue
			}
			n, _ := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
			m := queue.Message{ID: r.MessageId, Body: []byte(r.Body), Receipt: r.ReceiptHandle, ReceiveCount: n, Group: r.Attributes["MessageGroupId"]}
			wg.Go(func() {
				// A panic in a record's goroutine would end the process
				// with the runtime's own report (not through the logger,
				// so not redacted) and lose the batch's other records: it
				// fails this record, which comes back.
				defer func() {
					if p := recover(); p != nil {
						slog.ErrorContext(ctx, "message panicked", "message", r.MessageId, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
						failed[i] = fmt.Errorf("panic: %v", p)
					}
				}()
				if err := h(rctx, m); err != nil {
					failed[i] = err
				}
			})
		}
		wg.Wait()
		var resp events.SQSEventResponse
		var first error
		for i, r := range ev.Records {
			if failed[i] != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
				if first == nil {
					first = fmt.Errorf("message %s: %w", r.MessageId, failed[i])
				}
			}
		}
		if n := len(resp.BatchItemFailures); n > 0 {
			// One line per invocation, not one per message: the messages
			// come back by themselves (a busy store, a receiver past the
			// invocation's time); the queue's age and dead-letter alarms
			// watch what does not.
			slog.WarnContext(ctx, "messages failed and come back", "messages", n, "of", len(ev.Records), "first", first)
		}
		return resp, nil
	}
}
