package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Key attribute names of the table and its indexes. The GSIs are generic and
// sparse: each item type fills only the slots it needs (docs/data-model.md).
const (
	AttrPK = "PK"
	AttrSK = "SK"
	// AttrTTL is the table's TTL attribute (epoch seconds). TTL only tidies:
	// every condition checks expiry itself, since TTL deletes lazily.
	AttrTTL = "ttl"
)

// GSIs lists the global secondary indexes by name; index i uses the
// attributes GSI<i>PK and GSI<i>SK.
// GSI6 is reserved for the outbox's pending events, so that a sweep reads
// only what is pending (sparse: dispatched events leave it).
var GSIs = []string{"GSI1", "GSI2", "GSI3", "GSI4", "GSI5", "GSI6"}

// GSIKeyAttrs returns the partition and sort key attribute names of an index.
func GSIKeyAttrs(index string) (pk, sk string) { return index + "PK", index + "SK" }

// TableDefinition is the single table's schema, shared by EnsureTable and
// the CDK app so that the two cannot drift.
func TableDefinition(name string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String(AttrPK), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrSK), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String(AttrSK), KeyType: ddbtypes.KeyTypeRange},
		},
	}
	for _, idx := range GSIs {
		pk, sk := GSIKeyAttrs(idx)
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			ddbtypes.AttributeDefinition{AttributeName: aws.String(pk), AttributeType: ddbtypes.ScalarAttributeTypeS},
			ddbtypes.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: ddbtypes.ScalarAttributeTypeS})
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ddbtypes.GlobalSecondaryIndex{
			IndexName: aws.String(idx),
			KeySchema: []ddbtypes.KeySchemaElement{
				{AttributeName: aws.String(pk), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: aws.String(sk), KeyType: ddbtypes.KeyTypeRange},
			},
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll},
		})
	}
	return in
}

// EnsureTable creates the table when it is missing, waits until it is
// active and turns on TTL on AttrTTL, as the CDK app's table has it.
func (db *DB) EnsureTable(ctx context.Context) error {
	describe := &dynamodb.DescribeTableInput{TableName: aws.String(db.Table)}
	_, err := db.Client.DescribeTable(ctx, describe)
	if err == nil {
		return nil
	}
	if !IsResourceNotFound(err) {
		return fmt.Errorf("describe table %s: %w", db.Table, err)
	}
	if _, err := db.Client.CreateTable(ctx, TableDefinition(db.Table)); err != nil {
		var inUse *ddbtypes.ResourceInUseException
		if !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", db.Table, err)
		}
	}
	waiter := dynamodb.NewTableExistsWaiter(db.Client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	if err := waiter.Wait(ctx, describe, 2*time.Minute); err != nil {
		return fmt.Errorf("table %s: %w", db.Table, err)
	}
	_, err = db.Client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(db.Table),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(AttrTTL), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("table %s: turn on TTL: %w", db.Table, err)
	}
	return nil
}
