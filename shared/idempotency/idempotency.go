// Package idempotency keeps Idempotency-Key records. A key is bound in the
// create's own transaction, by a put that succeeds only while the key is
// unused (or its 24 hours are over): the key and the resource are written
// together or not at all, so no retry, race or crash can create twice, and
// nothing is ever left holding a key (there is no "in progress" record to
// outlive a crashed request). A replay is that put failing: the
// transaction is cancelled, nothing is written, and the cancellation
// carries the bound record, so a replay costs no more round trips than a
// create.
package idempotency

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/idemkey"
	"github.com/practice-api/practice-api/shared/store"
)

// Retention is how long a bound key is honoured.
const Retention = 24 * time.Hour

// Record is a bound key: what the first success answered.
type Record struct {
	store.Keys
	BodyHash   string `dynamodbav:"body_hash"`
	ExpiresAt  int64  `dynamodbav:"expires_at"`
	TTL        int64  `dynamodbav:"ttl"`
	ResourceID string `dynamodbav:"resource_id"`
	Response   string `dynamodbav:"response"`
	Location   string `dynamodbav:"location,omitempty"`
}

// Store reads and binds keys.
type Store struct {
	db  *store.DB
	mac []byte // the HMAC key of stored Idempotency-Keys
}

// NewStore returns a Store. secret is the stage's own secret (the table's,
// store.DB.LoadOrCreateSecret): the key of the HMAC under which
// Idempotency-Keys are stored is derived from it.
func NewStore(db *store.DB, secret []byte) *Store {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("practice-api/idempotency-key/v1"))
	return &Store{db: db, mac: m.Sum(nil)}
}

// keySK scopes a key to its endpoint. The key is stored as an HMAC under
// the stage's secret, never in clear nor as a bare hash: integrators key
// creates with their own record ids, which may be guessable or personal,
// and a table export must not let anyone test guesses against them. Any
// 255 characters make a bounded, safe sort key.
func (s *Store) keySK(endpoint, key string) string {
	m := hmac.New(sha256.New, s.mac)
	m.Write([]byte(endpoint))
	m.Write([]byte{0})
	m.Write([]byte(key))
	return "IDEM#" + endpoint + "#" + hex.EncodeToString(m.Sum(nil))
}

// Lookup returns the key's record while it is bound (nil when the key is
// unused or its 24 hours are over). An eventually consistent read is the
// first look of every create (half a read unit); a create whose binding
// then fails looks again with a consistent one.
func (s *Store) Lookup(ctx context.Context, org, endpoint, key string, consistent bool, now time.Time) (*Record, error) {
	out, err := s.db.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.db.Table), Key: store.Key(store.OrgPK(org), s.keySK(endpoint, key)),
		ConsistentRead: aws.Bool(consistent),
	})
	if err != nil {
		return nil, fmt.Errorf("read idempotency key: %w", err)
	}
	if out.Item == nil {
		return nil, nil
	}
	var rec Record
	if err := store.Unmarshal(out.Item, &rec); err != nil {
		return nil, err
	}
	if rec.ExpiresAt <= now.Unix() {
		return nil, nil // honoured 24 hours, then free again
	}
	return &rec, nil
}

// Binding is a bound key about to be written (idemkey's, which the edge
// makes without linking this store).
type Binding = idemkey.Binding

// Item is the transaction action that binds the key to the created
// resource (its id, and what the 201 answers). It succeeds only while the
// key is unused or expired: of two requests racing with one key, one
// transaction commits and the other's fails on this item.
func (s *Store) Item(b Binding, resourceID, location string, response []byte) (ddbtypes.TransactWriteItem, error) {
	exp := b.Now.Add(Retention).Unix()
	rec := Record{Keys: store.Keys{PK: store.OrgPK(b.Org), SK: s.keySK(b.Endpoint, b.Key), Kind: "idempotency"},
		BodyHash: b.BodyHash, ExpiresAt: exp, TTL: exp, ResourceID: resourceID, Response: string(response), Location: location}
	item, err := store.Marshal(rec)
	if err != nil {
		return ddbtypes.TransactWriteItem{}, err
	}
	unbound := expression.AttributeNotExists(expression.Name(store.AttrPK)).
		Or(expression.Name("expires_at").LessThanEqual(expression.Value(b.Now.Unix())))
	e, err := expression.NewBuilder().WithCondition(unbound).Build()
	if err != nil {
		return ddbtypes.TransactWriteItem{}, fmt.Errorf("idempotency: the binding's condition: %w", err)
	}
	return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{
		TableName: aws.String(s.db.Table), Item: item,
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld, // the bound record, for the replay
	}}, nil
}

// Taken is the error of a create whose binding failed: another request
// bound the key first (Record, when the store returned it with the
// cancellation; otherwise Lookup tells), or holds it in a transaction
// still running (Record nil).
type Taken struct{ Record *Record }

func (*Taken) Error() string { return ErrKeyTaken.Error() }

// BoundKey is the bound record as the edge reads it (idemkey.Taken); nil
// when Record is.
func (t *Taken) BoundKey() *idemkey.Bound { return t.Record.Bound() }

// Bound is the record as the edge reads it; nil for a nil record.
func (r *Record) Bound() *idemkey.Bound {
	if r == nil {
		return nil
	}
	return &idemkey.Bound{BodyHash: r.BodyHash, Response: r.Response, Location: r.Location}
}

// Begin is the create of a request bound as b (NewCreate on s), as the
// edge begins it (httpapi.IdempotencyKeys).
func (s *Store) Begin(b Binding, clientID string, body []byte, location func(id string) string) idemkey.Create {
	return NewCreate(s, b, clientID, body, location)
}

// LookupBound is Lookup as the edge reads it (httpapi.IdempotencyKeys):
// the bound key's record, nil when the key is free.
func (s *Store) LookupBound(ctx context.Context, org, endpoint, key string, consistent bool, now time.Time) (*idemkey.Bound, error) {
	rec, err := s.Lookup(ctx, org, endpoint, key, consistent, now)
	if err != nil {
		return nil, err
	}
	return rec.Bound(), nil
}

// Is makes a Taken ErrKeyTaken.
func (*Taken) Is(target error) bool { return target == ErrKeyTaken }

// ErrKeyTaken is what every Taken is.
var ErrKeyTaken = errors.New("idempotency: the key was bound by another request")

// RecordOf reads a bound record from a cancelled binding's item; nil when
// the item is absent, unreadable or expired at now.
func RecordOf(item map[string]ddbtypes.AttributeValue, now time.Time) *Record {
	if len(item) == 0 {
		return nil
	}
	var rec Record
	if store.Unmarshal(item, &rec) != nil || rec.ExpiresAt <= now.Unix() {
		return nil
	}
	return &rec
}
