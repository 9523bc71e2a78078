package store

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// LoadOrCreateSecret returns a 32-byte process-wide secret stored in the
// table under name, creating it on first use. Every Lambda instance and the
// devserver read the same value once at start, so sealed cursors minted by
// one instance open on another.
func (db *DB) LoadOrCreateSecret(ctx context.Context, name string) ([]byte, error) {
	key := map[string]ddbtypes.AttributeValue{
		AttrPK: &ddbtypes.AttributeValueMemberS{Value: "CONFIG"},
		AttrSK: &ddbtypes.AttributeValueMemberS{Value: "SECRET#" + name},
	}
	for attempt := 0; attempt < 2; attempt++ {
		out, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(db.Table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("load secret %s: %w", name, err)
		}
		if v, ok := out.Item["value"].(*ddbtypes.AttributeValueMemberB); ok && len(v.Value) == 32 {
			return v.Value, nil
		}
		fresh := make([]byte, 32)
		if _, err := rand.Read(fresh); err != nil {
			return nil, err
		}
		item := map[string]ddbtypes.AttributeValue{"value": &ddbtypes.AttributeValueMemberB{Value: fresh}}
		for k, v := range key {
			item[k] = v
		}
		_, err = db.Client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(db.Table), Item: item,
			ConditionExpression: aws.String("attribute_not_exists(PK)"),
		})
		if err == nil {
			return fresh, nil
		}
		if !IsConditionFailed(err) {
			return nil, fmt.Errorf("create secret %s: %w", name, err)
		}
		// Another instance won the race: read its value.
	}
	return nil, fmt.Errorf("load secret %s: no value after create race", name)
}
