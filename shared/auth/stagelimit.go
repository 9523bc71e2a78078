package auth

import (
	"context"
	"errors"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/store"
)

// The stage's default limit (RATE_LIMIT_PER_MINUTE, what a key without a
// limit of its own is served at) is kept in the table, so that the admin
// tool counts keys against an organisation's ceiling at what the stage
// serves, not at whatever its own shell says (issue #38: a key created
// with RATE_LIMIT_PER_MINUTE=1 in the shell counted 1 and was served 120,
// keys summing 370 under a ceiling of 300).
func stageLimitKey() (string, string) { return "CONFIG", "STAGE#rate_limit" }

// stageLimit is the item.
type stageLimit struct {
	PerMinute int `dynamodbav:"per_minute"`
}

// PublishDefaultLimit stores s.DefaultLimit() as the stage's default when the
// table holds another (or none): what the API's processes do at start
// (apiapp.Load), each with the stage's own setting. A read, and a write only
// on a change.
func (s *Store) PublishDefaultLimit(ctx context.Context) error {
	n := s.limitOf(0)
	var cur stageLimit
	pk, sk := stageLimitKey()
	if err := s.db.Get(ctx, pk, sk, &cur); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if cur.PerMinute == n {
		return nil
	}
	_, err := s.db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.db.Table), Item: map[string]ddbtypes.AttributeValue{
		store.AttrPK: &ddbtypes.AttributeValueMemberS{Value: pk}, store.AttrSK: &ddbtypes.AttributeValueMemberS{Value: sk},
		"per_minute": &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(n)},
	}})
	return err
}

// StoredDefaultLimit is the stage's default as db's table holds it, and
// whether it held one (none: no API process has started on the table
// yet). The admin tool builds its Store (NewStore) with it.
func StoredDefaultLimit(ctx context.Context, db *store.DB) (int, bool, error) {
	var cur stageLimit
	pk, sk := stageLimitKey()
	err := db.Get(ctx, pk, sk, &cur)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	case cur.PerMinute <= 0:
		return 0, false, nil
	}
	return cur.PerMinute, true, nil
}
