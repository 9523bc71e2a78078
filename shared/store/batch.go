package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/listing"
)

// MaxBatchRead is the most keys one BatchGetItem reads (DynamoDB's limit;
// listing's, which the edge's ids parameter shares).
const MaxBatchRead = listing.MaxBatchRead

// batchRetries bounds the calls spent on keys DynamoDB left unprocessed
// (its answer under throttling or past 16 MB: the keys come back in
// UnprocessedKeys, to be asked again).
const batchRetries = 5

// BatchReadInto reads the items of partition pk with the sort keys sks (at
// most MaxBatchRead, none repeated) in one BatchGetItem, consistently, as
// values of T (only T's attributes, less omit), in the order of sks; keys
// with no item are left out. Keys DynamoDB leaves unprocessed are asked
// again, after a short pause, so a throttled round costs another call.
func BatchReadInto[T any](ctx context.Context, db *DB, pk string, sks []string, omit ...string) ([]T, error) {
	if len(sks) == 0 {
		return []T{}, nil
	}
	if len(sks) > MaxBatchRead {
		return nil, fmt.Errorf("store: a batch read of %d keys, over %d", len(sks), MaxBatchRead)
	}
	keys := make([]map[string]ddbtypes.AttributeValue, len(sks))
	for i, sk := range sks {
		keys[i] = Key(pk, sk)
	}
	// The sort key is read too, to put the items back in the order asked.
	proj, names, err := projection(append([]string{AttrSK}, attrsExcept[T](omit)...))
	if err != nil {
		return nil, err
	}
	req := map[string]ddbtypes.KeysAndAttributes{db.Table: {Keys: keys, ConsistentRead: aws.Bool(true),
		ProjectionExpression: proj, ExpressionAttributeNames: names}}
	found := map[string]map[string]ddbtypes.AttributeValue{}
	for attempt := 0; len(req) > 0; attempt++ {
		if attempt > batchRetries {
			return nil, fmt.Errorf("store: a batch read of %s left keys unprocessed %d times", pk, batchRetries)
		}
		if attempt > 0 {
			if err := clock.Sleep(ctx, time.Duration(attempt*attempt)*20*time.Millisecond); err != nil {
				return nil, err
			}
		}
		out, err := db.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, fmt.Errorf("batch get %s: %w", pk, err)
		}
		for _, it := range out.Responses[db.Table] {
			if sk, ok := it[AttrSK].(*ddbtypes.AttributeValueMemberS); ok {
				found[sk.Value] = it
			}
		}
		req = out.UnprocessedKeys
	}
	items := make([]T, 0, len(found))
	for _, sk := range sks {
		it, ok := found[sk]
		if !ok {
			continue
		}
		var v T
		if err := Unmarshal(it, &v); err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	return items, nil
}
