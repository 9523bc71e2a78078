// Package sqsqueue is the queue.Queue adapter on Amazon SQS (or moto,
// LocalStack, localcloud's queue server). It is a package of its own so
// that what links the queue interface (the outbox, so every API function)
// does not link the SQS client: only the functions that send to or
// receive from a queue wire it (shared/webhookwire, shared/app).
package sqsqueue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/practice-api/practice-api/shared/queue"
)

// SQS is the adapter on an Amazon SQS queue (or moto, or LocalStack).
type SQS struct {
	client *sqs.Client
	url    string
}

var _ queue.Queue = (*SQS)(nil)

// New binds a client to a queue URL.
func New(client *sqs.Client, url string) *SQS { return &SQS{client: client, url: url} }

// Send enqueues body with DelaySeconds, in group (its MessageGroupId: a
// standard queue whose messages carry one is a fair queue).
func (q *SQS) Send(ctx context.Context, group string, body []byte, delay time.Duration) error {
	if delay > queue.MaxDelay {
		return queue.ErrDelayTooLong
	}
	_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.url), MessageBody: aws.String(string(body)),
		DelaySeconds: int32((delay + time.Second - 1) / time.Second), MessageGroupId: groupID(group),
	})
	if err != nil {
		return fmt.Errorf("sqs send: %w", err)
	}
	return nil
}

// batchAttempts is how often SendBatch tries entries that SQS refused.
const batchAttempts = 3

// SendBatch sends bodies ten to a SendMessageBatch call. SQS answers per
// entry; entries it refused are sent again (up to batchAttempts in all),
// and any still refused make the error. Entries that succeeded are not
// sent again, so one failing entry does not duplicate the others.
func (q *SQS) SendBatch(ctx context.Context, group string, bodies [][]byte, delays ...time.Duration) error {
	pending := make([]int, len(bodies))
	for i := range bodies {
		pending[i] = i
	}
	var lastErr error
	for attempt := 0; attempt < batchAttempts && len(pending) > 0; attempt++ {
		var refused []int
		for start := 0; start < len(pending); start += 10 {
			chunk := pending[start:min(start+10, len(pending))]
			entries := make([]sqstypes.SendMessageBatchRequestEntry, len(chunk))
			for j, i := range chunk {
				entries[j] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(bodies[i])), MessageGroupId: groupID(group),
					DelaySeconds: int32((queue.DelayOf(delays, i) + time.Second - 1) / time.Second)}
			}
			out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
			if err != nil {
				lastErr = fmt.Errorf("sqs send batch: %w", err)
				refused = append(refused, chunk...)
				continue
			}
			for _, f := range out.Failed {
				i, _ := strconv.Atoi(aws.ToString(f.Id))
				refused = append(refused, i)
				lastErr = fmt.Errorf("sqs send batch: entry refused: %s %s", aws.ToString(f.Code), aws.ToString(f.Message))
			}
		}
		pending = refused
		if ctx.Err() != nil {
			break
		}
	}
	if len(pending) > 0 {
		slices.Sort(pending)
		return &queue.BatchError{Unsent: pending, Err: fmt.Errorf("%d of %d messages not sent: %w", len(pending), len(bodies), lastErr)}
	}
	return nil
}

// groupID is a group as SQS takes it: none for "" (the message is then a
// tenant of its own).
func groupID(group string) *string {
	if group == "" {
		return nil
	}
	return aws.String(group)
}

// Receive long-polls for up to wait (whole seconds, at most 20).
func (q *SQS) Receive(ctx context.Context, max int, wait time.Duration) ([]queue.Message, error) {
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.url), MaxNumberOfMessages: int32(min(max, 10)),
		WaitTimeSeconds:             int32(min(wait/time.Second, 20)),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount, sqstypes.MessageSystemAttributeNameMessageGroupId},
	})
	if err != nil {
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	msgs := make([]queue.Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		n, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		msgs = append(msgs, queue.Message{ID: aws.ToString(m.MessageId), Body: []byte(aws.ToString(m.Body)),
			Receipt: aws.ToString(m.ReceiptHandle), ReceiveCount: n, Group: m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]})
	}
	return msgs, nil
}

// Delete acknowledges a message.
func (q *SQS) Delete(ctx context.Context, m queue.Message) error {
	_, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(m.Receipt)})
	if err != nil {
		return fmt.Errorf("sqs delete: %w", err)
	}
	return nil
}

// Hide keeps a received message invisible for d more (up to 12 hours): the
// way to pause longer than MaxDelay without re-sending.
func (q *SQS) Hide(ctx context.Context, m queue.Message, d time.Duration) error {
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(m.Receipt), VisibilityTimeout: int32(d / time.Second),
	})
	if err != nil {
		return fmt.Errorf("sqs change visibility: %w", err)
	}
	return nil
}
