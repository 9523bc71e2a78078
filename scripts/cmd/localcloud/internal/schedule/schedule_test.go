package schedule

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/clock"
)

// probe is a target that answers as told: ok, a function error, or no
// invocation at all (throttled); it keeps the events it got.
type probe struct {
	answer string
	calls  atomic.Int64
	mu     sync.Mutex
	events []map[string]any
}

func (p *probe) Invoke(_ context.Context, payload []byte, _ time.Duration) (lambda.Outcome, string, error) {
	p.calls.Add(1)
	var ev map[string]any
	_ = json.Unmarshal(payload, &ev)
	p.mu.Lock()
	p.events = append(p.events, ev)
	p.mu.Unlock()
	switch p.answer {
	case "error":
		return lambda.Outcome{Status: "error", Body: []byte(`{"errorMessage":"asked to fail","errorType":"errorString"}`)}, "req-1", nil
	case "throttled":
		return lambda.Outcome{}, "", lambda.ErrThrottled
	}
	return lambda.Outcome{Status: "ok", Body: []byte(`null`)}, "req-1", nil
}

func (p *probe) ARN() string { return "arn:aws:lambda:us-east-1:000000000000:function:sweep" }

// firstMessage waits for q's first message and decodes it.
func firstMessage(ctx context.Context, t *testing.T, q *sqsserver.Queue) map[string]any {
	t.Helper()
	for {
		if m := q.Receive(1, time.Minute); len(m) == 1 {
			var v map[string]any
			if err := json.Unmarshal([]byte(m[0].Body), &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		if ctx.Err() != nil {
			t.Fatalf("nothing in %s", q.Name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRuleInvokesItsTargetsAsEventBridgeAndLambdaDo: one rule, three
// targets at once, on a manual clock (the rule's rate and Lambda's retry
// pauses pass on it, not in real time). Each is invoked with
// EventBridge's scheduled event; a function that keeps failing is retried
// Retries times, a minute later on the clock (not sooner), and then goes
// to its on-failure destination in Lambda's shape; an invocation that
// cannot be made at all goes to the rule's dead-letter queue, unretried.
func TestRuleInvokesItsTargetsAsEventBridgeAndLambdaDo(t *testing.T) {
	srv := sqsserver.New("http://127.0.0.1:1", iam.NewIdentities())
	queue := func(name string) *sqsserver.Queue {
		return srv.Create(&stack.Queue{Name: name, Visibility: time.Minute, Retention: time.Hour}, nil)
	}
	failures, dead := queue("failures"), queue("rule-dlq")
	ok, failing, throttled := &probe{answer: "ok"}, &probe{answer: "error"}, &probe{answer: "throttled"}
	m := clock.NewManual(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	rule := &Rule{Spec: stack.Schedule{Rule: "SweepRule", Every: time.Minute}, Clock: m, Targets: []*Target{
		{Fn: ok, Retries: 2, Clock: m},
		{Fn: failing, Retries: 1, OnFailure: failures, Clock: m},
		{Fn: throttled, Retries: 2, DeadLetter: dead, Clock: m},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go rule.Run(ctx)
	if err := m.AwaitPending(ctx, 1); err != nil { // the rule's ticker
		t.Fatal(err)
	}
	m.Advance(time.Minute)                         // the first tick
	if err := m.AwaitPending(ctx, 2); err != nil { // and the failing target's retry pause
		t.Fatalf("no retry waits on the clock after the first tick: %v", err)
	}
	m.Advance(59 * time.Second)
	time.Sleep(20 * time.Millisecond)
	if n := failing.calls.Load(); n != 1 {
		t.Fatalf("the failing target was called %d times 59 s after the tick, want 1 (its retry a minute later)", n)
	}
	m.Advance(time.Second)
	rec, deadEvent := firstMessage(ctx, t, failures), firstMessage(ctx, t, dead)
	cancel()

	ok.mu.Lock()
	ev := ok.events[0]
	ok.mu.Unlock()
	if ev["detail-type"] != "Scheduled Event" || ev["source"] != "aws.events" || ev["account"] != stack.Account ||
		ev["resources"].([]any)[0] != "arn:aws:events:"+stack.Region+":"+stack.Account+":rule/SweepRule" {
		t.Errorf("the scheduled event: %v", ev)
	}
	rc, _ := rec["requestContext"].(map[string]any)
	if rc["condition"] != "RetriesExhausted" || rc["approximateInvokeCount"] != 2.0 || rc["functionArn"] != failing.ARN()+":$LATEST" {
		t.Errorf("the on-failure record's requestContext: %v", rc)
	}
	if rec["requestPayload"].(map[string]any)["source"] != "aws.events" || rec["responsePayload"].(map[string]any)["errorMessage"] != "asked to fail" {
		t.Errorf("the on-failure record: %v", rec)
	}
	if deadEvent["detail-type"] != "Scheduled Event" {
		t.Errorf("the dead-lettered event: %v", deadEvent)
	}
	// A throttled invocation is not retried: one call per tick, as the
	// target that answers ok gets (retried, it would get three).
	if n, ticks := throttled.calls.Load(), ok.calls.Load(); n > ticks+1 {
		t.Errorf("throttled: %d calls in %d ticks", n, ticks)
	}
}
