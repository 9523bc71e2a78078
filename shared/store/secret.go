package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ConfigSecrets are the stage's secrets (CONFIG / SECRET#<name>, 32 random
// bytes each): cursor seals list cursors and keys the Idempotency-Key
// HMAC, ids derives ids, webhook-secrets seals signing secrets without KMS.
// On AWS they are made at deploy (infra's configseed custom resource:
// SeedSecrets) and the functions only read them; their roles may not
// write CONFIG, so a secret missing there fails the function's cold start
// (AccessDenied on the create) instead of making a new one.
var ConfigSecrets = []string{"cursor", "ids", "webhook-secrets"}

// SeedSecrets makes each of ConfigSecrets that the table does not hold yet
// (LoadOrCreateSecret) and reports which it made: what the configseed
// custom resource runs at each deploy.
func (db *DB) SeedSecrets(ctx context.Context) (made []string, err error) {
	for _, name := range ConfigSecrets {
		created, err := db.loadOrCreateSecret(ctx, name)
		if err != nil {
			return made, err
		}
		if created {
			made = append(made, name)
		}
	}
	return made, nil
}

// LoadOrCreateSecret returns a 32-byte process-wide secret stored in the
// table under name, creating it on first use (the devserver, tests; on
// AWS the deploy has made it: SeedSecrets). Every Lambda instance and the
// devserver read the same value once at start, so sealed cursors minted by
// one instance open on another. name must be one of ConfigSecrets.
func (db *DB) LoadOrCreateSecret(ctx context.Context, name string) ([]byte, error) {
	if !slices.Contains(ConfigSecrets, name) {
		return nil, fmt.Errorf("store: secret %q is not one of ConfigSecrets, which the deploy seeds", name)
	}
	v, _, err := db.loadOrCreate(ctx, name)
	return v, err
}

func (db *DB) loadOrCreateSecret(ctx context.Context, name string) (bool, error) {
	_, created, err := db.loadOrCreate(ctx, name)
	return created, err
}

// loadOrCreate reads the secret, or puts a new one where none is (by
// condition: of processes at once, one wins and the others read its value).
func (db *DB) loadOrCreate(ctx context.Context, name string) ([]byte, bool, error) {
	key := map[string]ddbtypes.AttributeValue{
		AttrPK: &ddbtypes.AttributeValueMemberS{Value: "CONFIG"},
		AttrSK: &ddbtypes.AttributeValueMemberS{Value: "SECRET#" + name},
	}
	for attempt := 0; attempt < 2; attempt++ {
		out, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(db.Table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, false, fmt.Errorf("load secret %s: %w", name, err)
		}
		if v, ok := out.Item["value"].(*ddbtypes.AttributeValueMemberB); ok && len(v.Value) == 32 {
			return v.Value, false, nil
		}
		fresh := make([]byte, 32)
		if _, err := rand.Read(fresh); err != nil {
			return nil, false, err
		}
		item := map[string]ddbtypes.AttributeValue{"value": &ddbtypes.AttributeValueMemberB{Value: fresh}}
		for k, v := range key {
			item[k] = v
		}
		_, err = db.Client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(db.Table), Item: item,
			ConditionExpression: itemIsNew.Condition(), ExpressionAttributeNames: itemIsNew.Names(),
		})
		if err == nil {
			return fresh, true, nil
		}
		if !IsConditionFailed(err) {
			return nil, false, fmt.Errorf("create secret %s (on AWS the deploy makes it: is the stage's StageSecrets resource there?): %w", name, err)
		}
		// Another instance won the race: read its value.
	}
	return nil, false, fmt.Errorf("load secret %s: no value after create race", name)
}
