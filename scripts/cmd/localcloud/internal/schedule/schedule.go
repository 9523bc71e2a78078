// Package schedule runs the template's EventBridge schedule rules: every
// rate() interval, an asynchronous invocation of each target, with
// Lambda's asynchronous retries, its on-failure destination and the rule's
// dead-letter queue.
package schedule

import (
	"cmp"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/clock"

	"github.com/google/uuid"
)

// Function is a rule's target (a lambda.Function).
type Function interface {
	Invoke(ctx context.Context, payload []byte, wait time.Duration) (lambda.Outcome, string, error)
	ARN() string
}

// Destination takes what a target gives up on (an sqsserver.Queue).
type Destination interface {
	Send(body string, delay time.Duration) *sqsserver.Message
}

// Rule runs a rule: every interval, an asynchronous invocation of each
// target with EventBridge's scheduled event.
type Rule struct {
	Spec    stack.Schedule
	Targets []*Target
	// Clock is EventBridge's time: Run fires the rule every Spec.Every on
	// it (nil: the wall clock).
	Clock clock.Clock
}

// Target is a function invoked asynchronously: Lambda's retries
// (EventInvokeConfig) on function errors, then its on-failure
// destination; the rule's dead-letter queue when the invocation could not
// be made at all.
type Target struct {
	Fn         Function
	Retries    int
	OnFailure  Destination // nil: none
	DeadLetter Destination // nil: none
	// Pause is the wait before the first retry, doubled before the
	// second: Lambda waits a minute, then two (0: a minute; tests
	// shorten it).
	Pause time.Duration
	// Clock is Lambda's time: a retry's pause passes on it (nil: the
	// wall clock).
	Clock clock.Clock
}

// Run fires the rule every interval until ctx ends.
func (s *Rule) Run(ctx context.Context) {
	t, ticks := clock.Or(s.Clock).NewTicker(s.Spec.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticks:
			s.Fire(ctx, now, nil)
		}
	}
}

// Fire invokes each target once, asynchronously, with the scheduled
// event of now (Run does every interval; on the manual clock, its tick).
// When join is set, it is called for each target before its invocation,
// and what it returns once that invocation has its answer or was refused
// (before a hang holds its end; its retries' do not count).
func (s *Rule) Fire(ctx context.Context, now time.Time, join func() (answered func())) {
	event, _ := json.Marshal(map[string]any{"version": "0", "id": uuid.NewString(), "detail-type": "Scheduled Event", "source": "aws.events",
		"account": stack.Account, "time": now.UTC().Format(time.RFC3339), "region": stack.Region,
		"resources": []string{"arn:aws:events:" + stack.Region + ":" + stack.Account + ":rule/" + s.Spec.Rule}, "detail": map[string]any{}})
	for _, tg := range s.Targets {
		tctx := ctx
		if join != nil {
			var once sync.Once
			answered := join()
			done := func() { once.Do(answered) }
			tctx = lambda.OnAnswer(ctx, done)
			go func() { defer done(); tg.invoke(tctx, event) }()
			continue
		}
		go tg.invoke(tctx, event)
	}
}

func (a *Target) invoke(ctx context.Context, event []byte) {
	for attempt := 0; ; attempt++ {
		o, id, err := a.Fn.Invoke(ctx, event, time.Minute)
		if err != nil {
			if a.DeadLetter != nil && ctx.Err() == nil {
				a.DeadLetter.Send(string(event), 0)
			}
			return
		}
		if o.Status == "ok" {
			return
		}
		if attempt >= a.Retries {
			if a.OnFailure != nil {
				rec, _ := json.Marshal(map[string]any{"version": "1.0", "timestamp": clock.Or(a.Clock).Now().UTC().Format(time.RFC3339Nano),
					"requestContext":  map[string]any{"requestId": id, "functionArn": a.Fn.ARN() + ":$LATEST", "condition": "RetriesExhausted", "approximateInvokeCount": attempt + 1},
					"requestPayload":  json.RawMessage(event),
					"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
					"responsePayload": json.RawMessage(orNullJSON(o.Body))})
				a.OnFailure.Send(string(rec), 0)
			}
			return
		}
		// Lambda waits a minute, then two, between async retries.
		if clock.SleepOn(ctx, clock.Or(a.Clock), time.Duration(attempt+1)*cmp.Or(a.Pause, time.Minute)) != nil {
			return
		}
	}
}

func orNullJSON(b []byte) []byte {
	if json.Valid(b) {
		return b
	}
	q, _ := json.Marshal(string(b))
	return q
}
