package webhook

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
)

// A replay queues the feed's events of a window to one endpoint again, as
// new deliveries of the same events (same ids and envelopes; the delivery
// log marks them with the replay's id). Each replayed event is a series of
// its own, on the same schedule as any delivery, apart from the event's
// earlier series: it is sent even if the event was delivered before.
//
// Replays are bounded three ways, so that no organisation can turn one
// call into thousands of POSTs at will (#40):
//
//   - One replay per organisation and URL at a time: a lock item
//     (REPLAY, in the partition of the organisation's URL, whatever
//     endpoint names it) holds the replay's id, how many events it
//     queued and its lease. It is free when every one of those events
//     has had its first attempt recorded (each first attempt's entry in
//     the delivery log is in the sweep index under DLV#REPLAYED#<replay>,
//     written in the record's own transaction, and a job that ends
//     without an attempt, its endpoint off or gone, writes a marker
//     there; the lock counts them with a Query, so its progress is what
//     the deliveries recorded, whatever worker died where), or when its
//     lease has run out.
//   - A budget per organisation: at most WEBHOOK_REPLAYS_PER_HOUR
//     (DefaultReplaysPerHour) events replayed in a clock hour (UTC),
//     counted in an item per hour; a replay that finds it spent answers
//     429 with Retry-After (the next hour) and the code
//     replay_budget_exhausted, one that finds part of it queues that part
//     (truncated, with next_since).
//   - A lane of its own: replayed jobs are the delivery queue's tenant
//     <org>#replay (a fair queue's group), so a replay delays neither
//     other organisations nor its own organisation's live events, and
//     they take one of their endpoint's delivery slots only while fewer
//     than half are in use and no live delivery waits.

// ReplayMax bounds the events one replay queues; a longer window answers
// truncated, with next_since for the next call.
const ReplayMax = 1000

// ReplayLease bounds how long a replay holds its URL: its events' first
// attempts normally take far less, and the lock is free as soon as they
// are all recorded; a replay whose jobs were lost (sent to the
// dead-letter queue) stops blocking the next one after it.
const ReplayLease = time.Hour

// replayQueueTime bounds the queueing itself (the lock's first lease).
const replayQueueTime = time.Minute

const replaySK = "REPLAY"

// replayedPrefix starts the sweep index partition of a replay's first
// attempts (its progress).
const replayedPrefix = "DLV#REPLAYED#"

// ReplayGroup is the delivery queue's group of an organisation's replayed
// jobs: a tenant of its own.
func ReplayGroup(org string) string { return org + "#replay" }

// Replay is a replay as the API answers it.
type Replay struct {
	ID         string        `json:"id"`
	EndpointID string        `json:"endpoint_id"`
	Since      string        `json:"since"`
	Until      string        `json:"until"`
	EventTypes []outbox.Type `json:"event_types"`
	// Queued counts the events queued (each a new delivery).
	Queued int `json:"queued"`
	// Truncated: not every event of the window was queued (more than
	// ReplayMax, the hour's budget, or a queue that refused some);
	// NextSince is the since that replays the rest.
	Truncated bool    `json:"truncated"`
	NextSince *string `json:"next_since"`
}

// ErrReplayBusy is a replay refused because another holds the URL; Queued
// is -1 while the other is being queued (or its count was lost).
type ErrReplayBusy struct {
	ID           string
	Queued, Done int
	RetryAfter   int // seconds
}

func (e *ErrReplayBusy) Error() string {
	return "webhook: a replay to this URL is in progress: " + e.ID
}

// ErrReplayBudget is a replay refused because the organisation has
// replayed its hour's events.
type ErrReplayBudget struct {
	Limit      int
	RetryAfter int // seconds to the next hour
}

func (e *ErrReplayBudget) Error() string {
	return fmt.Sprintf("webhook: the organisation has replayed its %d events of this hour", e.Limit)
}

// errEndpointOff: the endpoint is disabled.
var errEndpointOff = errors.New("webhook: the endpoint is disabled")

// replayLock is a held replay lock.
type replayLock struct{ org, url, endpoint, id string }

// urlKey is the partition of an organisation's replays to one URL.
func urlKey(org, url string) string {
	sum := sha256.Sum256([]byte(url))
	return store.Collection(org, "WHURL", hex.EncodeToString(sum[:16]))
}

func (l *replayLock) key() map[string]ddbtypes.AttributeValue {
	return store.Key(urlKey(l.org, l.url), replaySK)
}

// lockReplay takes the replay lock of the organisation's URL for a new
// replay to endpoint: free when no replay holds it, when the one that does
// has had every first attempt recorded, or when its lease ran out.
func (s *Store) lockReplay(ctx context.Context, org, url, endpoint string, now time.Time) (*replayLock, error) {
	l := &replayLock{org: org, url: url, endpoint: endpoint, id: uuid.NewString()}
	num := func(v int64) ddbtypes.AttributeValue {
		return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	item := map[string]ddbtypes.AttributeValue{
		store.AttrPK: &ddbtypes.AttributeValueMemberS{Value: urlKey(org, url)}, store.AttrSK: &ddbtypes.AttributeValueMemberS{Value: replaySK},
		"kind": &ddbtypes.AttributeValueMemberS{Value: "webhook_replay"}, "replay_id": &ddbtypes.AttributeValueMemberS{Value: l.id},
		"endpoint_id": &ddbtypes.AttributeValueMemberS{Value: endpoint},
		"lease_until": num(now.Add(replayQueueTime).Unix()), store.AttrTTL: num(now.Add(ReplayLease + 24*time.Hour).Unix()),
	}
	// Free: no replay holds it, or the lease of the one that does ran out.
	cond := expression.Or(expression.AttributeNotExists(expression.Name(store.AttrPK)),
		expression.Name("lease_until").LessThan(expression.Value(now.Unix())))
	for try := 0; ; try++ {
		e, err := conditionOf(cond)
		if err != nil {
			return nil, err
		}
		_, err = s.db.Client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.db.Table), Item: item, ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *ddbtypes.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			if err != nil {
				return nil, fmt.Errorf("replay lock: %w", err)
			}
			return l, nil
		}
		var held struct {
			ID         string `dynamodbav:"replay_id"`
			Queued     *int   `dynamodbav:"queued"`
			LeaseUntil int64  `dynamodbav:"lease_until"`
		}
		_ = store.Unmarshal(ccf.Item, &held)
		busy := &ErrReplayBusy{ID: held.ID, Queued: -1, RetryAfter: int(min(max(held.LeaseUntil-now.Unix(), 1), 60))}
		if held.ID != "" {
			done, err := s.replayProgress(ctx, held.ID)
			if err != nil {
				return nil, err
			}
			busy.Done = done
		}
		if held.Queued == nil || try > 0 {
			return nil, busy // still queueing (or another replay took it meanwhile)
		}
		busy.Queued = *held.Queued
		if busy.Done < busy.Queued {
			return nil, busy
		}
		// Every event of the replay that holds it has had its first
		// attempt: it is free; take it from that replay (by condition, so
		// of two replays at once one does).
		cond = expression.Name("replay_id").Equal(expression.Value(held.ID))
	}
}

// replayProgress counts the events of a replay whose first attempt is
// recorded (or that ended without one): the entries under its partition
// of the sweep index.
func (s *Store) replayProgress(ctx context.Context, replay string) (int, error) {
	spk, _ := store.GSIKeyAttrs(outbox.Index)
	e, err := expression.NewBuilder().WithKeyCondition(expression.Key(spk).Equal(expression.Value(replayedPrefix + replay))).Build()
	if err != nil {
		return 0, fmt.Errorf("replay progress: %w", err)
	}
	p := dynamodb.NewQueryPaginator(s.db.Client, &dynamodb.QueryInput{
		TableName: aws.String(s.db.Table), IndexName: aws.String(string(outbox.Index)), Select: ddbtypes.SelectCount,
		KeyConditionExpression:   e.KeyCondition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	n := 0
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("replay progress: %w", err)
		}
		n += int(page.Count)
	}
	return n, nil
}

// settle records how many events the replay queued; a replay of none
// frees the URL at once.
func (s *Store) settleReplay(ctx context.Context, l *replayLock, queued int, now time.Time) error {
	lease := now.Add(ReplayLease).Unix()
	if queued == 0 {
		lease = 0
	}
	in, err := updateInput(s.db, l.key(),
		expression.Set(expression.Name("queued"), expression.Value(queued)).Set(expression.Name("lease_until"), expression.Value(lease)),
		l.mine())
	if err != nil {
		return err
	}
	_, err = s.db.Client.UpdateItem(ctx, in)
	if store.IsConditionFailed(err) {
		return nil // its lease ran out and another replay took the URL
	}
	return err
}

// releaseReplay frees the lock of a replay that queued nothing (it did not
// start).
func (s *Store) releaseReplay(ctx context.Context, l *replayLock) {
	e, err := conditionOf(l.mine())
	if err != nil {
		return
	}
	_, _ = s.db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.db.Table), Key: l.key(),
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
}

// mine is the condition that l still holds its URL's replay lock.
func (l *replayLock) mine() expression.ConditionBuilder {
	return expression.Name("replay_id").Equal(expression.Value(l.id))
}

// replayedKeys are the sweep index keys that count one event's first
// attempt towards its replay's progress.
func replayedKeys(replay, event string) (pk, sk string) { return replayedPrefix + replay, event }

// replayEnded counts a replayed event whose job ended without an attempt
// (its endpoint off, gone or unsubscribed, its event gone) towards its
// replay's progress: a marker in the endpoint's deliveries partition, put
// once (a second job of the same event finds it there).
func (s *Store) replayEnded(ctx context.Context, job Job, now time.Time) error {
	spk, ssk := store.GSIKeyAttrs(outbox.Index)
	pk, sk := replayedKeys(job.Replay, job.EventID)
	err := s.db.PutNew(ctx, map[string]ddbtypes.AttributeValue{
		store.AttrPK: &ddbtypes.AttributeValueMemberS{Value: DeliveriesPK(job.OrgID, job.EndpointID)},
		store.AttrSK: &ddbtypes.AttributeValueMemberS{Value: "RPLEND#" + job.Replay + "#" + job.EventID},
		"kind":       &ddbtypes.AttributeValueMemberS{Value: "webhook_replay_end"}, spk: &ddbtypes.AttributeValueMemberS{Value: pk},
		ssk: &ddbtypes.AttributeValueMemberS{Value: sk}, store.AttrTTL: &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(ReplayLease+24*time.Hour).Unix(), 10)},
	})
	if errors.Is(err, store.ErrConflict) {
		return nil // put once: a second job of the same event finds it there
	}
	return err
}

// replayHour is the key of the organisation's replay budget of now's hour.
func replayHour(org string, now time.Time) map[string]ddbtypes.AttributeValue {
	return store.Key(store.OrgPK(org), "COUNTER#REPLAYS#"+now.UTC().Format("2006010215"))
}

func (d *Deliverer) replaysPerHour() int {
	if d.ReplaysPerHour > 0 {
		return d.ReplaysPerHour
	}
	return DefaultReplaysPerHour
}

// untilNextHour is the seconds to the next clock hour (a spent budget's
// Retry-After).
func untilNextHour(now time.Time) int {
	return int(now.UTC().Truncate(time.Hour).Add(time.Hour).Sub(now).Seconds()) + 1
}

// replayBudgetLeft is how many events the organisation may still replay
// this hour (a read, before anything is held or changed).
func (d *Deliverer) replayBudgetLeft(ctx context.Context, org string, now time.Time) (int, error) {
	out, err := d.Store.db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.Store.db.Table), Key: replayHour(org, now), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, fmt.Errorf("replay budget: %w", err)
	}
	used := 0
	if v, ok := out.Item["value"].(*ddbtypes.AttributeValueMemberN); ok {
		used, _ = strconv.Atoi(v.Value)
	}
	left := d.replaysPerHour() - used
	if left <= 0 {
		return 0, &ErrReplayBudget{Limit: d.replaysPerHour(), RetryAfter: untilNextHour(now)}
	}
	return left, nil
}

// spendReplayBudget takes up to want events of the hour's budget, as many
// as are left, by condition (replays at once never spend more than it), and
// returns how many it took; *ErrReplayBudget when none are left.
func (d *Deliverer) spendReplayBudget(ctx context.Context, org string, want int, now time.Time) (int, error) {
	limit := d.replaysPerHour()
	for try := 0; try < 5 && want > 0; try++ {
		used := expression.Name("value")
		in, err := updateInput(d.Store.db, replayHour(org, now),
			expression.Add(used, expression.Value(want)).
				Set(expression.Name("kind"), expression.Value("counter")).
				Set(expression.Name(store.AttrTTL), expression.Value(now.Add(2*time.Hour).Unix())),
			expression.Or(expression.AttributeNotExists(used), used.LessThanEqual(expression.Value(limit-want))))
		if err != nil {
			return 0, fmt.Errorf("replay budget: %w", err)
		}
		in.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
		_, err = d.Store.db.Client.UpdateItem(ctx, in)
		var ccf *ddbtypes.ConditionalCheckFailedException
		switch {
		case err == nil:
			return want, nil
		case errors.As(err, &ccf):
			used := 0
			if v, ok := ccf.Item["value"].(*ddbtypes.AttributeValueMemberN); ok {
				used, _ = strconv.Atoi(v.Value)
			}
			want = min(want, limit-used) // what is left: try to take that
		default:
			return 0, fmt.Errorf("replay budget: %w", err)
		}
	}
	return 0, &ErrReplayBudget{Limit: limit, RetryAfter: untilNextHour(now)}
}

// refundReplayBudget gives back events a replay took from the hour's
// budget and did not queue (the queue refused them).
func (d *Deliverer) refundReplayBudget(ctx context.Context, org string, n int, now time.Time) {
	if n <= 0 {
		return
	}
	used := expression.Name("value")
	in, err := updateInput(d.Store.db, replayHour(org, now), expression.Add(used, expression.Value(-n)), expression.AttributeExists(used))
	if err != nil {
		return
	}
	_, _ = d.Store.db.Client.UpdateItem(ctx, in)
}

// Replay queues the feed's events of req's window to an active endpoint.
// What can never succeed is said first (404, a disabled endpoint's 409,
// 422 for types it does not take), then whether the hour's budget is
// spent (429), then whether another replay holds the URL (409).
func (d *Deliverer) Replay(ctx context.Context, org, endpointID string, req ReplayRequest, now time.Time) (Replay, error) {
	e, err := d.Store.Get(ctx, org, endpointID)
	if err != nil {
		return Replay{}, err
	}
	if !e.IsActive {
		return Replay{}, errEndpointOff
	}
	if err := unsubscribed(&e, req.Types); err != nil {
		return Replay{}, err
	}
	if _, err := d.replayBudgetLeft(ctx, org, now); err != nil {
		return Replay{}, err
	}
	l, err := d.Store.lockReplay(ctx, org, e.URL, e.ID, now)
	if err != nil {
		return Replay{}, err
	}
	return d.queueReplay(ctx, l, &e, req, now)
}

// unsubscribed refuses types the endpoint does not take.
func unsubscribed(e *Endpoint, types []outbox.Type) error {
	var not []string
	for _, t := range types {
		if !slices.Contains(e.EventTypes, t) {
			not = append(not, string(t))
		}
	}
	if len(not) == 0 {
		return nil
	}
	return apperr.Invalidf("event_types", "the endpoint is not subscribed to %s, so its deliveries would be dropped; "+
		"replay the types it takes (%s), or PATCH its event_types first", strings.Join(not, ", "), strings.Join(outbox.Names(e.EventTypes), ", "))
}

// queueReplay reads the window from the feed and queues its events to e,
// under l, within the hour's budget; it settles the lock with the count
// (releases it when nothing was queued). Once any event is queued the
// replay is accepted, whatever fails after: the answer says what was
// queued (truncated, with next_since, if the queue refused the rest).
func (d *Deliverer) queueReplay(ctx context.Context, l *replayLock, e *Endpoint, req ReplayRequest, now time.Time) (Replay, error) {
	types := req.Types
	if len(types) == 0 {
		types = e.EventTypes
	}
	if err := unsubscribed(e, types); err != nil { // changed since it was read
		d.Store.releaseReplay(context.WithoutCancel(ctx), l)
		return Replay{}, err
	}
	until := req.Until
	if until.IsZero() || until.After(now) {
		until = now
	}
	r := Replay{ID: l.id, EndpointID: e.ID, Since: store.FormatTime(req.Since), Until: store.FormatTime(until), EventTypes: types}
	var events []outbox.Message
	after := req.Since.UnixMicro() - 1
	limit := cmp.Or(d.ReplayLimit, ReplayMax)
	for len(events) < limit {
		page, err := outbox.Feed(ctx, d.Store.db, outbox.FeedQuery{Org: l.org, After: after, Types: types, Limit: min(httpapi.MaxPerPage, limit-len(events)),
			Now: now, Retention: outbox.FeedKeep(d.Store.FeedRetention), Until: until.Add(-time.Microsecond)})
		if err != nil {
			d.Store.releaseReplay(context.WithoutCancel(ctx), l)
			return Replay{}, err
		}
		for _, ev := range page.Events {
			events = append(events, ev)
			after = ev.Sequence
		}
		if !page.More {
			break
		}
		after = page.Next // past the last event, or past what a filtered page read
	}
	if len(events) == limit {
		// More is there when the feed holds another matching event after
		// the last one queued.
		page, err := outbox.Feed(ctx, d.Store.db, outbox.FeedQuery{Org: l.org, After: after, Types: types, Limit: 1,
			Now: now, Retention: outbox.FeedKeep(d.Store.FeedRetention), Until: until.Add(-time.Microsecond)})
		if err != nil {
			d.Store.releaseReplay(context.WithoutCancel(ctx), l)
			return Replay{}, err
		}
		if len(page.Events) > 0 || page.More {
			next := store.FormatTime(time.UnixMicro(after + 1))
			r.Truncated, r.NextSince = true, &next
		}
	}
	if len(events) == 0 {
		return r, d.Store.settleReplay(context.WithoutCancel(ctx), l, 0, now)
	}
	took, err := d.spendReplayBudget(ctx, l.org, len(events), now)
	if err != nil {
		d.Store.releaseReplay(context.WithoutCancel(ctx), l)
		return Replay{}, err
	}
	if took < len(events) {
		r.Truncated, r.NextSince = true, ptr(store.FormatTime(time.UnixMicro(events[took].Sequence)))
		events = events[:took]
	}
	// Paced: each job due about when the endpoint's replay slots can take
	// it (past the queue's longest delay, it hops until then).
	pace := d.replayPace(ctx, l.org, e.ID)
	jobs := make([][]byte, len(events))
	delays := make([]time.Duration, len(events))
	for i, ev := range events {
		j := jobOf(ev, e.ID)
		j.Replay = l.id
		due := time.Duration(i/d.slots(true)*d.slots(true)) * pace
		if due > queue.MaxDelay {
			j.NotBefore = now.Add(due).Unix()
		}
		delays[i] = min(due, queue.MaxDelay)
		jobs[i], _ = json.Marshal(j)
	}
	sent := len(jobs)
	if err := d.Queue.SendBatch(ctx, ReplayGroup(l.org), jobs, delays...); err != nil {
		var be *queue.BatchError
		if !errors.As(err, &be) || len(be.Unsent) == len(jobs) {
			d.refundReplayBudget(context.WithoutCancel(ctx), l.org, len(jobs), now)
			d.Store.releaseReplay(context.WithoutCancel(ctx), l)
			return Replay{}, err
		}
		// Some went: the replay is accepted with those. The rest is
		// replayed from the first event not sent (receivers deduplicate
		// what comes twice).
		sent -= len(be.Unsent)
		r.Truncated, r.NextSince = true, ptr(store.FormatTime(time.UnixMicro(events[be.Unsent[0]].Sequence)))
		d.refundReplayBudget(context.WithoutCancel(ctx), l.org, len(be.Unsent), now)
		d.log().WarnContext(ctx, "webhook replay: the queue refused some of its events; they were not queued", "replay_id", l.id,
			"queued", sent, "refused", len(be.Unsent), "err", err)
	}
	r.Queued = sent
	if err := d.Store.settleReplay(context.WithoutCancel(ctx), l, sent, now); err != nil {
		// Queued is queued: the answer says so. The lock's first lease
		// (a minute) frees the URL.
		d.log().WarnContext(ctx, "webhook replay: its count was not recorded; the URL is free again after a minute", "replay_id", l.id, "err", err)
	}
	return r, nil
}

func ptr[T any](v T) *T { return &v }
