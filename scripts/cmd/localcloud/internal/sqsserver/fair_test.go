package sqsserver

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/queue/sqsqueue"
)

// fairServer serves one queue, "fair", whose messages stay in flight a
// minute, and returns it with an SDK client of the server.
func fairServer(t *testing.T) (*Server, *Queue, *sqs.Client) {
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	s := New(srv.URL, iam.NewIdentities())
	srv.Config.Handler = s
	q := s.Create(&stack.Queue{Name: "fair", Visibility: time.Minute, Retention: time.Hour}, nil)
	client := sqs.New(sqs.Options{Region: stack.Region, BaseEndpoint: aws.String(srv.URL), Credentials: credentials.NewStaticCredentialsProvider(s.Credential("test"), "x", "")})
	return s, q, client
}

// TestTheQueueServerIsAFairQueue: messages sent with a MessageGroupId (the
// real SDK, through the service's adapter) make a fair queue, as "How
// Amazon SQS fair queues work" describes it
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-fair-queues-detailed.html):
// a tenant with 40 messages in flight ("at least 30 … more than 10%") and a
// backlog is a noisy neighbour, so a quiet tenant's message sent after its
// whole backlog is received first ("receive messages from quiet tenants
// whenever quiet-tenant messages are available"); its backlog still drains
// ("not dropped or throttled"); each message comes back with its
// MessageGroupId; the fair-queue metrics count the noisy group and the
// quiet groups' messages; and a group id SQS would refuse is refused.
func TestTheQueueServerIsAFairQueue(t *testing.T) {
	_, fq, client := fairServer(t)
	q := sqsqueue.New(client, fq.URL)
	ctx := context.Background()
	var bodies [][]byte
	for i := range 140 {
		bodies = append(bodies, fmt.Appendf(nil, "A-%d", i))
	}
	if err := q.SendBatch(ctx, "org-A", bodies); err != nil {
		t.Fatal(err)
	}
	var held []queue.Message
	for len(held) < 40 {
		msgs, err := q.Receive(ctx, min(10, 40-len(held)), time.Second)
		if err != nil || len(msgs) == 0 {
			t.Fatalf("receive: %v", err)
		}
		held = append(held, msgs...)
	}
	if err := q.Send(ctx, "org-B#replay", []byte("B-1"), 0); err != nil {
		t.Fatal(err)
	}
	msgs, err := q.Receive(ctx, 3, time.Second)
	if err != nil || len(msgs) != 3 || string(msgs[0].Body) != "B-1" || msgs[0].Group != "org-B#replay" || msgs[1].Group != "org-A" {
		t.Fatalf("the next receive: %+v %v; want B's message first, then A's", msgs, err)
	}
	if m := fq.Fairness(); m.NoisyGroups != 1 || m.MessagesNotVisibleInQuietGroups != 1 || m.MessagesVisibleInQuietGroups != 0 || fq.Noisy()[0] != "org-A" {
		t.Errorf("metrics %+v (noisy %v): want org-A noisy and B's one message in flight", m, fq.Noisy())
	}
	for _, m := range append(held, msgs...) {
		if err := q.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	drained := 0
	for deadline := time.Now().Add(10 * time.Second); drained < 98 && time.Now().Before(deadline); {
		msgs, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			drained++
			_ = q.Delete(ctx, m)
		}
	}
	if m := fq.Fairness(); drained != 98 || m.NoisyGroups != 0 {
		t.Fatalf("drained %d of 98; metrics after %+v", drained, m)
	}

	for _, bad := range []string{string(make([]byte, 129)), "tab\there", "ø"} {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(fq.URL), MessageBody: aws.String("x"), MessageGroupId: aws.String(bad)})
		var ae smithy.APIError
		if !errors.As(err, &ae) || !strings.HasSuffix(ae.ErrorCode(), "InvalidParameterValue") {
			t.Errorf("group id %q: %v", bad, err)
		}
	}
	out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(fq.URL), Entries: []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("ok"), MessageBody: aws.String("x"), MessageGroupId: aws.String("g")},
		{Id: aws.String("bad"), MessageBody: aws.String("x"), MessageGroupId: aws.String("tab\there")}}})
	if err != nil || len(out.Successful) != 1 || len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "bad" {
		t.Fatalf("a batch with one bad group id: %+v %v", out, err)
	}
}

// TestTheJournalKeepsGroups: a message's group survives a restart of the
// server on the same journal, and so does its tenant's place: a tenant
// with 40 messages in flight when it stopped is noisy after it.
func TestTheJournalKeepsGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queues.jsonl")
	serve := func() *Queue {
		s := New("http://127.0.0.1:1", iam.NewIdentities())
		q := s.Create(&stack.Queue{Name: "fair", Visibility: time.Minute, Retention: time.Hour}, nil)
		if err := s.OpenJournal(path); err != nil {
			t.Fatal(err)
		}
		return q
	}
	q := serve()
	for i := range 45 {
		q.SendGroup(fmt.Sprint("A-", i), "org-A", 0)
	}
	for len(q.Receive(10, -1)) > 0 && len(q.msgs) > 0 {
		if _, f, _ := q.Counts(); f >= 40 {
			break
		}
	}
	q2 := serve()
	q2.SendGroup("B-1", "org-B", 0)
	got := q2.Receive(1, -1)
	if len(got) != 1 || got[0].Group != "org-B" {
		t.Fatalf("after the restart: %+v; want org-B's message first (org-A noisy, its groups kept)", got)
	}
}
