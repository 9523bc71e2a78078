package eventsource

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambdatest"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/clock"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

// TestQueueMappingDeletesOnlyWhatSucceeded: with ReportBatchItemFailures,
// the messages a batch reports failed come back after the visibility
// timeout and go to the dead-letter queue after maxReceiveCount; the rest
// are deleted once. An identifier that is not in the batch fails the whole
// batch, as Lambda does. The queue and the mapping's batching window run
// on a manual clock the test moves: a visibility timeout passes in a call,
// and a message comes back at its end, not a millisecond before.
func TestQueueMappingDeletesOnlyWhatSucceeded(t *testing.T) {
	t.Parallel()
	f, _ := lambdatest.Function(t, 5*time.Second, 0)
	clk := clock.NewManual(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	s := sqsserver.New("http://127.0.0.1:1", iam.NewIdentities())
	s.Clock = clk
	dlq := s.Create(&stack.Queue{Name: "dlq", Visibility: time.Second, Retention: time.Hour}, nil)
	q := s.Create(&stack.Queue{Name: "jobs", Visibility: time.Second, Retention: time.Hour, MaxReceives: 2}, dlq)
	for _, body := range []string{"ok-1", "bad", "ok-2", "ok-3"} {
		q.Send(body, 0)
	}
	// A batching window gathers what is sent together into one batch.
	const window = 300 * time.Millisecond
	src := &Queue{Spec: stack.QueueMapping{BatchSize: 10, Window: window, ReportFailures: true, MaxConcurrency: 2}, Fn: f, Queue: q, Clock: clk}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { src.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	until := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !done(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	// The mapping has gathered a batch and waits out its window on the
	// clock: the window passes.
	windowPasses := func(what string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := clk.AwaitPending(wctx, 1); err != nil {
			t.Fatalf("the mapping never gathered %s", what)
		}
		clk.Advance(window)
	}
	left := func() int {
		visible, inFlight, delayed := q.Counts()
		return visible + inFlight + delayed
	}
	deadLetters := func() []string {
		var dead []string
		for _, m := range dlq.Receive(10, time.Hour) {
			dead = append(dead, m.Body)
		}
		sort.Strings(dead)
		return dead
	}
	invocations := func(n int64) func() bool { return func() bool { return f.Invocations.Load() == n } }

	windowPasses("the first batch")
	until("the batch's successes deleted, bad left in flight", func() bool { return left() == 1 })
	if n := f.Invocations.Load(); n != 1 {
		t.Fatalf("%d invocations, want 1 (the four together)", n)
	}
	clk.Advance(time.Second - window - time.Millisecond) // received before the window passed
	if visible, inFlight, _ := q.Counts(); visible != 0 || inFlight != 1 {
		t.Fatalf("a millisecond before its visibility timeout ends: %d visible, %d in flight; want bad in flight", visible, inFlight)
	}
	clk.Advance(time.Millisecond) // bad comes back
	windowPasses("bad again")
	until("bad invoked again", invocations(2))
	clk.Advance(time.Second) // bad comes back, received twice: to the dead-letter queue
	var dead []string
	until("bad dead-lettered", func() bool { dead = append(dead, deadLetters()...); return len(dead) > 0 })
	if strings.Join(dead, " ") != "bad" || left() != 0 {
		t.Fatalf("dead-lettered: %v with %d left in the queue, want only bad and none left", dead, left())
	}
	if n := f.Invocations.Load(); n != 2 {
		t.Errorf("%d invocations, want 2 (the batch, then bad again)", n)
	}

	q.Send("alien", 0)
	q.Send("ok-4", 0)
	windowPasses("alien's batch")
	until("the batch with an alien identifier invoked", invocations(3))
	clk.Advance(time.Second + window) // the whole batch comes back
	windowPasses("the batch again")
	until("the batch invoked again", invocations(4))
	clk.Advance(time.Second + window)
	dead = nil
	until("the batch dead-lettered", func() bool { dead = append(dead, deadLetters()...); return len(dead) >= 2 })
	sort.Strings(dead)
	if strings.Join(dead, " ") != "alien ok-4" || left() != 0 {
		t.Fatalf("dead-lettered: %v with %d left in the queue, want the whole batch with an alien identifier", dead, left())
	}
	if n := f.Invocations.Load(); n != 4 {
		t.Errorf("%d invocations, want 4 (the batch with an alien identifier twice)", n)
	}
}

// TestStreamFailuresGoOutOnePerBatch: a stream batch the mapping gives up
// on is one on-failure record in Lambda's shape: its shard, its first and
// last sequence numbers and arrival times, its size, how often it was
// invoked and how the last invocation ended; records past the maximum
// age are one record too, never invoked.
func TestStreamFailuresGoOutOnePerBatch(t *testing.T) {
	t.Parallel()
	f, _ := lambdatest.Function(t, 5*time.Second, 0)
	dest := sqsserver.New("http://127.0.0.1:1", iam.NewIdentities()).Create(&stack.Queue{Name: "failures", Visibility: time.Minute, Retention: time.Hour}, nil)
	s := &Stream{Spec: stack.StreamMapping{Retries: 1, MaxAge: time.Hour}, Fn: f, OnFailure: dest,
		StreamArn: "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-01-01T00:00:00.000"}
	rec := func(seq string, at time.Time, marker string) map[string]any {
		return map[string]any{"eventID": "ev" + seq, "eventName": "INSERT", "dynamodb": map[string]any{
			"SequenceNumber": seq, "ApproximateCreationDateTime": float64(at.Unix()), "NewImage": map[string]any{"m": map[string]any{"S": marker}}}}
	}
	now := time.Now().Truncate(time.Second)
	s.deliver(context.Background(), "shardId-0001", []map[string]any{
		rec("100", now.Add(-2*time.Hour), "old"), rec("150", now.Add(-90*time.Minute), "old"),
		rec("200", now.Add(-2*time.Second), "fail-me"), rec("300", now, "fail-me")})
	msgs := dest.Receive(10, -1)
	if len(msgs) != 2 {
		t.Fatalf("%d on-failure records, want 2 (one per batch)", len(msgs))
	}
	var got []map[string]any
	for _, m := range msgs {
		var r map[string]any
		if err := json.Unmarshal([]byte(m.Body), &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	sort.Slice(got, func(i, j int) bool {
		return got[i]["DDBStreamBatchInfo"].(map[string]any)["startSequenceNumber"].(string) < got[j]["DDBStreamBatchInfo"].(map[string]any)["startSequenceNumber"].(string)
	})
	want := []struct {
		condition, start, end, first, last string
		size, invoked                      float64
		response                           bool
	}{
		{"RecordAgeExceeded", "100", "150", now.Add(-2 * time.Hour).UTC().Format(time.RFC3339), now.Add(-90 * time.Minute).UTC().Format(time.RFC3339), 2, 0, false},
		{"RetryAttemptsExhausted", "200", "300", now.Add(-2 * time.Second).UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), 2, 2, true},
	}
	for i, w := range want {
		rc := got[i]["requestContext"].(map[string]any)
		info := got[i]["DDBStreamBatchInfo"].(map[string]any)
		_, hasResponse := got[i]["responseContext"]
		if rc["condition"] != w.condition || rc["approximateInvokeCount"] != w.invoked || rc["functionArn"] != f.ARN() ||
			info["shardId"] != "shardId-0001" || info["startSequenceNumber"] != w.start || info["endSequenceNumber"] != w.end ||
			info["approximateArrivalOfFirstRecord"] != w.first || info["approximateArrivalOfLastRecord"] != w.last ||
			info["batchSize"] != w.size || info["streamArn"] != s.StreamArn || hasResponse != w.response || got[i]["version"] != "1.0" {
			t.Errorf("record %d: %v", i, got[i])
		}
	}
	if fe := got[1]["responseContext"].(map[string]any)["functionError"]; fe != "Unhandled" {
		t.Errorf("the failed invocation's responseContext: %v", got[1]["responseContext"])
	}
}

// TestAQueueMappingOnAFairQueue: Lambda's event source mapping is the fair
// queue's consumer (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-fair-queues-detailed.html):
// the messages it holds while its function runs are in flight, and the
// time they take is consumer processing time. A tenant whose batches take
// 200 ms holds both of the mapping's invocations (maximum concurrency 2):
// by its share of processing time it is a noisy neighbour, so a quiet
// tenant's message sent half a second in is invoked at the next free
// invocation, while most of the noisy backlog still waits; without fair
// queues it would wait for the backlog ahead of it (about 1.5 s).
func TestAQueueMappingOnAFairQueue(t *testing.T) {
	t.Parallel()
	f, _ := lambdatest.Function(t, 5*time.Second, 0)
	s := sqsserver.New("http://127.0.0.1:1", iam.NewIdentities())
	q := s.Create(&stack.Queue{Name: "jobs", Visibility: time.Minute, Retention: time.Hour}, nil)
	for range 200 {
		q.SendGroup("sleep-200ms", "noisy", 0)
	}
	src := &Queue{Spec: stack.QueueMapping{BatchSize: 10, ReportFailures: true, MaxConcurrency: 2}, Fn: f, Queue: q}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { src.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	time.Sleep(500 * time.Millisecond)
	quiet := q.SendGroup("quick", "quiet", 0)
	sent := time.Now()
	for q.Contains(quiet.ID) {
		if time.Since(sent) > 10*time.Second {
			t.Fatal("the quiet tenant's message was never handled")
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(sent)
	visible, inFlight, _ := q.Counts()
	if visible < 100 {
		t.Fatalf("the quiet message took %v; by then only %d of the noisy backlog waited (%d in flight): it waited behind the backlog", took, visible, inFlight)
	}
	if noisy := q.Noisy(); len(noisy) != 1 || noisy[0] != "noisy" {
		t.Errorf("noisy groups %v", noisy)
	}
	t.Logf("the quiet message was handled %v after it was sent, with %d noisy messages still waiting", took.Round(time.Millisecond), visible)
}
