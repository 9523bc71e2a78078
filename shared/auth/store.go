package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apikey"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/store"
)

// ErrUnauthenticated is returned for a key that is unknown, revoked or
// expired (apikey's, which the edge checks for without linking this store).
var ErrUnauthenticated = apikey.ErrUnauthenticated

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
	// RateCeiling bounds, in requests per minute, the sum of the limits of
	// the organisation's live keys (0: the default, Store.CeilingOf). It is kept when
	// keys are made, revoked or given a limit, so no request pays for it.
	RateCeiling int `dynamodbav:"rate_ceiling,omitempty" json:"rate_ceiling,omitempty"`
	// KeysVersion moves with every change to the organisation's keys, so
	// that two changes at once cannot both pass the ceiling.
	KeysVersion int `dynamodbav:"keys_version,omitempty" json:"-"`
}

// DefaultOrgCeiling is an organisation's ceiling unless set: 300 requests
// a second, the busiest organisation of the traffic model (docs/cost-model.md).
const DefaultOrgCeiling = 18000

// DefaultCeilingKeys is how many keys at the stage's default limit an
// organisation's default ceiling admits at least (150 × 120 a minute is
// DefaultOrgCeiling).
const DefaultCeilingKeys = 150

// CeilingOf is o's effective ceiling on this store: its own when set, else
// DefaultOrgCeiling or DefaultCeilingKeys keys at the stage's default
// limit, whichever is more. A stage that serves a key without a limit of
// its own 100,000 requests a minute (the local test stages) still admits
// keys without an organisation's ceiling being raised first.
func (s *Store) CeilingOf(o Org) int {
	if o.RateCeiling > 0 {
		return o.RateCeiling
	}
	return max(DefaultOrgCeiling, DefaultCeilingKeys*s.limitOf(0))
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
//
// The item is in no index: counting a request writes the item alone (one
// write unit while it is under 1 KB), and every client has a partition of
// its own, so an organisation's keys do not share a hot key. The
// organisation's listing of its keys is a directory item of each
// (ClientRef), changed only with the key.
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
	// RateLimit is the client's own limit in requests per minute; 0 means
	// the stage's (RATE_LIMIT_PER_MINUTE).
	RateLimit int `dynamodbav:"rate_limit,omitempty"`
}

// ClientRef is an API client as its organisation's directory lists it
// (O#<org>, APICLIENT#<id>): never a secret or a count.
type ClientRef struct {
	store.Keys `json:"-"`
	ID         string   `dynamodbav:"id" json:"client_id"`
	Name       string   `dynamodbav:"name,omitempty" json:"name,omitempty"`
	Mode       string   `dynamodbav:"mode" json:"mode"`
	Scopes     []string `dynamodbav:"scopes" json:"scopes"`
	CreatedAt  string   `dynamodbav:"created_at" json:"created_at"`
	ExpiresAt  int64    `dynamodbav:"expires_at,omitempty" json:"expires_at,omitempty"`
	RevokedAt  string   `dynamodbav:"revoked_at,omitempty" json:"revoked_at,omitempty"`
	RateLimit  int      `dynamodbav:"rate_limit,omitempty" json:"rate_limit,omitempty"`
}

// rlPrefix starts the name of every rate-limit window attribute.
const rlPrefix = "rl_"

// HasScope reports whether the client was granted scope.
func (c *Client) HasScope(scope string) bool { return slices.Contains(c.Scopes, scope) }

func orgKey(id string) (string, string)    { return store.OrgPK(id), "ORG" }
func clientKey(id string) (string, string) { return "APICLIENT#" + id, "APICLIENT" }
func refSK(id string) string               { return "APICLIENT#" + id }

// Store keeps organisations and API clients.
type Store struct {
	db *store.DB
	// defaultLimit is what a key without a limit of its own counts for
	// against its organisation's ceiling (RATE_LIMIT_PER_MINUTE).
	defaultLimit int

	staleMu sync.Mutex
	stale   map[string][]string // client id -> rate-limit windows left behind
}

// NewStore returns a Store on db whose keys without a limit of their own
// count for defaultLimit requests a minute against their organisation's
// ceiling: the stage's RATE_LIMIT_PER_MINUTE (config.Config's; 0 takes
// config.Defaults()'s).
func NewStore(db *store.DB, defaultLimit int) *Store {
	if defaultLimit <= 0 {
		defaultLimit = config.Defaults().RateLimitPerMinute
	}
	return &Store{db: db, defaultLimit: defaultLimit}
}

// DefaultLimit is what a key without a limit of its own counts for
// against its organisation's ceiling.
func (s *Store) DefaultLimit() int { return s.defaultLimit }

// CreateOrg creates an organisation with a fresh id, or with id when given
// (the devserver's demo organisation); ErrConflict when id is taken.
func (s *Store) CreateOrg(ctx context.Context, id, name string, now time.Time) (Org, error) {
	if id == "" {
		id = store.NewID()
	}
	o := Org{ID: id, Name: name, CreatedAt: store.FormatTime(now)}
	o.PK, o.SK = orgKey(id)
	o.Kind = "org"
	// GSI1 "ORGS" lists every organisation by creation, for operators
	// (scripts/admin org list): one partition, written only when an
	// organisation is made or its keys change, never by a request.
	o.GSI1PK, o.GSI1SK = OrgsPK, store.Seq(o.CreatedAt, id)
	item, err := store.Marshal(o)
	if err != nil {
		return Org{}, err
	}
	if err := s.db.PutNew(ctx, item); err != nil {
		return Org{}, fmt.Errorf("create org: %w", err)
	}
	return o, nil
}

// OrgsPK is the GSI1 partition listing every organisation.
const OrgsPK = "ORGS"

// Orgs lists organisations by creation, oldest first: up to limit of them
// after the cursor after (nil for the first), and the cursor to go on
// from (nil at the end).
func (s *Store) Orgs(ctx context.Context, limit int, after store.StartKey) ([]Org, store.StartKey, error) {
	return store.QueryInto[Org](ctx, s.db, store.ListQuery{Index: store.GSI1, PK: OrgsPK, Limit: limit, After: after})
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
	// RateLimit is the key's own limit (requests per minute); 0: the stage's.
	RateLimit int
}

// ErrClientExists is returned when a fixed client id (the demo key's) is taken.
var ErrClientExists = errors.New("auth: an API client with this id exists")

// ErrCeiling is returned when a key's limit would take its organisation's
// keys over the organisation's ceiling.
var ErrCeiling = errors.New("auth: the organisation's ceiling would be exceeded")

// CreateKey creates an API client with its first secret and returns the
// bearer token, which is never stored and cannot be shown again. The
// client, its directory entry and the organisation's keys version are
// written in one transaction, after the ceiling is checked.
func (s *Store) CreateKey(ctx context.Context, req KeyRequest, now time.Time) (Client, Token, error) {
	if req.Mode != ModeLive && req.Mode != ModeTest {
		return Client{}, Token{}, fmt.Errorf("mode must be %q or %q", ModeLive, ModeTest)
	}
	if !req.Expires.IsZero() && !req.Expires.After(now) {
		return Client{}, Token{}, fmt.Errorf("expiry %s is in the past", req.Expires.Format(time.RFC3339))
	}
	if req.RateLimit < 0 {
		return Client{}, Token{}, errors.New("a rate limit is a positive number of requests per minute")
	}
	id := req.ClientID
	if id == "" {
		id = store.NewID()
	}
	tok, err := newToken(req.Mode, id)
	if err != nil {
		return Client{}, Token{}, err
	}
	c := Client{
		ID: id, OrgID: req.OrgID, Name: req.Name, Mode: req.Mode, Scopes: req.Scopes,
		CreatedAt: store.FormatTime(now), RateLimit: req.RateLimit,
		Secrets: map[string]Secret{tok.SecretID: {Hash: tok.Hash(), CreatedAt: store.FormatTime(now)}},
	}
	if !req.Expires.IsZero() {
		c.ExpiresAt = req.Expires.Unix()
	}
	c.PK, c.SK = clientKey(id)
	c.Kind = "api_client"
	err = s.changeKeys(ctx, req.OrgID, func(o Org, refs []ClientRef) (int, error) {
		return s.allocated(refs) + s.limitOf(c.RateLimit), nil
	}, func(tx *store.TxBuilder) error {
		tx.PutNew(c)
		tx.PutNew(c.ref())
		return nil
	})
	if err != nil {
		return Client{}, Token{}, fmt.Errorf("create key: %w", err)
	}
	return c, tok, nil
}

func (c *Client) ref() ClientRef {
	return ClientRef{Keys: store.Keys{PK: store.OrgPK(c.OrgID), SK: refSK(c.ID), Kind: "api_client_ref"},
		ID: c.ID, Name: c.Name, Mode: c.Mode, Scopes: c.Scopes, CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt,
		RevokedAt: c.RevokedAt, RateLimit: c.RateLimit}
}

// limitOf is what a key with own limit n counts for against its ceiling.
func (s *Store) limitOf(n int) int {
	switch {
	case n > 0:
		return n
	}
	return s.defaultLimit
}

// allocated sums the limits of the live keys among refs.
func (s *Store) allocated(refs []ClientRef) int {
	n := 0
	for _, r := range refs {
		if r.RevokedAt == "" {
			n += s.limitOf(r.RateLimit)
		}
	}
	return n
}

// Keys lists an organisation's API clients from its directory, live and
// revoked, oldest first.
func (s *Store) Keys(ctx context.Context, org string) ([]ClientRef, error) {
	var out []ClientRef
	q := store.ListQuery{PK: store.OrgPK(org), SKPrefix: "APICLIENT#", Limit: 100}
	for {
		page, next, err := store.QueryInto[ClientRef](ctx, s.db, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == nil {
			break
		}
		q.After = next
	}
	slices.SortFunc(out, func(a, b ClientRef) int { return strings.Compare(a.CreatedAt+a.ID, b.CreatedAt+b.ID) })
	return out, nil
}

// changeKeys changes an organisation's keys in one transaction (add), which
// also moves the organisation's keys version on condition that it is the
// one read: of two changes at once, one commits and the other reads again.
// need returns what the keys' limits add up to after the change; over the
// ceiling, the change is refused with ErrCeiling.
func (s *Store) changeKeys(ctx context.Context, org string, need func(Org, []ClientRef) (int, error), add func(*store.TxBuilder) error) error {
	return store.Optimistic("the keys of organisation "+org, func() error {
		o, err := s.GetOrg(ctx, org)
		if err != nil {
			return err
		}
		refs, err := s.Keys(ctx, org)
		if err != nil {
			return err
		}
		n, err := need(o, refs)
		if err != nil {
			return err
		}
		if n > s.CeilingOf(o) {
			return fmt.Errorf("%w: its keys' limits would add up to %d requests per minute, over its ceiling of %d; "+
				"raise the ceiling (scripts/admin org set-limit) or lower a key's limit", ErrCeiling, n, s.CeilingOf(o))
		}
		tx := s.db.Tx()
		if err := add(tx); err != nil {
			return err
		}
		pk, sk := orgKey(org)
		vi, err := addUpdate(tx, pk, sk, keysVersionMoves(o.KeysVersion, expression.UpdateBuilder{}))
		if err != nil {
			return err
		}
		err = tx.Commit(ctx)
		var failed *store.TxFailed
		switch {
		case errors.As(err, &failed) && (failed.Has(vi) || failed.Conflict(vi)):
			return store.ErrConflict // another change came first: read again
		case errors.As(err, &failed) && len(failed.Failed) > 0:
			return ErrClientExists
		case errors.Is(err, store.ErrTxConflict):
			return store.ErrConflict
		}
		return err
	})
}

// SetLimit gives a live client its own rate limit (0: the stage's again),
// within its organisation's ceiling.
func (s *Store) SetLimit(ctx context.Context, clientID string, limit int) (ClientRef, error) {
	if limit < 0 {
		return ClientRef{}, errors.New("a rate limit is a positive number of requests per minute, or 0 for the stage's")
	}
	c, err := s.client(ctx, clientID)
	if err != nil {
		return ClientRef{}, err
	}
	if c.RevokedAt != "" {
		return ClientRef{}, ErrNoSuchClient
	}
	c.RateLimit = limit
	err = s.changeKeys(ctx, c.OrgID, func(o Org, refs []ClientRef) (int, error) {
		n := 0
		for _, r := range refs {
			if r.RevokedAt == "" && r.ID != c.ID {
				n += s.limitOf(r.RateLimit)
			}
		}
		return n + s.limitOf(limit), nil
	}, func(tx *store.TxBuilder) error {
		pk, sk := clientKey(c.ID)
		if _, err := addUpdate(tx, pk, sk, setLimit(limit, liveClient())); err != nil {
			return err
		}
		_, err := addUpdate(tx, store.OrgPK(c.OrgID), refSK(c.ID), setLimit(limit, store.ItemExists()))
		return err
	})
	if err != nil {
		return ClientRef{}, err
	}
	return c.ref(), nil
}

// setLimit is the write of a key's own limit (0: none, the stage's) where
// cond holds.
func setLimit(limit int, cond expression.ConditionBuilder) expression.Builder {
	u := expression.Remove(expression.Name("rate_limit"))
	if limit > 0 {
		u = expression.Set(expression.Name("rate_limit"), expression.Value(limit))
	}
	return expression.NewBuilder().WithCondition(cond).WithUpdate(u)
}

// liveClient is the condition that a client exists and is not revoked.
func liveClient() expression.ConditionBuilder {
	return store.ItemExists().And(expression.AttributeNotExists(expression.Name("revoked_at")))
}

// keysVersionMoves is the update of an organisation whose keys version was
// read as v, with more updates to the same item: the version moves to v+1
// if nobody moved it meanwhile (an organisation from before keys versions
// has none).
func keysVersionMoves(v int, more expression.UpdateBuilder) expression.Builder {
	version := expression.Name("keys_version")
	cond := store.ItemExists().And(expression.AttributeNotExists(version).Or(version.Equal(expression.Value(v))))
	return expression.NewBuilder().WithCondition(cond).WithUpdate(more.Set(version, expression.Value(v+1)))
}

// addUpdate adds to tx an update of the item (pk, sk) as b says and
// returns its index in the transaction.
func addUpdate(tx *store.TxBuilder, pk, sk string, b expression.Builder) (int, error) {
	e, err := b.Build()
	if err != nil {
		return 0, fmt.Errorf("auth: an update of %s %s: %w", pk, sk, err)
	}
	return tx.Add(ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{TableName: aws.String(tx.DB().Table), Key: store.Key(pk, sk),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()}}), nil
}

// SetCeiling sets an organisation's ceiling (0: the default again, CeilingOf);
// it may not go below what its live keys' limits already add up to. The
// write is conditional on the keys version read, as key changes are.
func (s *Store) SetCeiling(ctx context.Context, org string, ceiling int) (Org, error) {
	if ceiling < 0 {
		return Org{}, errors.New("a ceiling is a positive number of requests per minute, or 0 for the default")
	}
	var out Org
	err := store.Optimistic("the keys of organisation "+org, func() error {
		o, err := s.GetOrg(ctx, org)
		if err != nil {
			return err
		}
		refs, err := s.Keys(ctx, org)
		if err != nil {
			return err
		}
		o.RateCeiling = ceiling
		if n := s.allocated(refs); n > s.CeilingOf(o) {
			return fmt.Errorf("%w: its live keys' limits already add up to %d requests per minute; lower or revoke keys first", ErrCeiling, n)
		}
		pk, sk := orgKey(org)
		set := expression.Remove(expression.Name("rate_ceiling"))
		if ceiling > 0 {
			set = expression.Set(expression.Name("rate_ceiling"), expression.Value(ceiling))
		}
		e, err := keysVersionMoves(o.KeysVersion, set).Build()
		if err != nil {
			return fmt.Errorf("auth: the ceiling of %s: %w", org, err)
		}
		_, err = s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.db.Table), Key: store.Key(pk, sk),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values()})
		if store.IsConditionFailed(err) {
			return store.ErrConflict
		}
		o.KeysVersion++
		out = o
		return err
	})
	return out, err
}

// client reads an API client whole.
func (s *Store) client(ctx context.Context, id string) (Client, error) {
	var c Client
	pk, sk := clientKey(id)
	if err := s.db.Get(ctx, pk, sk, &c); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Client{}, ErrNoSuchClient
		}
		return Client{}, err
	}
	return c, nil
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
	e, err := expression.NewBuilder().WithCondition(liveClient()).
		WithUpdate(expression.Set(secretPath(tok.SecretID), expression.Value(&ddbtypes.AttributeValueMemberM{Value: sec}))).Build()
	if err != nil {
		return Token{}, fmt.Errorf("rotate %s: %w", clientID, err)
	}
	_, err = s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.db.Table), Key: store.Key(pk, sk),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
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
	if secretID == "" || strings.ContainsAny(secretID, "[]") {
		return ErrNoSuchSecret // no secret is named so (newToken's are hex), and the builder would read an index in it
	}
	pk, sk := clientKey(clientID)
	path := secretPath(secretID)
	e, err := expression.NewBuilder().WithCondition(expression.AttributeExists(path)).WithUpdate(expression.Remove(path)).Build()
	if err != nil {
		return fmt.Errorf("revoke secret %s/%s: %w", clientID, secretID, err)
	}
	_, err = s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.db.Table), Key: store.Key(pk, sk),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(),
	})
	if store.IsConditionFailed(err) {
		return ErrNoSuchSecret
	}
	if err != nil {
		return fmt.Errorf("revoke secret %s/%s: %w", clientID, secretID, err)
	}
	return nil
}

// secretPath is the path of a client's secret: a field of its secrets map,
// named as is (a secret id holds no dot).
func secretPath(secretID string) expression.NameBuilder {
	return expression.Name("secrets").AppendName(expression.NameNoDotSplit(secretID))
}

// Revoke kills a client and every secret it has, from the next request on,
// and frees its share of the organisation's ceiling.
func (s *Store) Revoke(ctx context.Context, clientID string, now time.Time) error {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return err
	}
	if c.RevokedAt != "" {
		return nil
	}
	at := store.FormatTime(now)
	revoke := func() expression.Builder {
		revokedAt := expression.Name("revoked_at")
		return expression.NewBuilder().WithCondition(store.ItemExists()).
			WithUpdate(expression.Set(revokedAt, revokedAt.IfNotExists(expression.Value(at))))
	}
	err = s.changeKeys(ctx, c.OrgID, func(Org, []ClientRef) (int, error) { return 0, nil }, func(tx *store.TxBuilder) error {
		pk, sk := clientKey(c.ID)
		if _, err := addUpdate(tx, pk, sk, revoke()); err != nil {
			return err
		}
		_, err := addUpdate(tx, store.OrgPK(c.OrgID), refSK(c.ID), revoke())
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke %s: %w", clientID, err)
	}
	return nil
}

// Usage is the client's rate-limit state after counting a request.
type Usage struct {
	Count int64     // requests in the current window, this one included
	Limit int       // the client's own limit; 0: the stage's
	Reset time.Time // when the current window ends
}

// Authenticate checks a token and counts the request against its client's
// rate limit: a consistent read of the client (its secret's hash, mode,
// revocation, expiry, organisation, scopes, own limit), checked here in
// constant time, and at the same moment an UpdateItem of its count alone
// (rl_<minute>, on a client that exists, ReturnValues UPDATED_NEW). The two
// are separate because the functions' roles may write nothing of a client
// but its counts (dynamodb:Attributes, with ReturnValues held to the
// updated attributes, as AWS requires for that limit): a condition on the
// secret's hash, or an ALL_NEW answer, would need them to name the
// client's other attributes. A request whose key turns out wrong, revoked
// or expired has its count taken back, so it costs its client nothing.
// Nothing is cached: a revocation or expiry applies to the very next
// request.
//
// Counts are kept one attribute per minute (rl_<unix minute>); the update
// removes the previous minute's, and any older one this process saw left
// behind after an idle spell, so the item stays small without a second
// write.
func (s *Store) Authenticate(ctx context.Context, tok Token, now time.Time) (Client, Usage, error) {
	minute := now.Unix() / 60
	cur := rlPrefix + strconv.FormatInt(minute, 10)
	prev := rlPrefix + strconv.FormatInt(minute-1, 10)
	count := expression.Name(cur)
	update := expression.Set(count, expression.Plus(count.IfNotExists(expression.Value(numZero)), expression.Value(numOne))).
		Remove(expression.Name(prev))
	for _, old := range s.takeStale(tok.ClientID) {
		if old != cur && old != prev {
			update = update.Remove(expression.Name(old))
		}
	}
	// no client, no count (and no item made)
	e, err := expression.NewBuilder().WithCondition(store.ItemExists()).WithUpdate(update).Build()
	if err != nil {
		return Client{}, Usage{}, fmt.Errorf("authenticate: %w", err)
	}
	pk, sk := clientKey(tok.ClientID)
	var (
		got    *dynamodb.GetItemOutput
		getErr error
		read   store.Calls // a panic of the read comes back here, to the edge's recovery
	)
	read.Go(func() {
		got, getErr = s.db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.db.Table), Key: store.Key(pk, sk), ConsistentRead: aws.Bool(true)})
	})
	out, err := s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.db.Table), Key: store.Key(pk, sk),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValues: ddbtypes.ReturnValueUpdatedNew,
	})
	read.Wait()
	if store.IsConditionFailed(err) {
		return Client{}, Usage{}, ErrUnauthenticated
	}
	if err != nil {
		return Client{}, Usage{}, fmt.Errorf("authenticate: %w", err)
	}
	if getErr != nil {
		return Client{}, Usage{}, fmt.Errorf("authenticate: %w", getErr)
	}
	c, err := decodeClient(got.Item)
	if err != nil {
		return Client{}, Usage{}, err
	}
	sec, ok := c.Secrets[tok.SecretID]
	if got.Item == nil || !ok || subtle.ConstantTimeCompare([]byte(sec.Hash), []byte(tok.Hash())) != 1 ||
		c.RevokedAt != "" || c.Mode != tok.Mode || (c.ExpiresAt != 0 && c.ExpiresAt <= now.Unix()) {
		s.uncount(ctx, pk, sk, cur)
		return Client{}, Usage{}, ErrUnauthenticated
	}
	counted, ok := out.Attributes[cur].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return Client{}, Usage{}, fmt.Errorf("authenticate: no counter %s on client %s", cur, c.ID)
	}
	n, err := strconv.ParseInt(counted.Value, 10, 64)
	if err != nil {
		return Client{}, Usage{}, fmt.Errorf("authenticate: counter %s: %w", cur, err)
	}
	s.noteStale(c.ID, got.Item, cur, prev)
	return c, Usage{Count: n, Limit: c.RateLimit, Reset: time.Unix((minute+1)*60, 0).UTC()}, nil
}

// uncount takes back the count of a request whose key did not hold (best
// effort: a failure leaves one request counted, as a request that failed
// later would be).
func (s *Store) uncount(ctx context.Context, pk, sk, cur string) {
	count := expression.Name(cur)
	e, err := expression.NewBuilder().WithCondition(count.GreaterThan(expression.Value(numZero))).
		WithUpdate(expression.Set(count, count.Minus(expression.Value(numOne)))).Build()
	if err == nil {
		_, err = s.db.Client.UpdateItem(context.WithoutCancel(ctx), &dynamodb.UpdateItemInput{
			TableName: aws.String(s.db.Table), Key: store.Key(pk, sk),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		})
	}
	if err != nil && !store.IsConditionFailed(err) {
		slog.WarnContext(ctx, "a refused key's count was not taken back", "err", err)
	}
}

// numZero and numOne are the numbers a request's count starts from and
// moves by, given to the builder as attribute values (no marshalling per
// request); never written.
var (
	numZero ddbtypes.AttributeValue = &ddbtypes.AttributeValueMemberN{Value: "0"}
	numOne  ddbtypes.AttributeValue = &ddbtypes.AttributeValueMemberN{Value: "1"}
)

// decodeClient reads the attributes of a client item that a request
// needs, without reflection: every request decodes one.
func decodeClient(m map[string]ddbtypes.AttributeValue) (Client, error) {
	str := func(name string) string {
		v, _ := m[name].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	num := func(name string) (int64, error) {
		v, _ := m[name].(*ddbtypes.AttributeValueMemberN)
		if v == nil {
			return 0, nil
		}
		return strconv.ParseInt(v.Value, 10, 64)
	}
	c := Client{ID: str("id"), OrgID: str("org_id"), Name: str("name"), Mode: str("mode"), CreatedAt: str("created_at"), RevokedAt: str("revoked_at")}
	exp, err := num("expires_at")
	if err != nil {
		return Client{}, fmt.Errorf("client %s: expires_at: %w", c.ID, err)
	}
	limit, err := num("rate_limit")
	if err != nil {
		return Client{}, fmt.Errorf("client %s: rate_limit: %w", c.ID, err)
	}
	c.ExpiresAt, c.RateLimit = exp, int(limit)
	switch v := m["scopes"].(type) {
	case *ddbtypes.AttributeValueMemberL:
		for _, e := range v.Value {
			if sv, ok := e.(*ddbtypes.AttributeValueMemberS); ok {
				c.Scopes = append(c.Scopes, sv.Value)
			}
		}
	case *ddbtypes.AttributeValueMemberSS:
		c.Scopes = v.Value
	}
	if sm, ok := m["secrets"].(*ddbtypes.AttributeValueMemberM); ok {
		c.Secrets = make(map[string]Secret, len(sm.Value))
		for id, e := range sm.Value {
			em, ok := e.(*ddbtypes.AttributeValueMemberM)
			if !ok {
				continue
			}
			var sec Secret
			if h, ok := em.Value["h"].(*ddbtypes.AttributeValueMemberS); ok {
				sec.Hash = h.Value
			}
			if at, ok := em.Value["created_at"].(*ddbtypes.AttributeValueMemberS); ok {
				sec.CreatedAt = at.Value
			}
			c.Secrets[id] = sec
		}
	}
	if c.ID == "" || c.OrgID == "" {
		return Client{}, errors.New("auth: a client item without its id or organisation")
	}
	return c, nil
}

// maxStale bounds the clients whose stale windows a process remembers.
const maxStale = 10000

// noteStale remembers the windows older than the current one that item
// still holds (left by an idle spell), for the client's next update to
// remove: they are never read as the current count, only take room.
func (s *Store) noteStale(client string, item map[string]ddbtypes.AttributeValue, keep ...string) {
	var old []string
	for name := range item {
		if strings.HasPrefix(name, rlPrefix) && !slices.Contains(keep, name) {
			old = append(old, name)
		}
	}
	if len(old) == 0 {
		return
	}
	s.staleMu.Lock()
	defer s.staleMu.Unlock()
	if s.stale == nil || len(s.stale) >= maxStale {
		s.stale = map[string][]string{}
	}
	s.stale[client] = old
}

func (s *Store) takeStale(client string) []string {
	s.staleMu.Lock()
	defer s.staleMu.Unlock()
	old := s.stale[client]
	delete(s.stale, client)
	return old
}
