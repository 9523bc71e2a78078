package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// QueryInto runs q and decodes the page into values of T; with q.Project it
// reads only T's attributes.
func QueryInto[T any](ctx context.Context, db *DB, q ListQuery) ([]T, StartKey, error) {
	if q.Project {
		q.attrs = attrsExcept[T](q.Omit)
	}
	page, err := db.Query(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	out := make([]T, 0, len(page.Items))
	for _, it := range page.Items {
		var v T
		if err := Unmarshal(it, &v); err != nil {
			return nil, nil, err
		}
		out = append(out, v)
	}
	return out, page.Next, nil
}

// ReadInto reads one item of T for an answer: only T's attributes, less
// omit (GetItem with a ProjectionExpression; no keys). Code that writes the
// item back reads it whole, with GetInto.
func ReadInto[T any](ctx context.Context, db *DB, pk, sk string, omit ...string) (T, error) {
	var v T
	proj, names, err := projection(attrsExcept[T](omit))
	if err != nil {
		return v, err
	}
	out, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(db.Table), Key: Key(pk, sk), ConsistentRead: aws.Bool(true),
		ProjectionExpression: proj, ExpressionAttributeNames: names,
	})
	if err != nil {
		return v, fmt.Errorf("get %s %s: %w", pk, sk, err)
	}
	if out.Item == nil {
		return v, ErrNotFound
	}
	return v, Unmarshal(out.Item, &v)
}

// GetInto reads one item of T; ErrNotFound when absent.
func GetInto[T any](ctx context.Context, db *DB, pk, sk string) (T, error) {
	var v T
	err := db.Get(ctx, pk, sk, &v)
	return v, err
}

// Guard is a uniqueness guard: an item whose key is the unique value within
// an organisation (an e-mail, a CVR, a party's engagement, a matter number)
// and whose ref names the item holding it. Creates write guards with
// attribute_not_exists in the same transaction as the resource.
type Guard struct {
	Keys
	Ref string `dynamodbav:"ref"`
}

// GuardSK is the sort key of the guard for value in namespace.
func GuardSK(namespace, value string) string { return "UNIQ#" + namespace + "#" + value }

// NewGuard builds a guard item.
func NewGuard(org, namespace, value, ref string) Guard {
	return Guard{Keys: Keys{PK: OrgPK(org), SK: GuardSK(namespace, value), Kind: "guard"}, Ref: ref}
}

// Each runs q to the end of its range, a page at a time, calling visit on
// every item; for reports, whose callers bound the range.
func Each[T any](ctx context.Context, db *DB, q ListQuery, visit func(T)) error {
	q.Limit = 1000
	for {
		items, next, err := QueryInto[T](ctx, db, q)
		if err != nil {
			return err
		}
		for _, it := range items {
			visit(it)
		}
		if next == nil {
			return nil
		}
		q.After = next
	}
}
