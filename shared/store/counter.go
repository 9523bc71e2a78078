package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Increment atomically adds by to the counter item (pk, sk) and returns the
// new value; a missing counter starts at zero.
func (db *DB) Increment(ctx context.Context, pk, sk string, by int64) (int64, error) {
	expr, err := expression.NewBuilder().WithUpdate(expression.Add(expression.Name("value"), expression.Value(by)).
		Set(expression.Name("kind"), expression.Value("counter"))).Build()
	if err != nil {
		return 0, fmt.Errorf("increment %s %s: %w", pk, sk, err)
	}
	out, err := db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(db.Table),
		Key:                       Key(pk, sk),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ReturnValues:              ddbtypes.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("increment %s %s: %w", pk, sk, err)
	}
	n, ok := out.Attributes["value"].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("increment %s %s: no value returned", pk, sk)
	}
	return strconv.ParseInt(n.Value, 10, 64)
}
