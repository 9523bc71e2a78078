package sqsserver

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/queue/sqsqueue"
)

// TestSQSServerKeepsSQSSemantics drives the in-repo SQS server with the
// real SDK through the service's own adapter (shared/queue): delays,
// visibility timeouts and receive counts to the millisecond on the
// queue's clock (a manual one the test moves), a long poll that takes a
// message whose delay ends while it waits, batches, and the redrive of a
// message received maxReceiveCount times to its dead-letter queue.
func TestSQSServerKeepsSQSSemantics(t *testing.T) {
	t.Parallel()
	jobs, dlq, client, clk := jobsQueue(t, 2)
	q := sqsqueue.New(client, jobs.URL)
	ctx := context.Background()
	counts := func(got []queue.Message) []int {
		var n []int
		for _, m := range got {
			n = append(n, m.ReceiveCount)
		}
		return n
	}
	poll := func(wait time.Duration) <-chan []queue.Message {
		done := make(chan []queue.Message, 1)
		go func() {
			got, err := q.Receive(ctx, 10, wait)
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		return done
	}
	// A long poll has found nothing and waits.
	awaitPoll := func() {
		for deadline := time.Now().Add(10 * time.Second); jobs.polls.Load() != 1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the long poll never waited")
			}
		}
	}
	take := func(d time.Duration, what string) []queue.Message {
		select {
		case got := <-poll(d):
			return got
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer", what)
			return nil
		}
	}

	if err := q.Send(ctx, "g", []byte("later"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := take(0, "a short poll"); len(got) != 0 {
		t.Fatalf("a delayed message was received at once: %v", got)
	}
	waiting := poll(5 * time.Second)
	awaitPoll()
	clk.Advance(2*time.Second - time.Millisecond)
	if got := take(0, "a short poll 1.999 s in"); len(got) != 0 {
		t.Fatalf("a message delayed 2 s was received 1.999 s later: %v", got)
	}
	clk.Advance(time.Millisecond)
	select {
	case got := <-waiting:
		if fmt.Sprint(counts(got)) != "[1]" {
			t.Fatalf("the long poll took %v, want the delayed message received once", counts(got))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a long poll did not take the message whose delay ended while it waited")
	}
	if _, f, _ := jobs.Counts(); f != 1 {
		t.Fatalf("%d in flight, want the one received", f)
	}
	clk.Advance(time.Second - time.Millisecond) // the queue's visibility timeout, less 1 ms
	if got := take(0, "a poll within the visibility timeout"); len(got) != 0 {
		t.Fatalf("a message in flight was received again: %v", counts(got))
	}
	clk.Advance(time.Millisecond)
	if got := take(0, "a poll at the visibility timeout"); fmt.Sprint(counts(got)) != "[2]" {
		t.Fatalf("after its visibility timeout: %v, want the message again, received twice", counts(got))
	}
	clk.Advance(time.Second) // never deleted: it fails each time
	if got := take(0, "a poll after maxReceiveCount receives"); len(got) != 0 {
		t.Fatalf("received a third time: %v; want it moved to the dead-letter queue", counts(got))
	}
	if v, _, _ := dlq.Counts(); v != 1 {
		t.Fatalf("%d visible in the dead-letter queue, want the message", v)
	}
	if v, f, d := jobs.Counts(); v+f+d != 0 {
		t.Fatalf("the message is still in its queue: %d %d %d", v, f, d)
	}

	var bodies [][]byte
	for i := range 25 {
		bodies = append(bodies, fmt.Appendf(nil, `{"n":%d}`, i))
	}
	if err := q.SendBatch(ctx, "g", bodies); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 3 {
		for _, m := range take(0, "a batch") {
			seen[string(m.Body)] = true
			if err := q.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) != 25 {
		t.Fatalf("%d of 25 batched messages in three receives of ten", len(seen))
	}
	if err := q.Hide(ctx, queue.Message{Receipt: "nope"}, time.Second); err == nil {
		t.Fatal("a bad receipt was accepted")
	}
}

// TestRedriveFromADeadLetterQueue rehearses the runbook's redrive
// (docs/operations.md#dead-letter-queue) with the SDK's own calls:
// StartMessageMoveTask puts a dead-letter queue's messages back on the
// queue they failed on, visible and with fresh receive counts, and
// ListMessageMoveTasks reports the task; a queue that is no one's
// dead-letter queue is refused, as SQS refuses it.
func TestRedriveFromADeadLetterQueue(t *testing.T) {
	t.Parallel()
	jobs, dlq, client, clk := jobsQueue(t, 1)
	ctx := context.Background()
	q := sqsqueue.New(client, jobs.URL)
	for i := range 3 {
		if err := q.Send(ctx, "g", fmt.Appendf(nil, `{"n":%d}`, i), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Each is received once and not deleted (its worker failed): the next
	// receive, past the visibility timeout, moves it to the dead-letter queue.
	if got, err := q.Receive(ctx, 10, 0); err != nil || len(got) != 3 {
		t.Fatalf("the first receive: %v %v", got, err)
	}
	clk.Advance(time.Second)
	if got, err := q.Receive(ctx, 10, 0); err != nil || len(got) != 0 {
		t.Fatalf("the second receive: %v %v; want none, each moved to the dead-letter queue", got, err)
	}
	if v, _, _ := dlq.Counts(); v != 3 {
		t.Fatalf("%d messages in the dead-letter queue, want 3", v)
	}
	if _, err := client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(jobs.ARN)}); err == nil {
		t.Fatal("a move from a queue that is no one's dead-letter queue was accepted")
	}
	start, err := client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN)})
	if err != nil || aws.ToString(start.TaskHandle) == "" {
		t.Fatalf("start: %v", err)
	}
	list, err := client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq.ARN)})
	if err != nil || len(list.Results) != 1 || aws.ToString(list.Results[0].Status) != "COMPLETED" ||
		list.Results[0].ApproximateNumberOfMessagesMoved != 3 || aws.ToString(list.Results[0].DestinationArn) != jobs.ARN {
		t.Fatalf("tasks: %+v %v", list, err)
	}
	got, err := q.Receive(ctx, 10, time.Second)
	if err != nil || len(got) != 3 || got[0].ReceiveCount != 1 {
		t.Fatalf("after the redrive: %+v %v", got, err)
	}
	if v, f, d := dlq.Counts(); v+f+d != 0 {
		t.Fatalf("the dead-letter queue still holds %d", v+f+d)
	}
}

// jobsQueue serves a queue "jobs" whose messages go to "jobs-dlq" after
// maxReceives receives, both with a visibility timeout of a second on a
// manual clock, and returns them with an SDK client of the server and the
// clock.
func jobsQueue(t *testing.T, maxReceives int) (jobs, dlq *Queue, client *sqs.Client, clk *clock.Manual) {
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	s := New(srv.URL, iam.NewIdentities())
	clk = clock.NewManual(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	s.Clock = clk
	srv.Config.Handler = s
	dlq = s.Create(&stack.Queue{Name: "jobs-dlq", Visibility: time.Second, Retention: time.Hour}, nil)
	jobs = s.Create(&stack.Queue{Name: "jobs", Visibility: time.Second, Retention: time.Hour, MaxReceives: maxReceives}, dlq)
	client = sqs.New(sqs.Options{Region: stack.Region, BaseEndpoint: aws.String(srv.URL), Credentials: credentials.NewStaticCredentialsProvider(s.Credential("test"), "x", "")})
	return jobs, dlq, client, clk
}

// TestSQSServerRefusesStrangers: a request signed with no key, or with a
// key this run did not issue, is refused as SQS refuses one (403, the
// JSON protocol's error), before it reads or changes a queue.
func TestSQSServerRefusesStrangers(t *testing.T) {
	jobs, _, _, _ := jobsQueue(t, 2)
	srvURL := strings.TrimSuffix(jobs.URL, "/"+stack.Account+"/jobs")
	for _, c := range []struct{ key, want string }{
		{"", "MissingAuthenticationToken"},
		{"local", "InvalidClientTokenId"},
		{"LCL0123456789ABCDEF0", "InvalidClientTokenId"},
	} {
		var creds aws.CredentialsProvider = aws.AnonymousCredentials{} // unsigned
		if c.key != "" {
			creds = credentials.NewStaticCredentialsProvider(c.key, "x", "")
		}
		client := sqs.New(sqs.Options{Region: stack.Region, BaseEndpoint: aws.String(srvURL), Credentials: creds})
		_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(jobs.URL), MessageBody: aws.String("x")})
		var re *awshttp.ResponseError
		if err == nil || !errors.As(err, &re) || re.HTTPStatusCode() != 403 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("key %q: %v", c.key, err)
		}
	}
	if v, f, d := jobs.Counts(); v+f+d != 0 {
		t.Fatalf("a stranger's message is in the queue: %d %d %d", v, f, d)
	}
}

// TestQueueCallsNeedTheRole: a function's queue calls are checked against
// its role: a batch by its single-message action (SendMessageBatch needs
// sqs:SendMessage), a call its role lacks refused with AWS's
// AccessDeniedException, naming the action and the queue.
func TestQueueCallsNeedTheRole(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	q := New(srv.URL, iam.NewIdentities())
	srv.Config.Handler = q
	queue := q.Create(&stack.Queue{Name: "jobs", Visibility: time.Second, Retention: time.Hour}, nil)
	q.Policy = &iam.Policies{Roles: map[string]string{"sender": "senderRole"}, ByCaller: map[string][]iam.Statement{
		"sender": {{Allow: true, Actions: []string{"sqs:SendMessage", "sqs:GetQueueUrl"}, Resources: []string{queue.ARN}}}}}
	client := sqs.New(sqs.Options{Region: stack.Region, BaseEndpoint: aws.String(srv.URL), Credentials: credentials.NewStaticCredentialsProvider(q.Credential("sender"), "x", "")})
	ctx := context.Background()
	if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue.URL), Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("1"), MessageBody: aws.String("x")}}}); err != nil {
		t.Fatalf("a batch its role allows: %v", err)
	}
	_, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL)})
	var ae smithy.APIError
	if !errors.As(err, &ae) || !strings.Contains(ae.ErrorMessage(), "is not authorized to perform: sqs:ReceiveMessage on resource: "+queue.ARN) {
		t.Fatalf("a call its role lacks: %v", err)
	}
	operator := sqs.New(sqs.Options{Region: stack.Region, BaseEndpoint: aws.String(srv.URL), Credentials: credentials.NewStaticCredentialsProvider(q.Credential("operator"), "x", "")})
	if out, err := operator.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL)}); err != nil || len(out.Messages) != 1 {
		t.Fatalf("the operator, who has no role here: %v %v", out, err)
	}
}

// TestAQueueThatRefusesSendsAnswersAccessDenied: a queue whose policy
// denies one caller's sends (the alarm campaign's fault) answers that
// caller's SendMessage and SendMessageBatch with AccessDenied, once, not
// retried by the SDK, and takes nothing from it; another caller still
// sends, receives stay open, and lifting the fault lets the caller send
// again.
func TestAQueueThatRefusesSendsAnswersAccessDenied(t *testing.T) {
	jobs, _, client, _ := jobsQueue(t, 2)
	q := sqsqueue.New(client, jobs.URL)
	ctx := context.Background()
	jobs.RefuseSends("test", true)
	for _, send := range []func() error{
		func() error { return q.Send(ctx, "g", []byte("x"), 0) },
		func() error { return q.SendBatch(ctx, "g", [][]byte{[]byte("x"), []byte("y")}) },
	} {
		var api smithy.APIError
		if err := send(); !errors.As(err, &api) || api.ErrorCode() != "AccessDenied" {
			t.Fatalf("a refused send: %v", err)
		}
	}
	if v, f, d := jobs.Counts(); v+f+d != 0 {
		t.Fatalf("refused sends left messages: %d %d %d", v, f, d)
	}
	jobs.RefuseSends("someone else", true)
	if err := q.Send(ctx, "g", []byte("x"), 0); err != nil {
		t.Fatalf("another caller's refusal refused this one: %v", err)
	}
	if got, err := q.Receive(ctx, 10, time.Second); err != nil || len(got) != 1 {
		t.Fatalf("receive: %v %v", got, err)
	}
	jobs.RefuseSends("", true) // every caller
	if err := q.Send(ctx, "g", []byte("x"), 0); err == nil {
		t.Fatal("a queue refusing every caller took a send")
	}
	jobs.RefuseSends("", false)
	if err := q.Send(ctx, "g", []byte("x"), 0); err != nil {
		t.Fatalf("after the fault was lifted: %v", err)
	}
}

// TestOldestAgeIsSQSsApproximateAgeOfOldestMessage: none for an empty
// queue; the oldest message's age whether visible or in flight; a
// message received PoisonReceives times is left out (SQS's poison-pill
// rule), and a deleted one is gone.
func TestOldestAgeIsSQSsApproximateAgeOfOldestMessage(t *testing.T) {
	jobs, _, _, clk := jobsQueue(t, 10)
	now := clk.Now()
	if _, ok := jobs.OldestAge(now); ok {
		t.Fatal("an empty queue has an oldest message")
	}
	old := jobs.Send("old", 0)
	young := jobs.Send("young", 0)
	old.Sent, young.Sent = now.Add(-40*time.Second), now.Add(-5*time.Second)
	if age, ok := jobs.OldestAge(now); !ok || age != 40*time.Second {
		t.Fatalf("age %v %v, want 40s", age, ok)
	}
	got := jobs.Receive(10, time.Hour) // in flight: still counted
	if len(got) != 2 {
		t.Fatalf("received %d", len(got))
	}
	if age, _ := jobs.OldestAge(now); age != 40*time.Second {
		t.Fatalf("in flight: age %v, want 40s", age)
	}
	old.Receives = PoisonReceives
	if age, _ := jobs.OldestAge(now); age != 5*time.Second {
		t.Fatalf("with the oldest a poison pill: age %v, want the next one's 5s", age)
	}
	for _, m := range got {
		jobs.Delete(m.Receipt)
	}
	if _, ok := jobs.OldestAge(now); ok {
		t.Fatal("deleted messages still have an age")
	}
}
