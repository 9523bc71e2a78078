package webhook

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/store"
)

// Updates and conditions are built with the SDK's expression builder,
// which names every attribute and value (#0, :0…). An attribute's name
// never holds a dot: expression.Name reads one as a nested path.

// built is the expression of upd where cond holds (cond may be unset).
func built(upd expression.UpdateBuilder, cond expression.ConditionBuilder) (expression.Expression, error) {
	b := expression.NewBuilder().WithUpdate(upd)
	if cond.IsSet() {
		b = b.WithCondition(cond)
	}
	e, err := b.Build()
	if err != nil {
		return expression.Expression{}, fmt.Errorf("webhook: an update's expression: %w", err)
	}
	return e, nil
}

// updateInput is the UpdateItem of key on db's table: upd where cond holds.
func updateInput(db *store.DB, key map[string]ddbtypes.AttributeValue, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (*dynamodb.UpdateItemInput, error) {
	e, err := built(upd, cond)
	if err != nil {
		return nil, err
	}
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(db.Table), Key: key,
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}, nil
}

// txUpdate is a transaction's Update of key on db's table: upd where cond
// holds.
func txUpdate(db *store.DB, key map[string]ddbtypes.AttributeValue, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (ddbtypes.TransactWriteItem, error) {
	e, err := built(upd, cond)
	if err != nil {
		return ddbtypes.TransactWriteItem{}, err
	}
	return ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
		TableName: aws.String(db.Table), Key: key,
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}}, nil
}

// conditionOf is the condition expression of cond alone (a Put's, a
// Delete's).
func conditionOf(cond expression.ConditionBuilder) (expression.Expression, error) {
	e, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return expression.Expression{}, fmt.Errorf("webhook: a condition: %w", err)
	}
	return e, nil
}
