package queue_test

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/queue/sqsqueue"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

var motoURL string

// TestMain starts moto_server (preinstalled on this project's machines) for
// the SQS adapter's tests; without it, those tests skip and say why.
func TestMain(m *testing.M) {
	flag.Parse()
	var cmd *exec.Cmd
	if path, err := exec.LookPath("moto_server"); err == nil && !testing.Short() {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().(*net.TCPAddr)
		ln.Close()
		cmd = exec.Command(path, "-H", "127.0.0.1", "-p", fmt.Sprint(addr.Port))
		if err := cmd.Start(); err == nil {
			url := fmt.Sprintf("http://127.0.0.1:%d", addr.Port)
			for i := 0; i < 100; i++ {
				if c, err := net.Dial("tcp", addr.String()); err == nil {
					c.Close()
					motoURL = url
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	code := m.Run()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	os.Exit(code)
}

// SQSClient returns a client on moto, or skips the test.
func sqsQueue(t *testing.T, visibility time.Duration, opts ...func(*sqs.Options)) *sqsqueue.SQS {
	t.Helper()
	if testing.Short() {
		t.Skip("needs moto_server: skipped with -short")
	}
	if motoURL == "" {
		t.Skip("moto_server is not installed here: the SQS adapter is not tested (CI's machine image has it)")
	}
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(motoURL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}, opts...)
	out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{
		QueueName:  aws.String(fmt.Sprintf("q%d", time.Now().UnixNano())),
		Attributes: map[string]string{"VisibilityTimeout": fmt.Sprint(int(visibility.Seconds()))},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sqsqueue.New(client, aws.ToString(out.QueueUrl))
}

// contract is what every adapter must do. advance, for a queue on a
// manual clock, moves its time (nil: the queue keeps the wall clock, and
// the contract waits for its timeouts).
func contract(t *testing.T, q queue.Queue, advance func(time.Duration)) {
	ctx := context.Background()
	if err := q.Send(ctx, "g", []byte(`{"n":1}`), 0); err != nil {
		t.Fatal(err)
	}
	if err := q.Send(ctx, "g", []byte(`{"n":2}`), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := q.Send(ctx, "g", []byte("x"), 16*time.Minute); err != queue.ErrDelayTooLong {
		t.Fatalf("delay over 15 minutes: %v", err)
	}
	got, err := q.Receive(ctx, 10, time.Second)
	if err != nil || len(got) != 1 || string(got[0].Body) != `{"n":1}` || got[0].ReceiveCount != 1 {
		t.Fatalf("first receive: %v %v", got, err)
	}
	first := got[0]
	// Not deleted: it comes back after the visibility timeout, counted again;
	// the delayed one becomes visible meanwhile.
	seen := map[string]int{}
	deadline, wait := time.Now().Add(6*time.Second), time.Second
	if advance != nil {
		wait = 0
		if msgs, _ := q.Receive(ctx, 10, 0); len(msgs) != 0 {
			t.Fatalf("before its visibility timeout and delay: %v", msgs)
		}
		advance(1999 * time.Millisecond)
		if msgs, _ := q.Receive(ctx, 10, 0); len(msgs) != 0 {
			t.Fatalf("a millisecond before its visibility timeout and delay: %v", msgs)
		}
		advance(time.Millisecond)
		deadline = time.Now() // one receive: both are due on the queue's clock
	}
	for first := true; len(seen) < 2 && (first || time.Now().Before(deadline)); first = false {
		msgs, err := q.Receive(ctx, 10, wait)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			seen[string(m.Body)] = m.ReceiveCount
			if err := q.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if seen[`{"n":1}`] != 2 || seen[`{"n":2}`] != 1 {
		t.Fatalf("redelivery and delay: %v", seen)
	}
	_ = q.Delete(ctx, first) // a stale receipt must not fail the worker
	if msgs, _ := q.Receive(ctx, 10, wait); len(msgs) != 0 {
		t.Fatalf("deleted messages came back: %v", msgs)
	}
}

func TestMemoryQueue(t *testing.T) {
	q, m := queue.NewMemory(2*time.Second), clock.NewManual(time.Now())
	q.Clock = m
	contract(t, q, m.Advance)
	batchContract(t, queue.NewMemory(time.Minute), 0)
}

// batchContract: 25 bodies in one SendBatch arrive once each, and no more
// after them in a last receive that waits up to settle (a remote queue's
// long poll; 0 for a queue in the process, whose messages are there at
// once or never).
func batchContract(t *testing.T, q queue.Queue, settle time.Duration) {
	t.Helper()
	ctx := context.Background()
	var bodies [][]byte
	for i := range 25 {
		bodies = append(bodies, []byte(fmt.Sprintf(`{"n":%d}`, i)))
	}
	if err := q.SendBatch(ctx, "g", bodies); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for deadline := time.Now().Add(5 * time.Second); len(seen) < 25 && time.Now().Before(deadline); {
		msgs, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			seen[string(m.Body)]++
			_ = q.Delete(ctx, m)
		}
	}
	if msgs, _ := q.Receive(ctx, 10, settle); len(seen) != 25 || len(msgs) != 0 {
		t.Fatalf("%d distinct bodies arrived, %d more after: %v", len(seen), len(msgs), seen)
	}
	for b, n := range seen {
		if n != 1 {
			t.Fatalf("%s arrived %d times", b, n)
		}
	}
}

// TestSQSSendBatchResendsOnlyRefusedEntries: SQS refuses two entries of the
// first call (as it does under throttling); only those are sent again.
func TestSQSSendBatchResendsOnlyRefusedEntries(t *testing.T) {
	q := sqsQueue(t, time.Minute, func(o *sqs.Options) {
		calls := 0
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("refuse", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				batch, ok := in.Parameters.(*sqs.SendMessageBatchInput)
				if !ok {
					return next.HandleInitialize(ctx, in)
				}
				calls++
				if calls > 1 {
					return next.HandleInitialize(ctx, in)
				}
				var kept []sqstypes.SendMessageBatchRequestEntry
				var refused []sqstypes.BatchResultErrorEntry
				for _, e := range batch.Entries {
					if id := aws.ToString(e.Id); id == "1" || id == "3" {
						refused = append(refused, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ThrottlingException"), SenderFault: false, Message: aws.String("slow down")})
						continue
					}
					kept = append(kept, e)
				}
				batch.Entries = kept
				out, md, err := next.HandleInitialize(ctx, in)
				if res, ok := out.Result.(*sqs.SendMessageBatchOutput); ok {
					res.Failed = append(res.Failed, refused...)
				}
				return out, md, err
			}), middleware.Before)
		})
	})
	batchContract(t, q, time.Second)
}

// TestTableQueue: the durable queue keeps SQS's contract, survives its
// process (a new Table on the same store receives what the old one was
// sent), and sets a message aside as dead after MaxReceives receives.
func TestTableQueue(t *testing.T) {
	db := storetest.NewDB(t)
	m := clock.NewManual(time.Now())
	q := queue.NewTable(db, "contract", 2*time.Second, 0)
	q.Clock = m
	contract(t, q, m.Advance)
	batchContract(t, queue.NewTable(db, "batch", time.Minute, 0), time.Second)

	ctx := context.Background()
	before := queue.NewTable(db, "restart", time.Minute, 3)
	if err := before.Send(ctx, "g", []byte("survives"), 0); err != nil {
		t.Fatal(err)
	}
	after := queue.NewTable(db, "restart", 500*time.Millisecond, 3) // the process started again
	m = clock.NewManual(time.Now())
	after.Clock = m
	var seen []int
	for range 5 {
		msgs, err := after.Receive(ctx, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if string(m.Body) != "survives" {
				t.Fatalf("got %q", m.Body)
			}
			seen = append(seen, m.ReceiveCount) // never deleted: it fails each time
		}
		if w, d, _ := after.Counts(ctx); w == 0 && d == 1 {
			break
		}
		m.Advance(500 * time.Millisecond) // past the visibility timeout
	}
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Fatalf("receive counts %v, want [1 2 3] and then dead", seen)
	}
	if w, d, err := after.Counts(ctx); w != 0 || d != 1 || err != nil {
		t.Fatalf("waiting %d, dead %d, %v", w, d, err)
	}
}

func TestSQSQueueOnMoto(t *testing.T) {
	contract(t, sqsQueue(t, 2*time.Second), nil)
	batchContract(t, sqsQueue(t, time.Minute), time.Second)
}

func TestSQSHideExtendsVisibility(t *testing.T) {
	q := sqsQueue(t, 1*time.Second)
	ctx := context.Background()
	if err := q.Send(ctx, "g", []byte("later"), 0); err != nil {
		t.Fatal(err)
	}
	msgs, err := q.Receive(ctx, 1, time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("%v %v", msgs, err)
	}
	if err := q.Hide(ctx, msgs[0], 4*time.Second); err != nil {
		t.Fatal(err)
	}
	if again, _ := q.Receive(ctx, 1, 2*time.Second); len(again) != 0 {
		t.Fatal("a hidden message came back before its visibility timeout")
	}
	if again, _ := q.Receive(ctx, 1, 5*time.Second); len(again) != 1 {
		t.Fatal("the hidden message did not come back")
	}
}

// TestSQSEventHandlerOnMoto runs the Lambda side of a queue (app.SQSHandler,
// as the delivery and enrichment Lambdas use it) on messages received from
// SQS: a failed record is reported as a batch item failure and comes back;
// the others are gone once deleted, as the event source mapping deletes them.
func TestSQSEventHandlerOnMoto(t *testing.T) {
	q := sqsQueue(t, 1*time.Second)
	ctx := context.Background()
	for _, b := range []string{"ok-1", "fail", "ok-2"} {
		if err := q.Send(ctx, "g", []byte(b), 0); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []queue.Message
	for deadline := time.Now().Add(5 * time.Second); len(msgs) < 3 && time.Now().Before(deadline); {
		got, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, got...)
	}
	ev := events.SQSEvent{}
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.ID, ReceiptHandle: m.Receipt, Body: string(m.Body),
			Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(m.ReceiveCount)}})
	}
	var handled []string
	var mu sync.Mutex // the handler runs a batch's records at once
	h := app.SQSHandler(func(_ context.Context, m queue.Message) error {
		mu.Lock()
		handled = append(handled, string(m.Body))
		mu.Unlock()
		if string(m.Body) == "fail" {
			return fmt.Errorf("receiver down")
		}
		return nil
	})
	resp, err := h(ctx, ev)
	if err != nil || len(handled) != 3 || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("handled %v, failures %v, %v", handled, resp.BatchItemFailures, err)
	}
	failed := resp.BatchItemFailures[0].ItemIdentifier
	for _, m := range msgs { // what the event source mapping does with the answer
		if m.ID != failed {
			if err := q.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	again, err := q.Receive(ctx, 10, 4*time.Second)
	if err != nil || len(again) != 1 || string(again[0].Body) != "fail" || again[0].ReceiveCount != 2 {
		t.Fatalf("after the batch: %v %v", again, err)
	}
}
