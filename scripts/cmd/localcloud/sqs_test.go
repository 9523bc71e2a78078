package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/shared/queue"
)

// TestSQSServerKeepsSQSSemantics drives the in-repo SQS server with the
// real SDK through the service's own adapter (shared/queue): delays,
// visibility timeouts and receive counts, batches, and the redrive of a
// message received maxReceiveCount times to its dead-letter queue.
func TestSQSServerKeepsSQSSemantics(t *testing.T) {
	jobs, dlq, client := jobsQueue(t, 2)
	q := queue.NewSQS(client, jobs.url)
	ctx := context.Background()

	if err := q.Send(ctx, []byte("later"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, _ := q.Receive(ctx, 10, time.Second); len(got) != 0 {
		t.Fatalf("a delayed message was received at once: %v", got)
	}
	var counts []int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		got, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got {
			counts = append(counts, m.ReceiveCount) // never deleted: it fails each time
		}
		if v, _, _ := dlq.counts(); v == 1 {
			break
		}
	}
	if fmt.Sprint(counts) != "[1 2]" {
		t.Fatalf("receive counts %v, want [1 2] and then the dead-letter queue", counts)
	}
	if v, f, d := jobs.counts(); v+f+d != 0 {
		t.Fatalf("the message is still in its queue: %d %d %d", v, f, d)
	}

	var bodies [][]byte
	for i := range 25 {
		bodies = append(bodies, fmt.Appendf(nil, `{"n":%d}`, i))
	}
	if err := q.SendBatch(ctx, bodies); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Second); len(seen) < 25 && time.Now().Before(deadline); {
		got, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got {
			seen[string(m.Body)] = true
			if err := q.Delete(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) != 25 {
		t.Fatalf("%d of 25 batched messages", len(seen))
	}
	if err := q.Hide(ctx, queue.Message{Receipt: "nope"}, time.Second); err == nil {
		t.Fatal("a bad receipt was accepted")
	}
}

func TestFilterPatterns(t *testing.T) {
	rec := map[string]any{"eventName": "INSERT", "dynamodb": map[string]any{"NewImage": map[string]any{
		"kind": map[string]any{"S": "event"}, "type": map[string]any{"S": "matter.created"}}}}
	for pattern, want := range map[string]bool{
		`{"dynamodb":{"NewImage":{"kind":{"S":["event"]}}},"eventName":["INSERT"]}`:                 true,
		`{"dynamodb":{"NewImage":{"kind":{"S":["event"]}}},"eventName":["MODIFY"]}`:                 false,
		`{"dynamodb":{"NewImage":{"type":{"S":[{"anything-but":["matter.created"]}]}}}}`:            false,
		`{"dynamodb":{"NewImage":{"type":{"S":[{"prefix":"matter."}]}}}}`:                           true,
		`{"dynamodb":{"NewImage":{"gone":{"S":[{"exists":false}]}}}}`:                               false, // the object itself is absent
		`{"dynamodb":{"NewImage":{"kind":[{"exists":true}]}}}`:                                      true,
		`{"eventName":["INSERT","MODIFY"],"dynamodb":{"NewImage":{"type":{"S":["invoice.paid"]}}}}`: false,
	} {
		f, err := parseFilter(pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := passes([]filter{f}, rec); got != want {
			t.Errorf("%s: %v, want %v", pattern, got, want)
		}
	}
}

// TestUnimplementedFilterOperatorsStopLocalcloud: an operator localcloud
// does not implement is refused by name at start, never matched some
// other way.
func TestUnimplementedFilterOperatorsStopLocalcloud(t *testing.T) {
	for pattern, names := range map[string]string{
		`{"size":[{"numeric":[">",0]}]}`:                              "numeric",
		`{"ip":[{"cidr":"10.0.0.0/24"}]}`:                             "cidr",
		`{"name":[{"wildcard":"matter.*"}]}`:                          "wildcard",
		`{"$or":[{"a":["x"]},{"b":["y"]}]}`:                           "$or",
		`{"type":[{"anything-but":{"prefix":"matter."}}]}`:            "anything-but of an operator",
		`{"type":[{"anything-but":[{"prefix":"matter."}]}]}`:          "anything-but of an operator",
		`{"dynamodb":{"NewImage":{"n":{"N":[{"numeric":["=",1]}]}}}}`: "dynamodb.NewImage.n.N: the numeric operator",
		`{"type":"matter.created"}`:                                   "values are arrays",
		`{"type":[{"prefix":"a","suffix":"b"}]}`:                      "one operator",
	} {
		if _, err := parseFilter(pattern); err == nil || !strings.Contains(err.Error(), names) {
			t.Errorf("%s: %v, want an error naming %q", pattern, err, names)
		}
	}
}

// TestRedriveFromADeadLetterQueue rehearses the runbook's redrive
// (docs/operations.md#dead-letter-queue) with the SDK's own calls:
// StartMessageMoveTask puts a dead-letter queue's messages back on the
// queue they failed on, visible and with fresh receive counts, and
// ListMessageMoveTasks reports the task; a queue that is no one's
// dead-letter queue is refused, as SQS refuses it.
func TestRedriveFromADeadLetterQueue(t *testing.T) {
	jobs, dlq, client := jobsQueue(t, 1)
	ctx := context.Background()
	q := queue.NewSQS(client, jobs.url)
	for i := range 3 {
		if err := q.Send(ctx, fmt.Appendf(nil, `{"n":%d}`, i), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Each is received once and not deleted (its worker failed): the next
	// receive moves it to the dead-letter queue.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, err := q.Receive(ctx, 10, 1500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if v, _, _ := dlq.counts(); v == 3 {
			break
		}
	}
	if v, _, _ := dlq.counts(); v != 3 {
		t.Fatalf("%d messages in the dead-letter queue, want 3", v)
	}
	if _, err := client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(jobs.arn)}); err == nil {
		t.Fatal("a move from a queue that is no one's dead-letter queue was accepted")
	}
	start, err := client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.arn)})
	if err != nil || aws.ToString(start.TaskHandle) == "" {
		t.Fatalf("start: %v", err)
	}
	list, err := client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq.arn)})
	if err != nil || len(list.Results) != 1 || aws.ToString(list.Results[0].Status) != "COMPLETED" ||
		list.Results[0].ApproximateNumberOfMessagesMoved != 3 || aws.ToString(list.Results[0].DestinationArn) != jobs.arn {
		t.Fatalf("tasks: %+v %v", list, err)
	}
	got, err := q.Receive(ctx, 10, time.Second)
	if err != nil || len(got) != 3 || got[0].ReceiveCount != 1 {
		t.Fatalf("after the redrive: %+v %v", got, err)
	}
	if v, f, d := dlq.counts(); v+f+d != 0 {
		t.Fatalf("the dead-letter queue still holds %d", v+f+d)
	}
}

// jobsQueue serves a queue "jobs" whose messages go to "jobs-dlq" after
// maxReceives receives, and returns them with an SDK client of the server.
func jobsQueue(t *testing.T, maxReceives int) (jobs, dlq *sqsQueue, client *sqs.Client) {
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	s := newSQSServer(srv.URL)
	srv.Config.Handler = s
	dlq = s.create(&queueSpec{name: "jobs-dlq", visibility: time.Second, retention: time.Hour}, nil)
	jobs = s.create(&queueSpec{name: "jobs", visibility: time.Second, retention: time.Hour, maxReceives: maxReceives}, dlq)
	client = sqs.New(sqs.Options{Region: localRegion, BaseEndpoint: aws.String(srv.URL), Credentials: credentials.NewStaticCredentialsProvider(s.credential("test"), "x", "")})
	return jobs, dlq, client
}

// TestSQSServerRefusesStrangers: a request signed with no key, or with a
// key this run did not issue, is refused as SQS refuses one (403, the
// JSON protocol's error), before it reads or changes a queue.
func TestSQSServerRefusesStrangers(t *testing.T) {
	jobs, _, _ := jobsQueue(t, 2)
	srvURL := strings.TrimSuffix(jobs.url, "/"+localAccount+"/jobs")
	for _, c := range []struct{ key, want string }{
		{"", "MissingAuthenticationToken"},
		{"local", "InvalidClientTokenId"},
		{"LCL0123456789ABCDEF0", "InvalidClientTokenId"},
	} {
		var creds aws.CredentialsProvider = aws.AnonymousCredentials{} // unsigned
		if c.key != "" {
			creds = credentials.NewStaticCredentialsProvider(c.key, "x", "")
		}
		client := sqs.New(sqs.Options{Region: localRegion, BaseEndpoint: aws.String(srvURL), Credentials: creds})
		_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(jobs.url), MessageBody: aws.String("x")})
		var re *awshttp.ResponseError
		if err == nil || !errors.As(err, &re) || re.HTTPStatusCode() != 403 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("key %q: %v", c.key, err)
		}
	}
	if v, f, d := jobs.counts(); v+f+d != 0 {
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
	q := newSQSServer(srv.URL)
	srv.Config.Handler = q
	queue := q.create(&queueSpec{name: "jobs", visibility: time.Second, retention: time.Hour}, nil)
	q.pol = &policies{roles: map[string]string{"sender": "senderRole"}, byCaller: map[string][]statement{
		"sender": {{allow: true, actions: []string{"sqs:SendMessage", "sqs:GetQueueUrl"}, resources: []string{queue.arn}}}}}
	client := sqs.New(sqs.Options{Region: localRegion, BaseEndpoint: aws.String(srv.URL), Credentials: credentials.NewStaticCredentialsProvider(q.credential("sender"), "x", "")})
	ctx := context.Background()
	if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue.url), Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("1"), MessageBody: aws.String("x")}}}); err != nil {
		t.Fatalf("a batch its role allows: %v", err)
	}
	_, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.url)})
	var ae smithy.APIError
	if !errors.As(err, &ae) || !strings.Contains(ae.ErrorMessage(), "is not authorized to perform: sqs:ReceiveMessage on resource: "+queue.arn) {
		t.Fatalf("a call its role lacks: %v", err)
	}
	operator := sqs.New(sqs.Options{Region: localRegion, BaseEndpoint: aws.String(srv.URL), Credentials: credentials.NewStaticCredentialsProvider(q.credential("operator"), "x", "")})
	if out, err := operator.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.url)}); err != nil || len(out.Messages) != 1 {
		t.Fatalf("the operator, who has no role here: %v %v", out, err)
	}
}
