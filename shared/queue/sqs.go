package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQS is the adapter on an Amazon SQS queue (or moto, or LocalStack).
type SQS struct {
	client *sqs.Client
	url    string
}

var _ Queue = (*SQS)(nil)

// NewSQS binds a client to a queue URL.
func NewSQS(client *sqs.Client, url string) *SQS { return &SQS{client: client, url: url} }

// Send enqueues body with DelaySeconds.
func (q *SQS) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if delay > MaxDelay {
		return ErrDelayTooLong
	}
	_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.url), MessageBody: aws.String(string(body)),
		DelaySeconds: int32((delay + time.Second - 1) / time.Second),
	})
	if err != nil {
		return fmt.Errorf("sqs send: %w", err)
	}
	return nil
}

// Receive long-polls for up to wait (whole seconds, at most 20).
func (q *SQS) Receive(ctx context.Context, max int, wait time.Duration) ([]Message, error) {
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.url), MaxNumberOfMessages: int32(min(max, 10)),
		WaitTimeSeconds:             int32(min(wait/time.Second, 20)),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		return nil, fmt.Errorf("sqs receive: %w", err)
	}
	msgs := make([]Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		n, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		msgs = append(msgs, Message{ID: aws.ToString(m.MessageId), Body: []byte(aws.ToString(m.Body)),
			Receipt: aws.ToString(m.ReceiptHandle), ReceiveCount: n})
	}
	return msgs, nil
}

// Delete acknowledges a message.
func (q *SQS) Delete(ctx context.Context, m Message) error {
	_, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(m.Receipt)})
	if err != nil {
		return fmt.Errorf("sqs delete: %w", err)
	}
	return nil
}

// Hide keeps a received message invisible for d more (up to 12 hours): the
// way to pause longer than MaxDelay without re-sending.
func (q *SQS) Hide(ctx context.Context, m Message, d time.Duration) error {
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(m.Receipt), VisibilityTimeout: int32(d / time.Second),
	})
	if err != nil {
		return fmt.Errorf("sqs change visibility: %w", err)
	}
	return nil
}
