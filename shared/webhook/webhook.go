// Package webhook holds webhook endpoints (the /webhooks management API),
// the fan-out of outbox events to subscribed endpoints, and the signed,
// retried delivery of each event to each endpoint.
package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/body"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// DisableAfter is the number of consecutive failed deliveries that turns an
// endpoint off (the spec's rule). A failed delivery is an event whose
// attempts are exhausted: the last of its five failed (about 41 minutes
// after the first, on the spec's schedule). Failed attempts that are not
// the last count for nothing, so a receiver down for a few seconds or a
// few minutes is never turned off; any success resets the count.
const DisableAfter = 20

// MaxEndpoints bounds an organisation's endpoints (fan-out reads them all).
const MaxEndpoints = 50

// MaxURL bounds an endpoint's URL; MaxSecret is the length of the secrets
// it issues ("whsec_" and the base64 of 32 bytes); MaxAttemptError bounds
// a delivery attempt's error.
const (
	MaxURL          = 2048
	MaxSecret       = len("whsec_") + 44
	MaxAttemptError = 1000
)

// Endpoint is a subscriber. Secret is stored to sign deliveries and is
// returned once, beside data, at creation.
type Endpoint struct {
	store.Keys          `json:"-"`
	ID                  string        `dynamodbav:"id" json:"id"`
	URL                 string        `dynamodbav:"url" json:"url"`
	EventTypes          []outbox.Type `dynamodbav:"event_types" json:"event_types"`
	IsActive            bool          `dynamodbav:"is_active" json:"is_active"`
	ConsecutiveFailures int           `dynamodbav:"consecutive_failures" json:"consecutive_failures"`
	Secret              string        `dynamodbav:"secret" json:"-"`
	// PreviousSecret still signs deliveries, beside Secret, until
	// PreviousSecretExpiresAt: a rotation's grace period.
	PreviousSecret          string `dynamodbav:"previous_secret,omitempty" json:"-"`
	PreviousSecretExpiresAt string `dynamodbav:"previous_secret_expires_at,omitempty" json:"previous_secret_expires_at,omitempty"`
	DisabledAt              string `dynamodbav:"disabled_at,omitempty" json:"disabled_at,omitempty"`
	CreatedAt               string `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt               string `dynamodbav:"updated_at" json:"updated_at"`
}

func endpointSK(id string) string { return "WH#" + id }

// countSK is the organisation's endpoint counter, kept in the same
// transactions as creates and deletes so that MaxEndpoints holds under
// concurrent creates.
const countSK = "COUNTER#WEBHOOKS"

// DefaultSecretGrace is how long a rotated-out secret keeps signing.
const DefaultSecretGrace = 24 * time.Hour

// SigningSecrets are the secrets a delivery at now is signed with: the
// current one, and the previous one during its grace period.
func (e *Endpoint) SigningSecrets(now time.Time) []string {
	secrets := []string{e.Secret}
	if e.PreviousSecret != "" && e.PreviousSecretExpiresAt > store.FormatTime(now) {
		secrets = append(secrets, e.PreviousSecret)
	}
	return secrets
}

// newSecret is a signing secret in Standard Webhooks' form: "whsec_" and
// the base64 of 32 random bytes. Service-Signature is keyed with the whole
// string (as it always was, whatever a secret's form), webhook-signature
// with the decoded bytes.
func newSecret() (string, error) {
	var sec [32]byte
	if _, err := rand.Read(sec[:]); err != nil {
		return "", err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(sec[:]), nil
}

func readBody(r *http.Request) ([]byte, error) { return io.ReadAll(r.Body) }

// Store keeps endpoints and delivery attempts.
type Store struct {
	db *store.DB
	// AllowPrivate admits targets on loopback and private networks
	// (WEBHOOK_ALLOW_PRIVATE_TARGETS: the devserver's default, never AWS's).
	AllowPrivate bool
	// Box seals signing secrets at rest: a KMSBox under the stage's key
	// (WEBHOOK_SECRETS_KEY_ARN), or nil for a LocalBox keyed from the table.
	Box SecretBox
	// FeedSettle is how far behind now GET /events serves
	// (EVENT_FEED_SETTLE; outbox.DefaultSettle), FeedRetention how long
	// events are kept, listed and replayable (EVENT_RETENTION;
	// outbox.DefaultFeedRetention when 0).
	FeedSettle, FeedRetention time.Duration

	localMu sync.Mutex
	local   SecretBox // nil until a load succeeds
}

// box is Box, or the table-keyed LocalBox. A failed load of the key (a
// cancelled or throttled first request) is not kept: the next call tries
// again, so one bad call never leaves a container unable to seal or open.
func (s *Store) box(ctx context.Context) (SecretBox, error) {
	if s.Box != nil {
		return s.Box, nil
	}
	s.localMu.Lock()
	defer s.localMu.Unlock()
	if s.local != nil {
		return s.local, nil
	}
	key, err := s.db.LoadOrCreateSecret(ctx, "webhook-secrets")
	if err != nil {
		return nil, fmt.Errorf("webhook: the key that seals signing secrets: %w", err)
	}
	s.local = LocalBox{Key: key}
	return s.local, nil
}

// NewStore returns a Store on db.
func NewStore(db *store.DB, allowPrivate bool) *Store {
	return &Store{db: db, AllowPrivate: allowPrivate, FeedSettle: outbox.DefaultSettle}
}

// Get reads an endpoint of org with its secrets opened, for signing.
func (s *Store) Get(ctx context.Context, org, id string) (Endpoint, error) {
	e, err := store.ReadInto[Endpoint](ctx, s.db, store.OrgPK(org), endpointSK(id)) // read-only: updates are UpdateItems
	if err != nil {
		return e, err
	}
	box, err := s.box(ctx)
	if err != nil {
		return e, err
	}
	bind := Binding(org, id)
	if e.Secret, err = box.Open(ctx, e.Secret, bind); err != nil {
		return e, err
	}
	if e.PreviousSecret != "" {
		if e.PreviousSecret, err = box.Open(ctx, e.PreviousSecret, bind); err != nil {
			return e, err
		}
	}
	return e, nil
}

// All returns every endpoint of org: Query base PK O#org, SK prefix WH#.
func (s *Store) All(ctx context.Context, org string) ([]Endpoint, error) {
	eps, _, err := store.QueryInto[Endpoint](ctx, s.db, store.ListQuery{PK: store.OrgPK(org), SKPrefix: "WH#", Limit: MaxEndpoints + 1})
	return eps, err
}

type noFilter[T any] struct{}

// Matches lets every item through: these lists have no filters.
func (noFilter[T]) Matches(T) bool { return true }

func (s *Store) list(ctx context.Context, org string, req store.ListRequest[noFilter[Endpoint]]) ([]Endpoint, store.StartKey, error) {
	return store.QueryInto[Endpoint](ctx, s.db, store.ListQuery{PK: store.OrgPK(org), SKPrefix: "WH#", Limit: req.PerPage, After: req.After,
		Project: true, Omit: []string{"secret", "previous_secret"}}) // never returned, so never read here
}

func (s *Store) validate(ctx context.Context, b *body.Object, required bool) (urlStr string, types []outbox.Type) {
	urlStr = b.String("url", required || b.Has("url"), MaxURL) // a PATCH of "" is refused, not ignored
	if urlStr != "" {
		if err := CheckURL(ctx, urlStr, s.AllowPrivate, nil); err != nil {
			b.Fail("url", "%s", err.Error())
		}
	}
	if ts, ok := b.Strings("event_types", required); ok {
		types = eventTypes(b, ts)
	}
	return urlStr, types
}

// eventTypes reads the event types of a body's event_types, each once,
// failing the field on an unknown one.
func eventTypes(b *body.Object, names []string) []outbox.Type {
	if len(names) > len(outbox.Types) {
		b.Fail("event_types", "event_types lists at most %d types, each once", len(outbox.Types))
		return nil
	}
	var types []outbox.Type
	for _, n := range names {
		t, err := outbox.ParseType(n)
		if err != nil {
			b.Fail("event_types", "%s", err.Error())
		} else if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types
}

// Create registers an endpoint with a fresh secret.
func (s *Store) Create(ctx context.Context, org string, raw []byte, now time.Time) (Endpoint, error) {
	b, err := body.Decode(raw)
	if err != nil {
		return Endpoint{}, err
	}
	b.Forbid("it is assigned by the service", "id", "secret", "created_at", "updated_at", "consecutive_failures")
	u, types := s.validate(ctx, b, true)
	active := true
	if b.Has("is_active") {
		active = b.Bool("is_active")
	}
	if err := b.Err(); err != nil {
		return Endpoint{}, err
	}
	id := store.NewID()
	secret, sealed, err := s.newSealedSecret(ctx, org, id)
	if err != nil {
		return Endpoint{}, err
	}
	e := Endpoint{ID: id, URL: u, EventTypes: types, IsActive: active, Secret: sealed, CreatedAt: store.FormatTime(now)}
	e.UpdatedAt = e.CreatedAt
	e.Keys = store.Keys{PK: store.OrgPK(org), SK: endpointSK(e.ID), Kind: "webhook_endpoint"}
	tx := s.db.Tx()
	tx.PutNew(e)
	count, err := s.count(org, 1)
	if err != nil {
		return Endpoint{}, err
	}
	ci := tx.Add(count)
	err = tx.Commit(ctx)
	var failed *store.TxFailed
	if errors.As(err, &failed) && failed.Has(ci) {
		return Endpoint{}, apperr.Invalidf("url", "an organisation can have at most %d webhook endpoints; delete one first", MaxEndpoints)
	}
	e.Secret = secret // shown once, in the answer; the table holds it sealed
	return e, err
}

// newSealedSecret makes a signing secret and its sealed form, bound to
// the endpoint id of org.
func (s *Store) newSealedSecret(ctx context.Context, org, id string) (secret, sealed string, err error) {
	if secret, err = newSecret(); err != nil {
		return "", "", err
	}
	box, err := s.box(ctx)
	if err != nil {
		return "", "", err
	}
	sealed, err = box.Seal(ctx, secret, Binding(org, id))
	return secret, sealed, err
}

// count moves the organisation's endpoint counter by delta; an increase
// is refused at MaxEndpoints.
func (s *Store) count(org string, delta int) (ddbtypes.TransactWriteItem, error) {
	n := expression.Name("value")
	var cond expression.ConditionBuilder // a decrease is never refused
	if delta > 0 {
		cond = expression.Or(expression.AttributeNotExists(n), n.LessThan(expression.Value(MaxEndpoints)))
	}
	return txUpdate(s.db, store.Key(store.OrgPK(org), countSK),
		expression.Add(n, expression.Value(delta)).Set(expression.Name("kind"), expression.Value("counter")), cond)
}

// Patch is a validated PATCH of an endpoint: the fields sent, and
// replay_since (an addition: with is_active true, the feed's events since
// then are queued to the endpoint once it is on).
type Patch struct {
	URL         string
	Types       []outbox.Type
	Active      *bool
	ReplaySince time.Time
}

// ParsePatch validates a PATCH body.
func (s *Store) ParsePatch(ctx context.Context, raw []byte, now time.Time) (Patch, error) {
	b, err := body.Decode(raw)
	if err != nil {
		return Patch{}, err
	}
	b.Forbid("it cannot be changed", "id", "secret", "created_at", "updated_at", "consecutive_failures", "disabled_at")
	var p Patch
	p.URL, p.Types = s.validate(ctx, b, false)
	if b.Has("is_active") {
		v := b.Bool("is_active")
		p.Active = &v
	}
	if since, ok := b.Time("replay_since", false); ok {
		p.ReplaySince = since
		if p.Active == nil || !*p.Active {
			b.Fail("replay_since", "replay_since goes with is_active true: it queues what the endpoint missed as it is turned back on "+
				"(to replay to an endpoint that is on, POST /webhooks/{id}/replay)")
		}
		s.checkWindow(b, "replay_since", p.ReplaySince, now)
	}
	return p, b.Err()
}

// Update applies a PATCH of is_active, url and event_types in one
// conditional UpdateItem that sets only the fields sent: delivery counters
// and an automatic disable, which deliveries change concurrently, are never
// rewritten. Turning an inactive endpoint back on also resets its failure
// count, so deliveries resume.
func (s *Store) Update(ctx context.Context, org, id string, p Patch, now time.Time) (Endpoint, error) {
	u, types, active := p.URL, p.Types, p.Active
	// The fields sent. A new builder for each write: an UpdateBuilder's
	// copies share their list of actions, so adding to one adds to all.
	fields := func() expression.UpdateBuilder {
		set := expression.Set(expression.Name("updated_at"), expression.Value(store.FormatTime(now)))
		if u != "" {
			set = set.Set(expression.Name("url"), expression.Value(u))
		}
		if types != nil {
			set = set.Set(expression.Name("event_types"), expression.Value(types))
		}
		if active != nil {
			set = set.Set(expression.Name("is_active"), expression.Value(*active))
		}
		return set
	}
	update := func(upd expression.UpdateBuilder, cond expression.ConditionBuilder) (Endpoint, error) {
		in, err := updateInput(s.db, store.Key(store.OrgPK(org), endpointSK(id)), upd, cond)
		if err != nil {
			return Endpoint{}, err
		}
		in.ReturnValues = ddbtypes.ReturnValueAllNew
		out, err := s.db.Client.UpdateItem(ctx, in)
		if err != nil {
			return Endpoint{}, err
		}
		var e Endpoint
		return e, store.Unmarshal(out.Attributes, &e)
	}
	if active != nil && *active {
		// Back on after a disable: reset the count, in the same write, only
		// if it is off right now.
		e, err := update(fields().Set(expression.Name("consecutive_failures"), expression.Value(0)).Remove(expression.Name("disabled_at")),
			store.ItemExists().And(expression.Name("is_active").Equal(expression.Value(false))))
		if !store.IsConditionFailed(err) {
			return e, err
		}
	}
	e, err := update(fields(), store.ItemExists())
	if store.IsConditionFailed(err) {
		return Endpoint{}, store.ErrNotFound
	}
	return e, err
}

// ErrRotated is returned when another rotation replaced the secret first.
var ErrRotated = errors.New("webhook: the secret was rotated by another request")

// ErrSecretInGrace is returned for a rotation with a grace period while
// the secret before the current one is still in its own: rotating would
// end that grace early (one previous secret signs at a time), so the
// rotation is refused until Until, or may retire the current secret at
// once (grace 0), which leaves the previous one its grace.
type ErrSecretInGrace struct{ Until time.Time }

func (e *ErrSecretInGrace) Error() string {
	return "webhook: a previous secret signs until " + e.Until.UTC().Format(time.RFC3339)
}

// RotateSecret gives an endpoint a new signing secret, returned once. The
// old one keeps signing beside it for grace, so receivers can switch over.
// The write is conditional on the secret it replaces: of concurrent
// rotations one wins and the others get ErrRotated. Every secret handed
// out keeps signing through its own grace: while the secret before the
// current one is in its grace, a rotation with a grace is refused
// (ErrSecretInGrace), and one with none retires the current secret at
// once and leaves the previous one signing until its time.
func (s *Store) RotateSecret(ctx context.Context, org, id string, now time.Time, grace time.Duration) (Endpoint, error) {
	cur, err := store.ReadInto[struct {
		Secret    string `dynamodbav:"secret"`
		PrevUntil string `dynamodbav:"previous_secret_expires_at"`
	}](ctx, s.db, store.OrgPK(org), endpointSK(id))
	if err != nil {
		return Endpoint{}, err
	}
	// previous_secret_expires_at changes only with the secret, which the
	// write below is conditional on: what is read here holds at the write.
	keepPrevious := false // the previous secret keeps its own grace
	if cur.PrevUntil > store.FormatTime(now) {
		if grace > 0 {
			until, _ := time.Parse(store.TimeLayout, cur.PrevUntil)
			return Endpoint{}, &ErrSecretInGrace{Until: until}
		}
		keepPrevious = true
	}
	secret, sealed, err := s.newSealedSecret(ctx, org, id)
	if err != nil {
		return Endpoint{}, err
	}
	current := expression.Name("secret")
	var rotate expression.UpdateBuilder
	if !keepPrevious {
		// The current secret becomes the previous one (SET reads every
		// operand from the item as it was).
		rotate = expression.Set(expression.Name("previous_secret"), current).
			Set(expression.Name("previous_secret_expires_at"), expression.Value(store.FormatTime(now.Add(grace))))
	}
	rotate = rotate.Set(current, expression.Value(sealed)).Set(expression.Name("updated_at"), expression.Value(store.FormatTime(now)))
	in, err := updateInput(s.db, store.Key(store.OrgPK(org), endpointSK(id)), rotate, current.Equal(expression.Value(cur.Secret)))
	if err != nil {
		return Endpoint{}, err
	}
	in.ReturnValues = ddbtypes.ReturnValueAllNew
	in.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
	out, err := s.db.Client.UpdateItem(ctx, in)
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 {
			return Endpoint{}, store.ErrNotFound // deleted meanwhile
		}
		return Endpoint{}, ErrRotated
	}
	if err != nil {
		return Endpoint{}, err
	}
	var e Endpoint
	if err := store.Unmarshal(out.Attributes, &e); err != nil {
		return Endpoint{}, err
	}
	e.Secret, e.PreviousSecret = secret, "" // the new one, once; the old one stays sealed in the table
	return e, nil
}

// MaxSecretGrace bounds a rotation's grace period.
const MaxSecretGrace = 7 * 24 * time.Hour

// parseGrace reads the optional rotate body {"grace_period_seconds": n}.
func parseGrace(raw []byte) (time.Duration, error) {
	b, err := body.Decode(raw)
	if err != nil {
		return 0, err
	}
	sec, ok := b.Int("grace_period_seconds", false, 0, int64(MaxSecretGrace/time.Second), " (0 retires the old secret at once; at most 604800, a week)")
	if err := b.Err(); err != nil {
		return 0, err
	}
	if !ok {
		return DefaultSecretGrace, nil
	}
	return time.Duration(sec) * time.Second, nil
}

// Delete removes an endpoint, and its place under MaxEndpoints; deliveries
// to it stop.
func (s *Store) Delete(ctx context.Context, org, id string) error {
	exists, err := conditionOf(store.ItemExists())
	if err != nil {
		return err
	}
	count, err := s.count(org, -1)
	if err != nil {
		return err
	}
	tx := s.db.Tx()
	tx.Add(ddbtypes.TransactWriteItem{Delete: &ddbtypes.Delete{
		TableName: aws.String(s.db.Table), Key: store.Key(store.OrgPK(org), endpointSK(id)),
		ConditionExpression: exists.Condition(), ExpressionAttributeNames: exists.Names(),
	}})
	tx.Add(count)
	err = tx.Commit(ctx)
	var failed *store.TxFailed
	if errors.As(err, &failed) {
		return store.ErrNotFound
	}
	return err
}

// Handlers returns the handlers of the webhooks family.
func Handlers(s *Store, d *Deliverer) httpapi.Handlers {
	h := &handlers{s: s, d: d}
	return httpapi.Handlers{
		"webhooks.list":          h.list,
		"webhooks.get":           httpapi.GetHandler("id", "webhook endpoint", h.get),
		"webhooks.create":        h.create,
		"webhooks.update":        h.update,
		"webhooks.replay":        h.replay,
		"events.list":            s.serveEvents,
		"webhooks.test":          h.test,
		"webhooks.rotate_secret": h.rotateSecret,
		"webhooks.delete":        h.delete,
		"webhooks.deliveries":    h.deliveries,
		"webhooks.retry":         h.retry,
	}
}

// handlers are the family's operations on its store and deliverer.
type handlers struct {
	s *Store
	d *Deliverer
}

// noEndpoint is the 404 of every route with an endpoint id.
func noEndpoint() error { return apperr.Missing("webhook endpoint") }

// endpointID is the request's {id}, or the 404 of an id that cannot be one.
func endpointID(r *http.Request) (string, error) {
	id, ok := httpapi.PathID(r.PathValue("id"))
	if !ok {
		return "", noEndpoint()
	}
	return id, nil
}

// notFound turns the store's not-found into the endpoint's 404.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return noEndpoint()
	}
	return err
}

// get reads an endpoint, never its secrets.
func (h *handlers) get(ctx context.Context, org, id string) (Endpoint, error) {
	return store.ReadInto[Endpoint](ctx, h.s.db, store.OrgPK(org), endpointSK(id), "secret", "previous_secret")
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) {
	httpapi.ServeList(w, r, "webhooks", func(url.Values) (noFilter[Endpoint], error) { return noFilter[Endpoint]{}, nil }, h.s.list,
		func(ctx context.Context, org string, ids []string) ([]Endpoint, error) {
			sks := make([]string, len(ids))
			for i, id := range ids {
				sks[i] = endpointSK(id)
			}
			return store.BatchReadInto[Endpoint](ctx, h.s.db, store.OrgPK(org), sks, "secret", "previous_secret")
		})
}

func (h *handlers) create(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(r)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	e, err := h.s.Create(r.Context(), httpapi.OrgID(r.Context()), raw, httpapi.Now(r.Context()))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set("Location", httpapi.AbsoluteURL(r, "/api/v1/webhooks/"+e.ID))
	httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"data": e, "secret": e.Secret})
}

func (h *handlers) update(w http.ResponseWriter, r *http.Request) {
	id, idErr := endpointID(r)
	raw, err := readBody(r)
	if idErr != nil {
		err = idErr
	}
	ctx, org, now := r.Context(), httpapi.OrgID(r.Context()), httpapi.Now(r.Context())
	var p Patch
	if err == nil {
		p, err = h.s.ParsePatch(ctx, raw, now)
	}
	var lock *replayLock
	if err == nil && !p.ReplaySince.IsZero() {
		// The replay's budget is checked, and its lock held, before the
		// endpoint is turned on: a replay refused leaves it as it was.
		var cur Endpoint
		cur, err = h.get(ctx, org, id)
		if err == nil {
			_, err = h.d.replayBudgetLeft(ctx, org, now)
		}
		if err == nil {
			lock, err = h.s.lockReplay(ctx, org, cmp.Or(p.URL, cur.URL), id, now)
		}
	}
	var e Endpoint
	if err == nil {
		e, err = h.s.Update(ctx, org, id, p, now)
		if err != nil && lock != nil {
			h.s.releaseReplay(context.WithoutCancel(ctx), lock)
		}
	}
	var replay *Replay
	if err == nil && lock != nil {
		var rp Replay
		rp, err = h.d.queueReplay(ctx, lock, &e, ReplayRequest{Since: p.ReplaySince}, now)
		replay = &rp
	}
	if err != nil {
		httpapi.WriteError(w, r, replayError(notFound(err)))
		return
	}
	if replay != nil {
		httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": e, "replay": replay})
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Data(e))
}

func (h *handlers) replay(w http.ResponseWriter, r *http.Request) {
	id, idErr := endpointID(r)
	raw, err := readBody(r)
	if idErr != nil {
		err = idErr
	}
	ctx, now := r.Context(), httpapi.Now(r.Context())
	var req ReplayRequest
	if err == nil {
		req, err = h.s.parseReplay(raw, now)
		if err != nil {
			// An endpoint that is not there answers 404, whatever the body
			// (as every route with an id).
			if _, gerr := h.get(ctx, httpapi.OrgID(ctx), id); errors.Is(gerr, store.ErrNotFound) {
				err = gerr
			}
		}
	}
	var rp Replay
	if err == nil {
		rp, err = h.d.Replay(ctx, httpapi.OrgID(ctx), id, req, now)
	}
	if err != nil {
		httpapi.WriteError(w, r, replayError(notFound(err)))
		return
	}
	httpapi.WriteJSON(w, http.StatusAccepted, httpapi.Data(rp))
}

func (h *handlers) test(w http.ResponseWriter, r *http.Request) {
	id, err := endpointID(r)
	var a Attempt
	if err == nil {
		a, err = h.d.SendTest(r.Context(), httpapi.OrgID(r.Context()), id)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Data(a))
}

func (h *handlers) rotateSecret(w http.ResponseWriter, r *http.Request) {
	id, idErr := endpointID(r)
	raw, err := readBody(r)
	grace := DefaultSecretGrace
	if err == nil && len(bytes.TrimSpace(raw)) > 0 {
		grace, err = parseGrace(raw)
	}
	if err == nil && idErr != nil {
		err = idErr
	}
	var e Endpoint
	if err == nil {
		e, err = h.s.RotateSecret(r.Context(), httpapi.OrgID(r.Context()), id, httpapi.Now(r.Context()), grace)
	}
	var inGrace *ErrSecretInGrace
	switch {
	case errors.Is(err, ErrRotated):
		err = &apperr.Error{Kind: apperr.Conflict, Message: "another request rotated this endpoint's secret at the same time, and its secret is the current one; " +
			"nothing was changed by this request. Rotate again if you need a secret of your own (the one before it then stops signing after the grace period)"}
	case errors.As(err, &inGrace):
		now := httpapi.Now(r.Context())
		err = &apperr.Error{Kind: apperr.Conflict, RetryAfter: max(1, int(inGrace.Until.Sub(now).Seconds()+0.999)),
			Message: fmt.Sprintf("the secret before the current one still signs until %s (its grace period); a rotation with a grace period now "+
				"would end that one early, so nothing was changed. Rotate again after it, or now with grace_period_seconds 0, which retires "+
				"the current secret at once and leaves the previous one signing until its time", inGrace.Until.UTC().Format(time.RFC3339))}
	}
	if err != nil {
		httpapi.WriteError(w, r, notFound(err))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": e, "secret": e.Secret})
}

func (h *handlers) delete(w http.ResponseWriter, r *http.Request) {
	id, err := endpointID(r)
	if err == nil {
		err = h.s.Delete(r.Context(), httpapi.OrgID(r.Context()), id)
	}
	if err != nil {
		httpapi.WriteError(w, r, notFound(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handlers) deliveries(w http.ResponseWriter, r *http.Request) {
	id, err := endpointID(r)
	if err == nil {
		_, err = h.s.Get(r.Context(), httpapi.OrgID(r.Context()), id)
	}
	if err != nil {
		httpapi.WriteError(w, r, notFound(err))
		return
	}
	// The delivery log is a log, newest first: no ids (its entries are
	// attempts, not records an event names).
	httpapi.ServeList(w, r, "webhook_deliveries:"+id, func(url.Values) (noFilter[Attempt], error) { return noFilter[Attempt]{}, nil },
		func(ctx context.Context, org string, req store.ListRequest[noFilter[Attempt]]) ([]Attempt, store.StartKey, error) {
			return store.QueryInto[Attempt](ctx, h.s.db, store.ListQuery{PK: DeliveriesPK(org, id), SKPrefix: attemptSK(""),
				Limit: req.PerPage, After: req.After, Desc: true, Project: true, Omit: []string{"envelope", "ttl"}})
		}, nil)
}

func (h *handlers) retry(w http.ResponseWriter, r *http.Request) {
	id, err := endpointID(r)
	var a map[string]any
	if err == nil {
		a, err = h.d.Retry(r.Context(), httpapi.OrgID(r.Context()), id, r.PathValue("delivery"))
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusAccepted, httpapi.Data(a))
}
