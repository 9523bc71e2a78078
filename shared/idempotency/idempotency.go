// Package idempotency keeps Idempotency-Key records: a claim taken with one
// conditional write before a create runs, completed inside the create's own
// transaction, and released when the create fails, so that no retry, race
// or crash can create twice or leave a key bound to nothing.
package idempotency

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/store"
)

// States of a record.
const (
	StateInProgress = "in_progress"
	StateCompleted  = "completed"
)

// Retention is how long a bound key is honoured.
const Retention = 24 * time.Hour

// DefaultLock is how long an in-progress claim blocks its key: longer than
// any request may run (API Gateway stops waiting at 30 s), short enough that
// a crashed request frees its key soon.
const DefaultLock = 30 * time.Second

// Record is the stored state of one key.
type Record struct {
	store.Keys
	State         string `dynamodbav:"state"`
	Owner         string `dynamodbav:"owner"`
	BodyHash      string `dynamodbav:"body_hash"`
	LockExpiresAt int64  `dynamodbav:"lock_expires_at"`
	ExpiresAt     int64  `dynamodbav:"expires_at"`
	TTL           int64  `dynamodbav:"ttl"`
	// Set on completion: what the first success answered.
	ResourceID string `dynamodbav:"resource_id,omitempty"`
	Response   string `dynamodbav:"response,omitempty"`
	Location   string `dynamodbav:"location,omitempty"`
}

// Store claims and releases keys.
type Store struct {
	db   *store.DB
	lock time.Duration
	mac  []byte // the HMAC key of stored Idempotency-Keys
}

// NewStore returns a Store; lock <= 0 means DefaultLock. secret is the
// stage's own secret (the table's, store.DB.LoadOrCreateSecret): the key
// of the HMAC under which Idempotency-Keys are stored is derived from it.
func NewStore(db *store.DB, lock time.Duration, secret []byte) *Store {
	if lock <= 0 {
		lock = DefaultLock
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("practice-api/idempotency-key/v1"))
	return &Store{db: db, lock: lock, mac: m.Sum(nil)}
}

// Claim is a key this request holds.
type Claim struct {
	s      *Store
	pk, sk string
	owner  string
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

// Claim takes the key for this request. It succeeds when the key is unused,
// expired, or held by a request whose lock lapsed (a crash); otherwise it
// returns the existing record, read in the same round trip.
func (s *Store) Claim(ctx context.Context, org, endpoint, key, bodyHash string, now time.Time) (*Claim, *Record, error) {
	var ob [16]byte
	if _, err := rand.Read(ob[:]); err != nil {
		return nil, nil, err
	}
	c := &Claim{s: s, pk: store.OrgPK(org), sk: s.keySK(endpoint, key), owner: hex.EncodeToString(ob[:])}
	n := func(v int64) ddbtypes.AttributeValue {
		return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	str := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	_, err := s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.db.Table),
		Key:       store.Key(c.pk, c.sk),
		UpdateExpression: aws.String("SET #state = :inprog, #owner = :owner, body_hash = :hash, lock_expires_at = :lock," +
			" expires_at = :exp, #ttl = :exp, kind = :kind, resource_id = :none, #response = :none, #location = :none"),
		ConditionExpression: aws.String("attribute_not_exists(PK) OR expires_at < :now OR (#state = :inprog AND lock_expires_at < :now)"),
		ExpressionAttributeNames: map[string]string{"#state": "state", "#owner": "owner", "#ttl": store.AttrTTL,
			"#response": "response", "#location": "location"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":inprog": str(StateInProgress), ":owner": str(c.owner), ":hash": str(bodyHash), ":kind": str("idempotency"),
			":lock": n(now.Add(s.lock).Unix()), ":exp": n(now.Add(Retention).Unix()), ":now": n(now.Unix()), ":none": str(""),
		},
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return c, nil, nil
	}
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, nil, fmt.Errorf("claim idempotency key: %w", err)
	}
	var rec Record
	if len(ccf.Item) > 0 {
		if err := store.Unmarshal(ccf.Item, &rec); err != nil {
			return nil, nil, err
		}
		return nil, &rec, nil
	}
	// A store that does not return the old item: read it.
	if err := s.db.Get(ctx, c.pk, c.sk, &rec); err != nil {
		return nil, nil, fmt.Errorf("read idempotency key: %w", err)
	}
	return nil, &rec, nil
}

// Complete is the transaction item that binds the key to the created
// resource. It only succeeds while this request still holds the claim, so a
// request that outlived its lock cannot complete a key someone else took.
func (c *Claim) Complete(resourceID, location string, response []byte) ddbtypes.TransactWriteItem {
	return ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
		TableName:           aws.String(c.s.db.Table),
		Key:                 store.Key(c.pk, c.sk),
		UpdateExpression:    aws.String("SET #state = :done, resource_id = :rid, #response = :resp, #location = :loc"),
		ConditionExpression: aws.String("#owner = :owner AND #state = :inprog"),
		ExpressionAttributeNames: map[string]string{"#state": "state", "#owner": "owner",
			"#response": "response", "#location": "location"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":done":   &ddbtypes.AttributeValueMemberS{Value: StateCompleted},
			":inprog": &ddbtypes.AttributeValueMemberS{Value: StateInProgress},
			":owner":  &ddbtypes.AttributeValueMemberS{Value: c.owner},
			":rid":    &ddbtypes.AttributeValueMemberS{Value: resourceID},
			":resp":   &ddbtypes.AttributeValueMemberS{Value: string(response)},
			":loc":    &ddbtypes.AttributeValueMemberS{Value: location},
		},
	}}
}

// Release frees the key after a failed create. It deletes the record only
// while this request still holds it in progress: if the create's
// transaction did commit (and only its answer was lost), the key stays bound.
func (c *Claim) Release(ctx context.Context) error {
	_, err := c.s.db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                aws.String(c.s.db.Table),
		Key:                      store.Key(c.pk, c.sk),
		ConditionExpression:      aws.String("#owner = :owner AND #state = :inprog"),
		ExpressionAttributeNames: map[string]string{"#state": "state", "#owner": "owner"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":inprog": &ddbtypes.AttributeValueMemberS{Value: StateInProgress},
			":owner":  &ddbtypes.AttributeValueMemberS{Value: c.owner},
		},
	})
	if err != nil && !store.IsConditionFailed(err) {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
