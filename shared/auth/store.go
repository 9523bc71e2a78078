package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/store"
)

// ErrUnauthenticated is returned for a key that is unknown, revoked or expired.
var ErrUnauthenticated = errors.New("auth: unknown, revoked or expired key")

// ErrNoSuchOrg, ErrNoSuchClient and ErrNoSuchSecret report operator mistakes.
var (
	ErrNoSuchOrg    = errors.New("auth: no such organisation")
	ErrNoSuchClient = errors.New("auth: no such API client, or it is revoked")
	ErrNoSuchSecret = errors.New("auth: no such secret on this client")
)

// Org is an organisation: the tenant that every key and row belongs to.
type Org struct {
	store.Keys
	ID        string `dynamodbav:"id" json:"id"`
	Name      string `dynamodbav:"name" json:"name"`
	CreatedAt string `dynamodbav:"created_at" json:"-"`
}

// Secret is one active secret of an API client, stored as a hash only.
type Secret struct {
	Hash      string `dynamodbav:"h"`
	CreatedAt string `dynamodbav:"created_at"`
}

// Client is an API client: one organisation, fixed scopes, an optional
// expiry, and one or more active secrets. Its item also carries the
// client's rate-limit counters, one attribute per minute window:
// rl_<unix seconds / 60> holds the requests counted in it.
type Client struct {
	store.Keys
	ID        string            `dynamodbav:"id"`
	OrgID     string            `dynamodbav:"org_id"`
	Name      string            `dynamodbav:"name,omitempty"`
	Mode      string            `dynamodbav:"mode"`
	Scopes    []string          `dynamodbav:"scopes"`
	CreatedAt string            `dynamodbav:"created_at"`
	ExpiresAt int64             `dynamodbav:"expires_at,omitempty"` // unix seconds; 0 = never
	RevokedAt string            `dynamodbav:"revoked_at,omitempty"`
	Secrets   map[string]Secret `dynamodbav:"secrets"`
}

// rlPrefix starts the name of every rate-limit window attribute.
const rlPrefix = "rl_"

// HasScope reports whether the client was granted scope.
func (c *Client) HasScope(scope string) bool { return slices.Contains(c.Scopes, scope) }

func orgKey(id string) (string, string)    { return store.OrgPK(id), "ORG" }
func clientKey(id string) (string, string) { return "APICLIENT#" + id, "APICLIENT" }

// Store keeps organisations and API clients.
type Store struct{ db *store.DB }

// NewStore returns a Store on db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// CreateOrg creates an organisation with a fresh id, or with id when given
// (the devserver's demo organisation); ErrConflict when id is taken.
func (s *Store) CreateOrg(ctx context.Context, id, name string, now time.Time) (Org, error) {
	if id == "" {
		id = uuid.NewString()
	}
	o := Org{ID: id, Name: name, CreatedAt: store.FormatTime(now)}
	o.PK, o.SK = orgKey(id)
	o.Kind = "org"
	item, err := store.Marshal(o)
	if err != nil {
		return Org{}, err
	}
	if err := s.db.PutNew(ctx, item); err != nil {
		return Org{}, fmt.Errorf("create org: %w", err)
	}
	return o, nil
}

// GetOrg reads an organisation; ErrNoSuchOrg when absent.
func (s *Store) GetOrg(ctx context.Context, id string) (Org, error) {
	var o Org
	pk, sk := orgKey(id)
	if err := s.db.Get(ctx, pk, sk, &o); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Org{}, ErrNoSuchOrg
		}
		return Org{}, err
	}
	return o, nil
}

// KeyRequest describes a new API client.
type KeyRequest struct {
	OrgID    string
	ClientID string // optional fixed id (the demo key); fresh when empty
	Name     string
	Mode     string
	Scopes   []string
	Expires  time.Time // zero: never
}

// CreateKey creates an API client with its first secret and returns the
// bearer token, which is never stored and cannot be shown again.
func (s *Store) CreateKey(ctx context.Context, req KeyRequest, now time.Time) (Client, Token, error) {
	if _, err := s.GetOrg(ctx, req.OrgID); err != nil {
		return Client{}, Token{}, err
	}
	if req.Mode != ModeLive && req.Mode != ModeTest {
		return Client{}, Token{}, fmt.Errorf("mode must be %q or %q", ModeLive, ModeTest)
	}
	if !req.Expires.IsZero() && !req.Expires.After(now) {
		return Client{}, Token{}, fmt.Errorf("expiry %s is in the past", req.Expires.Format(time.RFC3339))
	}
	id := req.ClientID
	if id == "" {
		id = uuid.NewString()
	}
	tok, err := newToken(req.Mode, id)
	if err != nil {
		return Client{}, Token{}, err
	}
	c := Client{
		ID: id, OrgID: req.OrgID, Name: req.Name, Mode: req.Mode, Scopes: req.Scopes,
		CreatedAt: store.FormatTime(now),
		Secrets:   map[string]Secret{tok.SecretID: {Hash: tok.Hash(), CreatedAt: store.FormatTime(now)}},
	}
	if !req.Expires.IsZero() {
		c.ExpiresAt = req.Expires.Unix()
	}
	c.PK, c.SK = clientKey(id)
	c.GSI1PK, c.GSI1SK = store.Collection(req.OrgID, "APICLIENT"), store.Seq(c.CreatedAt, id)
	c.Kind = "api_client"
	item, err := store.Marshal(c)
	if err != nil {
		return Client{}, Token{}, err
	}
	if err := s.db.PutNew(ctx, item); err != nil {
		return Client{}, Token{}, fmt.Errorf("create key: %w", err)
	}
	return c, tok, nil
}

// Rotate adds a secret to a live (unrevoked) client; the old secrets keep working.
func (s *Store) Rotate(ctx context.Context, clientID string, now time.Time) (Token, error) {
	var c Client
	pk, sk := clientKey(clientID)
	if err := s.db.Get(ctx, pk, sk, &c); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Token{}, ErrNoSuchClient
		}
		return Token{}, err
	}
	tok, err := newToken(c.Mode, clientID)
	if err != nil {
		return Token{}, err
	}
	sec, err := store.Marshal(Secret{Hash: tok.Hash(), CreatedAt: store.FormatTime(now)})
	if err != nil {
		return Token{}, err
	}
	_, err = s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.db.Table),
		Key:                       store.Key(pk, sk),
		UpdateExpression:          aws.String("SET secrets.#sid = :sec"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND attribute_not_exists(revoked_at)"),
		ExpressionAttributeNames:  map[string]string{"#sid": tok.SecretID},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":sec": &ddbtypes.AttributeValueMemberM{Value: sec}},
	})
	if store.IsConditionFailed(err) {
		return Token{}, ErrNoSuchClient
	}
	if err != nil {
		return Token{}, fmt.Errorf("rotate %s: %w", clientID, err)
	}
	return tok, nil
}

// RevokeSecret deletes one secret: that string stops working on the next request.
func (s *Store) RevokeSecret(ctx context.Context, clientID, secretID string) error {
	pk, sk := clientKey(clientID)
	_, err := s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.db.Table),
		Key:                      store.Key(pk, sk),
		UpdateExpression:         aws.String("REMOVE secrets.#sid"),
		ConditionExpression:      aws.String("attribute_exists(secrets.#sid)"),
		ExpressionAttributeNames: map[string]string{"#sid": secretID},
	})
	if store.IsConditionFailed(err) {
		return ErrNoSuchSecret
	}
	if err != nil {
		return fmt.Errorf("revoke secret %s/%s: %w", clientID, secretID, err)
	}
	return nil
}

// Revoke kills a client and every secret it has, from the next request on.
func (s *Store) Revoke(ctx context.Context, clientID string, now time.Time) error {
	pk, sk := clientKey(clientID)
	_, err := s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.db.Table),
		Key:                       store.Key(pk, sk),
		UpdateExpression:          aws.String("SET revoked_at = if_not_exists(revoked_at, :now)"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":now": &ddbtypes.AttributeValueMemberS{Value: store.FormatTime(now)}},
	})
	if store.IsConditionFailed(err) {
		return ErrNoSuchClient
	}
	if err != nil {
		return fmt.Errorf("revoke %s: %w", clientID, err)
	}
	return nil
}

// Usage is the client's rate-limit state after counting a request.
type Usage struct {
	Count int64     // requests in the current window, this one included
	Reset time.Time // when the current window ends
}

// Authenticate checks a token and counts the request against its client's
// rate limit in one conditional UpdateItem: the condition admits only a
// live, unexpired client holding this secret, so unknown and revoked keys
// count nothing; ALL_NEW returns the client with the new count. Nothing is
// cached: a revocation or expiry applies to the very next request.
func (s *Store) Authenticate(ctx context.Context, tok Token, now time.Time) (Client, Usage, error) {
	minute := now.Unix() / 60
	cur, prev := rlPrefix+strconv.FormatInt(minute, 10), rlPrefix+strconv.FormatInt(minute-1, 10)
	pk, sk := clientKey(tok.ClientID)
	out, err := s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.db.Table),
		Key:              store.Key(pk, sk),
		UpdateExpression: aws.String("SET #cur = if_not_exists(#cur, :zero) + :one REMOVE #prev"),
		ConditionExpression: aws.String("attribute_exists(PK) AND attribute_not_exists(revoked_at) AND #mode = :mode" +
			" AND secrets.#sid.h = :h AND (attribute_not_exists(expires_at) OR expires_at > :now)"),
		ExpressionAttributeNames: map[string]string{"#cur": cur, "#prev": prev, "#sid": tok.SecretID, "#mode": "mode"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":one":  &ddbtypes.AttributeValueMemberN{Value: "1"},
			":zero": &ddbtypes.AttributeValueMemberN{Value: "0"},
			":mode": &ddbtypes.AttributeValueMemberS{Value: tok.Mode},
			":h":    &ddbtypes.AttributeValueMemberS{Value: tok.Hash()},
			":now":  &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
		},
		ReturnValues: ddbtypes.ReturnValueAllNew,
	})
	if store.IsConditionFailed(err) {
		return Client{}, Usage{}, ErrUnauthenticated
	}
	if err != nil {
		return Client{}, Usage{}, fmt.Errorf("authenticate: %w", err)
	}
	var c Client
	if err := store.Unmarshal(out.Attributes, &c); err != nil {
		return Client{}, Usage{}, err
	}
	// The condition already matched; this is the authoritative, constant-time
	// check in our own code, so the guarantee does not rest on the store.
	sec, ok := c.Secrets[tok.SecretID]
	if !ok || subtle.ConstantTimeCompare([]byte(sec.Hash), []byte(tok.Hash())) != 1 ||
		c.RevokedAt != "" || c.Mode != tok.Mode || (c.ExpiresAt != 0 && c.ExpiresAt <= now.Unix()) {
		return Client{}, Usage{}, ErrUnauthenticated
	}
	count, ok := out.Attributes[cur].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return Client{}, Usage{}, fmt.Errorf("authenticate: no counter %s on client %s", cur, c.ID)
	}
	n, err := strconv.ParseInt(count.Value, 10, 64)
	if err != nil {
		return Client{}, Usage{}, fmt.Errorf("authenticate: counter %s: %w", cur, err)
	}
	s.sweepWindows(ctx, pk, sk, out.Attributes, cur)
	return c, Usage{Count: n, Reset: time.Unix((minute+1)*60, 0).UTC()}, nil
}

// sweepWindows removes counters of windows older than the previous one,
// which REMOVE #prev misses after an idle spell. It runs at most once per
// idle spell per client, and its failure is harmless: counts are keyed by
// minute, so a stale entry is never read as the current count.
func (s *Store) sweepWindows(ctx context.Context, pk, sk string, item map[string]ddbtypes.AttributeValue, cur string) {
	names := map[string]string{}
	var parts []string
	for name := range item {
		if strings.HasPrefix(name, rlPrefix) && name != cur {
			n := fmt.Sprintf("#s%d", len(parts))
			names[n] = name
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return
	}
	_, _ = s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.db.Table), Key: store.Key(pk, sk),
		UpdateExpression: aws.String("REMOVE " + strings.Join(parts, ", ")), ExpressionAttributeNames: names,
	})
}
