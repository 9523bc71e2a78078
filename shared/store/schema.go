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

// Index is one global secondary index: index i uses the attributes
// GSI<i>PK and GSI<i>SK, and items fill only the slots they need
// (docs/data-model.md names the Query each slot serves).
type Index struct {
	Name IndexName
	// KeysOnly indexes project the keys alone: an item's other attributes
	// change without writing the index. The others project every
	// attribute, since the lists they serve answer with whole items.
	KeysOnly bool
}

// Indexes are the table's global secondary indexes. GSI6 holds the
// outbox's pending and parked events (sparse: dispatched events leave it),
// keys only: the dispatcher reads each event whole when it claims it.
// GSI7 is the sixth slot that projects every attribute, for the one type
// that fills five others (invoices, by last change).
var Indexes = []Index{{Name: GSI1}, {Name: GSI2}, {Name: GSI3}, {Name: GSI4}, {Name: GSI5}, {Name: GSI6, KeysOnly: true}, {Name: GSI7}}

// IndexName names a global secondary index of the table. Code names an
// index by its constant, never by a string (codecheck fails on a "GSI<n>"
// literal outside this file), so a mistyped index does not compile.
type IndexName string

// The table's global secondary indexes (docs/data-model.md says what each
// slot holds for each type).
const (
	GSI1 IndexName = "GSI1"
	GSI2 IndexName = "GSI2"
	GSI3 IndexName = "GSI3"
	GSI4 IndexName = "GSI4"
	GSI5 IndexName = "GSI5"
	GSI6 IndexName = "GSI6"
	GSI7 IndexName = "GSI7"
)

// GSIs lists the global secondary indexes by name.
var GSIs = func() []string {
	var out []string
	for _, ix := range Indexes {
		out = append(out, string(ix.Name))
	}
	return out
}()

// GSIKeyAttrs returns the partition and sort key attribute names of an index.
func GSIKeyAttrs(index IndexName) (pk, sk string) { return string(index) + "PK", string(index) + "SK" }

// Projection is the index's projection for CreateTable.
func (ix Index) Projection() *ddbtypes.Projection {
	if ix.KeysOnly {
		return &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly}
	}
	return &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll}
}

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
	for _, ix := range Indexes {
		idx := ix.Name
		pk, sk := GSIKeyAttrs(idx)
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			ddbtypes.AttributeDefinition{AttributeName: aws.String(pk), AttributeType: ddbtypes.ScalarAttributeTypeS},
			ddbtypes.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: ddbtypes.ScalarAttributeTypeS})
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, ddbtypes.GlobalSecondaryIndex{
			IndexName: aws.String(string(idx)),
			KeySchema: []ddbtypes.KeySchemaElement{
				{AttributeName: aws.String(pk), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: aws.String(sk), KeyType: ddbtypes.KeyTypeRange},
			},
			Projection: ix.Projection(),
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
