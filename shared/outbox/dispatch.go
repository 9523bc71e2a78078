package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
)

// Message is an event as queues carry it.
type Message struct {
	ID        string `json:"id"`
	Type      Type   `json:"event"`
	CreatedAt string `json:"timestamp"`
	OrgID     string `json:"organization_id"`
	// Sequence is the event's place in its organisation's feed (GET /events).
	Sequence int64           `json:"sequence,omitempty"`
	Data     json.RawMessage `json:"data"`
	// Attempt counts the jobs a consumer has run for this event (its retries).
	Attempt int `json:"attempt,omitempty"`
}

// Dispatcher moves pending events to the queues of their type. In AWS it
// runs on the table's stream and on a schedule (the sweep for anything the
// stream missed); in the devserver a poller runs Sweep.
type Dispatcher struct {
	DB     *store.DB
	Routes map[Type][]Sink
	// Clock is the dispatcher's time: claim leases, a sweep's minimum age,
	// the poller's interval (the wall clock when nil).
	Clock clock.Clock
	// Written, when set, holds the shards of pending events this process
	// wrote (its client watched by Written.Watch): Poll sweeps those at
	// once. Nil where a stream triggers dispatch (AWS, localcloud).
	Written *Written
	// Retention is how long a dispatched internal event is kept
	// (DefaultRetention when 0), FeedRetention one of the feed
	// (DefaultFeedRetention when 0).
	Retention, FeedRetention time.Duration
	// Concurrency bounds the events one round (a stream batch, a sweep's
	// page) sends at once (DefaultDispatchConcurrency when 0).
	Concurrency int
}

// DefaultDispatchConcurrency is how many events of one round a dispatcher
// sends at once: one organisation's events share one stream shard, so a
// batch's events must not go one after another (each is about four store
// and queue calls).
const DefaultDispatchConcurrency = 16

func (d *Dispatcher) concurrency() int {
	if d.Concurrency > 0 {
		return d.Concurrency
	}
	return DefaultDispatchConcurrency
}

// dispatchEach dispatches evs, up to the dispatcher's concurrency at once,
// into the tally, in one round (sinks may keep what they read for its
// length: RoundOf).
func (d *Dispatcher) dispatchEach(ctx context.Context, evs []Event, all *dispatchTally) {
	ctx = withRound(ctx)
	sem := make(chan struct{}, d.concurrency())
	var wg store.Calls // a panic comes back to the caller (a function's handler: reported, not a crash)
	for _, ev := range evs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			all.add(d.dispatch(ctx, ev))
		})
	}
	wg.Wait()
}

// Sink takes dispatched events: a queue, or the webhook fan-out. The
// group is the event's organisation (a queue's tenant: see queue.Queue).
type Sink interface {
	Send(ctx context.Context, group string, body []byte, delay time.Duration) error
}

var _ Sink = queue.Queue(nil)

// MaxDispatchAttempts bounds the dispatches of one event whose sends keep
// failing (about ten minutes of sweeps): then it is parked, so it stops
// failing every minute, its alarm clears, and a new failure shows.
const MaxDispatchAttempts = 10

// Sweep dispatches every pending event older than minAge, shard by shard,
// and returns how many it dispatched. An event that fails is skipped (it
// stays pending for the next sweep, or is parked once it has used up its
// attempts) and holds back no other; so does an item that cannot be read
// as an event (parked at once), and a shard whose read fails. The error is
// then a *FailedEvents.
func (d *Dispatcher) Sweep(ctx context.Context, minAge time.Duration) (int, error) {
	shards := make([]int, ShardsOf(d.DB))
	for i := range shards {
		shards[i] = i
	}
	return d.sweepShards(ctx, minAge, shards)
}

// sweepShards is Sweep over shards only.
func (d *Dispatcher) sweepShards(ctx context.Context, minAge time.Duration, shards []int) (int, error) {
	upTo := store.FormatTime(d.now().Add(-minAge)) + "~"
	var all dispatchTally
	// Eight shards at a time: a sweep is 32 Queries before it dispatches
	// anything, one after another a second on a loaded store.
	sem := make(chan struct{}, 8)
	var wg store.Calls
	for _, shard := range shards {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d.sweepShard(ctx, shard, upTo, &all)
		})
	}
	wg.Wait()
	return all.result()
}

// sweepShard dispatches one shard's pending events older than upTo.
func (d *Dispatcher) sweepShard(ctx context.Context, shard int, upTo string, all *dispatchTally) {
	q := store.ListQuery{Index: Index, PK: PendingPK(shard), SKTo: upTo, Limit: 100}
	for {
		page, err := d.DB.Query(ctx, q)
		if err != nil {
			all.add(0, fmt.Errorf("sweep shard %d: %w", shard, err))
			break
		}
		var evs []Event
		for _, it := range page.Items {
			// Keys only: the claim reads the event whole.
			var ev Event
			if err := store.Unmarshal(it, &ev); err != nil {
				all.add(d.parkItem(ctx, it, err))
				continue
			}
			evs = append(evs, ev)
		}
		d.dispatchEach(ctx, evs, all)
		if page.Next == nil {
			break
		}
		q.After = page.Next
	}
}

// DispatchAll dispatches evs (a stream batch's events) as a sweep does its
// pages, up to the dispatcher's concurrency at once: a failing event is
// skipped and counted.
func (d *Dispatcher) DispatchAll(ctx context.Context, evs []Event) (int, error) {
	var all dispatchTally
	d.dispatchEach(ctx, evs, &all)
	return all.result()
}

// DispatchCompany sends the enrichment job of a company just created (a
// company.enrich message, routed as the event type is) to its queues. The
// company's insert on the table's stream is the trigger (on AWS; the
// devserver calls this itself after the create); its company.created
// event, in the feed, goes to webhook subscribers only. A second call for
// the same company sends a second job, which finds the company done.
func (d *Dispatcher) DispatchCompany(ctx context.Context, org, id, cvr, created string) error {
	data, _ := json.Marshal(map[string]any{"company": map[string]string{"id": id, "cvr": cvr}})
	body, err := json.Marshal(Message{ID: id, OrgID: org, Type: CompanyEnrich, CreatedAt: created, Data: data})
	if err != nil {
		return err
	}
	for _, q := range d.Routes[CompanyEnrich] {
		if err := q.Send(ctx, org, body, 0); err != nil {
			return fmt.Errorf("dispatch company %s: %w", id, err)
		}
	}
	return nil
}

// outcome is what one dispatch did.
type outcome int

const (
	skipped      outcome = iota // dispatched already, or claimed by another dispatcher
	sent                        // sent to its queues
	failed                      // a send failed; it stays pending
	parked                      // out of the pending index, with a reason
	parkedType                  // parked: no route knows its type
	parkedUnread                // parked: the item is not an event
)

// dispatchTally counts a dispatch round (its events dispatched at once).
type dispatchTally struct {
	mu                                        sync.Mutex
	sent, failed, parked, unknown, unreadable int
	first                                     error
}

func (t *dispatchTally) add(o outcome, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.first = cmp.Or(t.first, err)
	}
	switch o {
	case sent:
		t.sent++
	case parkedType:
		t.parked++
		t.unknown++
	case parkedUnread:
		t.parked++
		t.unreadable++
	case parked:
		t.parked++
	default:
		if err != nil {
			t.failed++
		}
	}
}

func (t *dispatchTally) result() (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed > 0 || t.parked > 0 {
		return t.sent, &FailedEvents{Count: t.failed, Parked: t.parked, UnknownTypes: t.unknown, Unreadable: t.unreadable, First: t.first}
	}
	return t.sent, nil
}

// FailedEvents reports what a dispatch round could not send: events that
// failed (they stay pending for the next sweep) and events it parked.
type FailedEvents struct {
	Count        int // sends that failed this round
	Parked       int // events parked this round (of which:)
	UnknownTypes int // of a type no route knows
	Unreadable   int // items that could not be read as events
	First        error
}

func (e *FailedEvents) Error() string {
	return fmt.Sprintf("outbox: %d events failed and stay pending, %d parked (%d of unknown type, %d unreadable); the first: %v",
		e.Count, e.Parked, e.UnknownTypes, e.Unreadable, e.First)
}

func (e *FailedEvents) Unwrap() error { return e.First }

// ClaimLease is how long a claimed event is reserved for its dispatcher: a
// dispatcher that dies after claiming leaves it to the next sweep after this.
const ClaimLease = 2 * time.Minute

// Dispatch sends ev to its queues exactly once among concurrent
// dispatchers; sent is false when it was dispatched already, claimed by
// another dispatcher, or parked.
func (d *Dispatcher) Dispatch(ctx context.Context, ev Event) (bool, error) {
	o, err := d.dispatch(ctx, ev)
	return o == sent, err
}

// dispatch sends ev to its queues exactly once among concurrent
// dispatchers (the stream trigger and the scheduled sweep): it first claims
// the event with a conditional write (counting the attempt), sends, then
// takes it out of the pending index. A crash between sending and marking
// sends it again after the lease: consumers deduplicate on the event id. An
// event of a type no route knows, or whose sends failed
// MaxDispatchAttempts times, is parked instead.
func (d *Dispatcher) dispatch(ctx context.Context, ev Event) (outcome, error) {
	if ev.GSI6PK == "" || ev.GSI6PK == ParkedPK {
		return skipped, nil // already dispatched, or parked
	}
	key := store.Key(ev.PK, ev.SK)
	now := d.now()
	token := uuid.NewString()
	in, err := d.update(key,
		expression.Set(attrClaim, expression.Value(token)).
			Set(attrClaimUntil, expression.Value(store.FormatTime(now.Add(ClaimLease)))).
			Add(expression.Name("dispatch_attempts"), expression.Value(1)),
		claimable(store.FormatTime(now)))
	if err != nil {
		return failed, fmt.Errorf("claim %s: %w", ev.PK+" "+ev.SK, err)
	}
	in.ReturnValues = ddbtypes.ReturnValueAllNew // the whole event: the sweep index holds only its keys
	out, err := d.DB.Client.UpdateItem(ctx, in)
	if store.IsConditionFailed(err) {
		return skipped, nil // dispatched, parked, or claimed by a concurrent dispatcher
	}
	if err != nil {
		return failed, fmt.Errorf("claim %s: %w", ev.PK+" "+ev.SK, err)
	}
	if err := store.Unmarshal(out.Attributes, &ev); err != nil || ev.ID == "" {
		return d.parkItem(ctx, out.Attributes, err)
	}
	attempts := ev.DispatchAttempts
	mine := expression.Name("claim").Equal(expression.Value(token))
	sinks := d.Routes[ev.route()]
	if len(sinks) == 0 {
		return parkedType, d.park(ctx, key, token, now, fmt.Sprintf("no queue takes events of type %q; replay it after a release that knows the type", ev.Type))
	}
	body, err := json.Marshal(ev.Message())
	if err == nil {
		for _, q := range sinks {
			if err = q.Send(ctx, ev.OrgID, body, 0); err != nil {
				break
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("dispatch %s: %w", ev.ID, err)
		if attempts >= MaxDispatchAttempts {
			if perr := d.park(context.WithoutCancel(ctx), key, token, now, fmt.Sprintf("sending failed %d times; the last: %v", attempts, err)); perr != nil {
				return failed, errors.Join(err, perr)
			}
			return parked, err
		}
		// Give the claim back, so the next sweep retries at once.
		if in, berr := d.update(key, expression.Remove(attrClaim).Remove(attrClaimUntil), mine); berr == nil {
			_, _ = d.DB.Client.UpdateItem(context.WithoutCancel(ctx), in)
		}
		return failed, err
	}
	// Out of the pending index, and kept for the retention from its creation.
	created, _ := time.Parse(store.TimeLayout, ev.CreatedAt)
	in, err = d.update(key,
		expression.Set(expression.Name(store.AttrTTL), expression.Value(created.Add(d.retention(ev.Type)).Unix())).
			Remove(attrGSI6PK).Remove(expression.Name("GSI6SK")).Remove(attrClaim).Remove(attrClaimUntil),
		mine)
	if err == nil {
		_, err = d.DB.Client.UpdateItem(context.WithoutCancel(ctx), in)
	}
	if err != nil && !store.IsConditionFailed(err) {
		return sent, fmt.Errorf("mark %s dispatched: %w", ev.ID, err)
	}
	return sent, nil
}

// park moves a claimed event from the pending index to the parked one,
// with its reason.
func (d *Dispatcher) park(ctx context.Context, key map[string]ddbtypes.AttributeValue, token string, now time.Time, reason string) error {
	in, err := d.update(key,
		parkUpdate(reason, now).Remove(attrClaim).Remove(attrClaimUntil),
		expression.Name("claim").Equal(expression.Value(token)))
	if err != nil {
		return err
	}
	_, err = d.DB.Client.UpdateItem(ctx, in)
	if store.IsConditionFailed(err) {
		return nil // the claim lapsed and another dispatcher has it
	}
	return err
}

// parkItem parks a pending item that cannot be read as an event (a bug or
// a hand edit): it would fail every sweep.
func (d *Dispatcher) parkItem(ctx context.Context, item map[string]ddbtypes.AttributeValue, readErr error) (outcome, error) {
	pk, _ := item[store.AttrPK].(*ddbtypes.AttributeValueMemberS)
	sk, _ := item[store.AttrSK].(*ddbtypes.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return failed, errors.New("outbox: a pending index entry without its keys")
	}
	why := "the item cannot be read as an event"
	if readErr != nil {
		why += ": " + readErr.Error()
	}
	in, err := d.update(store.Key(pk.Value, sk.Value), parkUpdate(why, d.now()),
		expression.BeginsWith(attrGSI6PK, "OUTBOX#PENDING#"))
	if err == nil {
		_, err = d.DB.Client.UpdateItem(ctx, in)
	}
	if store.IsConditionFailed(err) {
		return skipped, nil
	}
	if err != nil {
		return failed, fmt.Errorf("park %s %s: %w", pk.Value, sk.Value, err)
	}
	return parkedUnread, fmt.Errorf("outbox: parked %s %s: %s", pk.Value, sk.Value, why)
}

// Parked lists parked events, oldest first.
func Parked(ctx context.Context, db *store.DB, limit int) ([]Event, error) {
	var out []Event
	q := store.ListQuery{Index: Index, PK: ParkedPK, Limit: min(limit, 100)}
	for len(out) < limit {
		page, err := db.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, key := range page.Items {
			// The index holds keys only: read the item whole.
			got, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(db.Table),
				Key: map[string]ddbtypes.AttributeValue{store.AttrPK: key[store.AttrPK], store.AttrSK: key[store.AttrSK]}})
			if err != nil {
				return nil, err
			}
			it := got.Item
			if it == nil {
				continue
			}
			// Read attribute by attribute: a parked item may be one that
			// does not decode as an event.
			s := func(name string) string {
				v, _ := it[name].(*ddbtypes.AttributeValueMemberS)
				if v == nil {
					return ""
				}
				return v.Value
			}
			ev := Event{Keys: store.Keys{PK: s(store.AttrPK), SK: s(store.AttrSK), GSI6PK: s("GSI6PK"), GSI6SK: s("GSI6SK")},
				ID: s("id"), OrgID: s("org_id"), Type: Type(s("type")), CreatedAt: s("created_at"), ParkedReason: s("parked_reason"), ParkedAt: s("parked_at")}
			if n, ok := it["dispatch_attempts"].(*ddbtypes.AttributeValueMemberN); ok {
				ev.DispatchAttempts, _ = strconv.Atoi(n.Value)
			}
			out = append(out, ev)
		}
		if page.Next == nil {
			break
		}
		q.After = page.Next
	}
	return out, nil
}

// Replay puts a parked event back into the pending index with its attempts
// reset; the next sweep dispatches it. It reports false when ev was not
// parked (any more).
func Replay(ctx context.Context, db *store.DB, ev Event) (bool, error) {
	id := ev.ID
	if id == "" {
		id = ev.SK // an item that is not an event: any shard takes it
	}
	in, err := updateInput(db, store.Key(ev.PK, ev.SK),
		expression.Set(attrGSI6PK, expression.Value(pendingPKOf(id, ShardsOf(db)))).
			Set(expression.Name("dispatch_attempts"), expression.Value(0)).
			Remove(expression.Name("parked_reason")).Remove(expression.Name("parked_at")).
			Remove(attrClaim).Remove(attrClaimUntil),
		attrGSI6PK.Equal(expression.Value(ParkedPK)))
	if err != nil {
		return false, err
	}
	_, err = db.Client.UpdateItem(ctx, in)
	if store.IsConditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}

// The attributes of an event's claim and of the pending index; none has a
// dot, which the expression builder would read as a nested path.
var (
	attrClaim      = expression.Name("claim")
	attrClaimUntil = expression.Name("claim_until")
	attrGSI6PK     = expression.Name("GSI6PK")
)

// claimable is the condition of a claim: the event is still pending (in
// the pending index, not parked) and nobody holds an unexpired claim on it.
func claimable(now string) expression.ConditionBuilder {
	return expression.AttributeExists(attrGSI6PK).
		And(attrGSI6PK.NotEqual(expression.Value(ParkedPK))).
		And(expression.Or(expression.AttributeNotExists(attrClaimUntil), attrClaimUntil.LessThan(expression.Value(now))))
}

// parkUpdate moves an event to the parked index, with its reason.
func parkUpdate(reason string, now time.Time) expression.UpdateBuilder {
	return expression.Set(attrGSI6PK, expression.Value(ParkedPK)).
		Set(expression.Name("parked_reason"), expression.Value(reason)).
		Set(expression.Name("parked_at"), expression.Value(store.FormatTime(now)))
}

// update is the UpdateItem of key on d's table: upd where cond holds.
func (d *Dispatcher) update(key map[string]ddbtypes.AttributeValue, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (*dynamodb.UpdateItemInput, error) {
	return updateInput(d.DB, key, upd, cond)
}

// updateInput is the UpdateItem of key on db's table: upd where cond
// holds, both built with the SDK's expression builder.
func updateInput(db *store.DB, key map[string]ddbtypes.AttributeValue, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (*dynamodb.UpdateItemInput, error) {
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("outbox: an update's expression: %w", err)
	}
	return &dynamodb.UpdateItemInput{
		TableName: aws.String(db.Table), Key: key,
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, nil
}

func (d *Dispatcher) retention(typ Type) time.Duration {
	switch {
	case InFeed(typ) && d.FeedRetention > 0:
		return d.FeedRetention
	case InFeed(typ):
		return DefaultFeedRetention
	case d.Retention > 0:
		return d.Retention
	}
	return DefaultRetention
}

// route is the type ev is routed by: its own, except for a company.created
// keyed by id (EVI#), an operator's enrichment resume written by a release
// before company.created was an event of the feed, which starts the
// company's enrichment as it did then.
func (ev *Event) route() Type {
	if ev.Type == CompanyCreated && ev.Seq == 0 && strings.HasPrefix(ev.SK, "EVI#") {
		return CompanyEnrich
	}
	return ev.Type
}

// Message is the event as queues, deliveries and the feed carry it.
func (ev *Event) Message() Message {
	return Message{ID: ev.ID, OrgID: ev.OrgID, Type: ev.Type, CreatedAt: ev.CreatedAt, Sequence: ev.Seq, Data: json.RawMessage(ev.Data)}
}

func (d *Dispatcher) clock() clock.Clock { return clock.Or(d.Clock) }

func (d *Dispatcher) now() time.Time { return d.clock().Now() }

// Now is the time on the dispatcher's clock.
func (d *Dispatcher) Now() time.Time { return d.now() }

// IdlePolls bounds Poll's backoff: after sweeps that found nothing, the
// next comes up to IdlePolls intervals later.
const IdlePolls = 8

// Poll is the devserver's stand-in for the stream trigger, until ctx ends.
// It sweeps every shard at once, then on a timer (for events written
// elsewhere, say by the admin tool, and events whose dispatch failed):
// the timer starts at interval and doubles after each such sweep that
// dispatched nothing, up to IdlePolls intervals, and comes back to
// interval after one that dispatched an event. A sweep of every shard is
// a Query per shard (32), so an idle devserver sweeping every second kept
// DynamoDB Local busy: 2.8 s of its CPU a minute, for no event.
//
// Events this process writes are dispatched at once: with d.Written (its
// client's writes watched), each write of a pending event wakes a sweep
// of the shards written since the last; kick (a write request served)
// does the same. Without d.Written, kick sweeps every shard and brings the
// timer back to interval.
func (d *Dispatcher) Poll(ctx context.Context, kick <-chan struct{}, interval time.Duration, onError func(error)) {
	var wake <-chan struct{}
	if d.Written != nil {
		wake = d.Written.Wake()
	}
	sweep := func(shards []int) int {
		n, err := d.pollOnce(ctx, shards)
		if err != nil && !errors.Is(err, context.Canceled) {
			onError(err)
		}
		return n
	}
	// written sweeps the shards written since the last (none: no sweep;
	// pollOnce reads a nil list as every shard).
	written := func() {
		if shards := d.Written.Take(); len(shards) > 0 {
			sweep(shards)
		}
	}
	wait := interval
	sweep(nil)
	t, fired := d.clock().NewTimer(wait)
	for {
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-kick:
			if d.Written != nil {
				written()
				continue
			}
			t.Stop()
			sweep(nil)
			wait = interval
			t, fired = d.clock().NewTimer(wait)
		case <-wake:
			written()
		case <-fired:
			if d.Written != nil {
				d.Written.Take() // this sweep reads them too
			}
			if sweep(nil) > 0 {
				wait = interval
			} else {
				wait = min(2*wait, IdlePolls*interval)
			}
			t, fired = d.clock().NewTimer(wait)
		}
	}
}

// pollOnce is one sweep of Poll's, of shards (every shard when nil). A
// panic in it (a sink's, carried back by store.Calls) is its error, with
// the stack, and the next sweep comes as usual: in the poller's goroutine
// it would end the process (the devserver) with the Go runtime's report,
// which no logger redacts.
func (d *Dispatcher) pollOnce(ctx context.Context, shards []int) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			stack := debug.Stack()
			if carried, ok := p.(*store.Panic); ok {
				stack = carried.Stack
			}
			err = fmt.Errorf("sweep panicked: %v\n%s", p, stack)
		}
	}()
	if shards == nil {
		return d.Sweep(ctx, 0)
	}
	return d.sweepShards(ctx, 0, shards)
}

// Round is what a sink may keep for the length of one dispatch round (a
// stream batch, a sweep's page): what it reads once for many events of
// the round, such as an organisation's webhook endpoints. A round's
// events were all committed before it began, so what it read at its start
// is what each event would have read.
type Round struct {
	mu   sync.Mutex
	memo map[string]*roundEntry
}

type roundEntry struct {
	once sync.Once
	v    any
	err  error
}

type roundKey struct{}

func withRound(ctx context.Context) context.Context {
	return context.WithValue(ctx, roundKey{}, &Round{memo: map[string]*roundEntry{}})
}

// RoundOf is ctx's dispatch round; nil outside one.
func RoundOf(ctx context.Context) *Round {
	r, _ := ctx.Value(roundKey{}).(*Round)
	return r
}

// Once returns what f returns for key in this round, calling it once
// (callers at the same time wait for the first). A nil Round calls f.
func (r *Round) Once(key string, f func() (any, error)) (any, error) {
	if r == nil {
		return f()
	}
	r.mu.Lock()
	e := r.memo[key]
	if e == nil {
		e = &roundEntry{}
		r.memo[key] = e
	}
	r.mu.Unlock()
	e.once.Do(func() { e.v, e.err = f() })
	if e.err != nil {
		r.mu.Lock()
		if r.memo[key] == e {
			delete(r.memo, key) // a failed read is not kept: the next event reads again
		}
		r.mu.Unlock()
	}
	return e.v, e.err
}
