package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/store"
)

// Table is a durable work queue kept in the service's own table: the
// devserver's stand-in for SQS, so that jobs queued when the process is
// killed (kill -9 included) are still there when it starts again on the
// same data (LOCAL_DYNAMODB_DIR). It has SQS's semantics: delays,
// visibility timeouts, receive counts, at-least-once delivery, and a
// message received MaxReceives times without being deleted is set aside
// as dead (SQS's redrive to a dead-letter queue).
//
// A message is the item QUEUE#<name> / MSG#<id>; while it waits it has
// the GSI5 slot QUEUE#<name> / <visible at, ms>#<id>, which a receive
// queries for what is due and moves forward by the visibility timeout
// with a conditional write (the receipt is the claim).
type Table struct {
	db          *store.DB
	name        string
	visibility  time.Duration
	maxReceives int
	now         func() time.Time
	wake        chan struct{}
}

// NewTable returns the queue name on db; maxReceives 0 never dead-letters.
func NewTable(db *store.DB, name string, visibility time.Duration, maxReceives int) *Table {
	return &Table{db: db, name: name, visibility: visibility, maxReceives: maxReceives, now: time.Now, wake: make(chan struct{}, 1)}
}

var _ Queue = (*Table)(nil)

// Retention is how long an unreceived message is kept (SQS's default).
const Retention = 4 * 24 * time.Hour

const queueIndex = "GSI5"

func (q *Table) pk() string { return "QUEUE#" + q.name }

func slot(visibleAt time.Time, id string) string {
	return fmt.Sprintf("%015d#%s", visibleAt.UnixMilli(), id)
}

// Send enqueues body.
func (q *Table) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if delay > MaxDelay {
		return ErrDelayTooLong
	}
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	now := q.now()
	_, err = q.db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(q.db.Table), Item: map[string]ddbtypes.AttributeValue{
		store.AttrPK: &ddbtypes.AttributeValueMemberS{Value: q.pk()}, store.AttrSK: &ddbtypes.AttributeValueMemberS{Value: "MSG#" + id.String()},
		"kind": &ddbtypes.AttributeValueMemberS{Value: "queue_message"}, "id": &ddbtypes.AttributeValueMemberS{Value: id.String()},
		"body": &ddbtypes.AttributeValueMemberB{Value: body}, "receive_count": &ddbtypes.AttributeValueMemberN{Value: "0"},
		"GSI5PK": &ddbtypes.AttributeValueMemberS{Value: q.pk()}, "GSI5SK": &ddbtypes.AttributeValueMemberS{Value: slot(now.Add(delay), id.String())},
		store.AttrTTL: &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(Retention).Unix(), 10)},
	}})
	if err != nil {
		return fmt.Errorf("queue %s: send: %w", q.name, err)
	}
	notify(q.wake)
	return nil
}

// SendBatch enqueues each body.
func (q *Table) SendBatch(ctx context.Context, bodies [][]byte) error {
	return sendEach(ctx, q.Send, bodies)
}

// Receive returns up to max due messages, waiting up to wait for the first,
// and hides them for the visibility timeout.
func (q *Table) Receive(ctx context.Context, max int, wait time.Duration) ([]Message, error) {
	// A send in this process wakes a receiver at once; the poll only finds
	// delayed messages come due (and sends of other processes), so once a
	// second is enough, and keeps idle receivers off the store.
	return receiveWaiting(ctx, wait, time.Second, q.wake, func() ([]Message, error) { return q.take(ctx, max) })
}

func (q *Table) take(ctx context.Context, max int) ([]Message, error) {
	now := q.now()
	page, err := q.db.Query(ctx, store.ListQuery{Index: queueIndex, PK: q.pk(), SKTo: slot(now, "~"), Limit: max})
	if err != nil {
		return nil, fmt.Errorf("queue %s: receive: %w", q.name, err)
	}
	var out []Message
	for _, it := range page.Items {
		sk, _ := it[store.AttrSK].(*ddbtypes.AttributeValueMemberS)
		was, _ := it["GSI5SK"].(*ddbtypes.AttributeValueMemberS)
		id, _ := it["id"].(*ddbtypes.AttributeValueMemberS)
		if sk == nil || was == nil || id == nil {
			continue
		}
		receipt := uuid.NewString()
		res, err := q.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(q.db.Table), Key: store.Key(q.pk(), sk.Value),
			UpdateExpression:    aws.String("SET GSI5SK = :next, receipt = :r ADD receive_count :one"),
			ConditionExpression: aws.String("GSI5SK = :was"), // nobody received it meanwhile
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
				":next": &ddbtypes.AttributeValueMemberS{Value: slot(now.Add(q.visibility), id.Value)},
				":was":  &ddbtypes.AttributeValueMemberS{Value: was.Value}, ":r": &ddbtypes.AttributeValueMemberS{Value: receipt},
				":one": &ddbtypes.AttributeValueMemberN{Value: "1"},
			},
			ReturnValues: ddbtypes.ReturnValueAllNew,
		})
		if store.IsConditionFailed(err) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("queue %s: receive: %w", q.name, err)
		}
		count, _ := strconv.Atoi(res.Attributes["receive_count"].(*ddbtypes.AttributeValueMemberN).Value)
		if q.maxReceives > 0 && count > q.maxReceives {
			// Received MaxReceives times and never deleted: out of the
			// queue, kept (dead) for inspection, as SQS's dead-letter queue.
			_, _ = q.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(q.db.Table), Key: store.Key(q.pk(), sk.Value),
				UpdateExpression:          aws.String("SET dead = :yes, dead_at = :now REMOVE GSI5PK, GSI5SK"),
				ConditionExpression:       aws.String("receipt = :r"),
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":yes": &ddbtypes.AttributeValueMemberBOOL{Value: true}, ":r": &ddbtypes.AttributeValueMemberS{Value: receipt}, ":now": &ddbtypes.AttributeValueMemberS{Value: store.FormatTime(now)}},
			})
			continue
		}
		body, _ := res.Attributes["body"].(*ddbtypes.AttributeValueMemberB)
		m := Message{ID: id.Value, Receipt: receipt, ReceiveCount: count}
		if body != nil {
			m.Body = body.Value
		}
		out = append(out, m)
	}
	return out, nil
}

// Delete removes a message if the receipt is its latest.
func (q *Table) Delete(ctx context.Context, m Message) error {
	_, err := q.db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(q.db.Table), Key: store.Key(q.pk(), "MSG#"+m.ID),
		ConditionExpression:       aws.String("receipt = :r"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":r": &ddbtypes.AttributeValueMemberS{Value: m.Receipt}},
	})
	if store.IsConditionFailed(err) {
		return nil // a stale receipt: the message came back and is someone else's
	}
	if err != nil {
		return fmt.Errorf("queue %s: delete: %w", q.name, err)
	}
	return nil
}

// Counts are how many messages wait (visible or not) and how many are dead.
func (q *Table) Counts(ctx context.Context) (waiting, dead int, err error) {
	p := dynamodb.NewQueryPaginator(q.db.Client, &dynamodb.QueryInput{
		TableName: aws.String(q.db.Table), KeyConditionExpression: aws.String("PK = :pk"), ProjectionExpression: aws.String("dead"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: q.pk()}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, 0, err
		}
		for _, it := range page.Items {
			if d, ok := it["dead"].(*ddbtypes.AttributeValueMemberBOOL); ok && d.Value {
				dead++
			} else {
				waiting++
			}
		}
	}
	return waiting, dead, nil
}
