package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/clock"
)

// Keys are the key attributes every item carries; domain items embed it.
// GSI slots an item does not use stay empty and keep it out of that index.
type Keys struct {
	PK     string `dynamodbav:"PK"`
	SK     string `dynamodbav:"SK"`
	GSI1PK string `dynamodbav:"GSI1PK,omitempty"`
	GSI1SK string `dynamodbav:"GSI1SK,omitempty"`
	GSI2PK string `dynamodbav:"GSI2PK,omitempty"`
	GSI2SK string `dynamodbav:"GSI2SK,omitempty"`
	GSI3PK string `dynamodbav:"GSI3PK,omitempty"`
	GSI3SK string `dynamodbav:"GSI3SK,omitempty"`
	GSI4PK string `dynamodbav:"GSI4PK,omitempty"`
	GSI4SK string `dynamodbav:"GSI4SK,omitempty"`
	GSI5PK string `dynamodbav:"GSI5PK,omitempty"`
	GSI5SK string `dynamodbav:"GSI5SK,omitempty"`
	GSI6PK string `dynamodbav:"GSI6PK,omitempty"`
	GSI6SK string `dynamodbav:"GSI6SK,omitempty"`
	GSI7PK string `dynamodbav:"GSI7PK,omitempty"`
	GSI7SK string `dynamodbav:"GSI7SK,omitempty"`
	// Kind names the item type, for operators reading the table.
	Kind string `dynamodbav:"kind"`
}

// Key returns the primary key of an item.
func Key(pk, sk string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		AttrPK: &ddbtypes.AttributeValueMemberS{Value: pk},
		AttrSK: &ddbtypes.AttributeValueMemberS{Value: sk},
	}
}

// Marshal turns a domain item into attributes.
func Marshal(v any) (map[string]ddbtypes.AttributeValue, error) {
	m, err := attributevalue.MarshalMap(v)
	if err != nil {
		return nil, fmt.Errorf("store: marshal %T: %w", v, err)
	}
	return m, nil
}

// Unmarshal decodes attributes into a domain item.
func Unmarshal(m map[string]ddbtypes.AttributeValue, v any) error {
	if err := attributevalue.UnmarshalMap(m, v); err != nil {
		return fmt.Errorf("store: unmarshal %T: %w", v, err)
	}
	return nil
}

// Get reads one item into v with a strongly consistent read; ErrNotFound
// when it does not exist.
func (db *DB) Get(ctx context.Context, pk, sk string, v any) error {
	out, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(db.Table), Key: Key(pk, sk), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return fmt.Errorf("get %s %s: %w", pk, sk, err)
	}
	if out.Item == nil {
		return ErrNotFound
	}
	return Unmarshal(out.Item, v)
}

// Put writes an item unconditionally (an item only its writer owns).
func (db *DB) Put(ctx context.Context, item map[string]ddbtypes.AttributeValue) error {
	_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(db.Table), Item: item})
	return err
}

// PutNew writes an item that must not exist yet; ErrConflict when it does.
func (db *DB) PutNew(ctx context.Context, item map[string]ddbtypes.AttributeValue) error {
	_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(db.Table), Item: item,
		ConditionExpression: itemIsNew.Condition(), ExpressionAttributeNames: itemIsNew.Names(),
	})
	if IsConditionFailed(err) {
		return ErrConflict
	}
	return err
}

// batchWriters is how many BatchWriteItem calls a bulk load keeps in flight.
const batchWriters = 4

// BatchPut writes items unconditionally, 25 at a time over a few parallel
// writers, retrying unprocessed ones. It is for bulk loads (seed) whose keys
// are fresh by construction.
func (db *DB) BatchPut(ctx context.Context, items []map[string]ddbtypes.AttributeValue) error {
	starts := make(chan int)
	errs := make(chan error, batchWriters)
	for range batchWriters {
		go func() {
			var first error
			for start := range starts {
				if first == nil {
					first = db.batchPut(ctx, items[start:min(start+25, len(items))])
				}
			}
			errs <- first
		}()
	}
	for start := 0; start < len(items); start += 25 {
		starts <- start
	}
	close(starts)
	var err error
	for range batchWriters {
		err = errors.Join(err, <-errs)
	}
	return err
}

// batchPut writes up to 25 items, retrying what DynamoDB leaves
// unprocessed (throttling) with a growing pause.
func (db *DB) batchPut(ctx context.Context, chunk []map[string]ddbtypes.AttributeValue) error {
	reqs := make([]ddbtypes.WriteRequest, 0, len(chunk))
	for _, it := range chunk {
		reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: it}})
	}
	pending := map[string][]ddbtypes.WriteRequest{db.Table: reqs}
	for attempt := 0; len(pending[db.Table]) > 0; attempt++ {
		if attempt > 8 {
			return fmt.Errorf("batch put: %d items still unprocessed", len(pending[db.Table]))
		}
		if attempt > 0 {
			if err := clock.Sleep(ctx, time.Duration(attempt*attempt)*50*time.Millisecond); err != nil {
				return fmt.Errorf("batch put: %d items unprocessed: %w", len(pending[db.Table]), err)
			}
		}
		out, err := db.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
		if err != nil {
			return fmt.Errorf("batch put: %w", err)
		}
		pending = out.UnprocessedItems
	}
	return nil
}

// Replace overwrites an existing item whose updated_at is still prev
// (optimistic concurrency): a concurrent change makes it ErrConflict.
// Rewriting the whole item also moves its GSI sort keys with updated_at.
func (db *DB) Replace(ctx context.Context, item map[string]ddbtypes.AttributeValue, prev string) error {
	expr, err := expression.NewBuilder().WithCondition(UnchangedSince(prev)).Build()
	if err != nil {
		return fmt.Errorf("store: replace: %w", err)
	}
	_, err = db.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(db.Table), Item: item, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if IsConditionFailed(err) {
		return ErrConflict
	}
	return err
}

// optimisticAttempts bounds the re-reads of an optimistic change.
const optimisticAttempts = 3

// Optimistic runs attempt (read, change, conditional write) again while it
// fails with ErrConflict, meaning the item changed between read and write;
// after a few tries it gives up with an error naming what kept changing.
func Optimistic(what string, attempt func() error) error {
	for range optimisticAttempts {
		if err := attempt(); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%s keeps changing; try again", what)
}
