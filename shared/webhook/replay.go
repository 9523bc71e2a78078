package webhook

import (
	"cmp"
	"context"
	"encoding/json"
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

	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// A replay queues the feed's events of a window to one endpoint again, as
// new deliveries of the same events (same ids and envelopes; the delivery
// log marks them with the replay's id). Each replayed event is a series of
// its own, on the same schedule as any delivery, apart from the event's
// earlier series: it is sent even if the event was delivered before.
//
// One replay per endpoint runs at a time: a lock item in the endpoint's
// deliveries partition (REPLAY) names the replay, how many events it
// queued and how many have had their first attempt; it is free when all
// have, or when its lease has run out (a worker that never reported).

// ReplayMax bounds the events one replay queues; a longer window answers
// truncated, with next_since for the next call.
const ReplayMax = 1000

// ReplayLease bounds how long a replay holds its endpoint: its events'
// first attempts take far less (ten at a time per worker); a replay whose
// jobs were lost stops blocking the next one after it.
const ReplayLease = 15 * time.Minute

// replayQueueTime bounds the queueing itself (the lock's first lease).
const replayQueueTime = time.Minute

const replaySK = "REPLAY"

// Replay is a replay as the API answers it.
type Replay struct {
	ID         string        `json:"id"`
	EndpointID string        `json:"endpoint_id"`
	Since      string        `json:"since"`
	Until      string        `json:"until"`
	EventTypes []outbox.Type `json:"event_types"`
	// Queued counts the events queued (each a new delivery).
	Queued int `json:"queued"`
	// Truncated: the window held more than ReplayMax events; NextSince is
	// the since that replays the rest.
	Truncated bool    `json:"truncated"`
	NextSince *string `json:"next_since"`
}

// ErrReplayBusy is a replay refused because another holds the endpoint.
type ErrReplayBusy struct {
	ID           string
	Queued, Done int
	RetryAfter   int // seconds
}

func (e *ErrReplayBusy) Error() string {
	return "webhook: a replay to this endpoint is in progress: " + e.ID
}

// errEndpointOff: the endpoint is disabled.
var errEndpointOff = errors.New("webhook: the endpoint is disabled")

// replayLock is a held replay lock.
type replayLock struct{ org, endpoint, id string }

// lockReplay takes the endpoint's replay lock for a new replay.
func (s *Store) lockReplay(ctx context.Context, org, endpoint string, now time.Time) (*replayLock, error) {
	l := &replayLock{org: org, endpoint: endpoint, id: uuid.NewString()}
	num := func(v int64) ddbtypes.AttributeValue {
		return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	_, err := s.db.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.db.Table),
		Item: map[string]ddbtypes.AttributeValue{
			store.AttrPK: &ddbtypes.AttributeValueMemberS{Value: DeliveriesPK(org, endpoint)}, store.AttrSK: &ddbtypes.AttributeValueMemberS{Value: replaySK},
			"kind": &ddbtypes.AttributeValueMemberS{Value: "webhook_replay"}, "replay_id": &ddbtypes.AttributeValueMemberS{Value: l.id},
			"done": num(0), "lease_until": num(now.Add(replayQueueTime).Unix()), store.AttrTTL: num(now.Add(ReplayLease + 24*time.Hour).Unix()),
		},
		ConditionExpression:                 aws.String("attribute_not_exists(PK) OR lease_until < :now OR (attribute_exists(queued) AND done >= queued)"),
		ExpressionAttributeValues:           map[string]ddbtypes.AttributeValue{":now": num(now.Unix())},
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		var held struct {
			ID         string `dynamodbav:"replay_id"`
			Queued     *int   `dynamodbav:"queued"`
			Done       int    `dynamodbav:"done"`
			LeaseUntil int64  `dynamodbav:"lease_until"`
		}
		_ = store.Unmarshal(ccf.Item, &held)
		busy := &ErrReplayBusy{ID: held.ID, Done: held.Done, RetryAfter: int(min(max(held.LeaseUntil-now.Unix(), 1), 60))}
		if held.Queued != nil {
			busy.Queued = *held.Queued
		}
		return nil, busy
	}
	if err != nil {
		return nil, fmt.Errorf("replay lock: %w", err)
	}
	return l, nil
}

// settle records how many events the replay queued; a replay of none
// frees the endpoint at once.
func (s *Store) settleReplay(ctx context.Context, l *replayLock, queued int, now time.Time) error {
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.db.Table), Key: store.Key(DeliveriesPK(l.org, l.endpoint), replaySK),
		UpdateExpression:    aws.String("SET queued = :n, lease_until = :lease"),
		ConditionExpression: aws.String("replay_id = :me"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":n": &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(queued)}, ":me": &ddbtypes.AttributeValueMemberS{Value: l.id},
			":lease": &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(ReplayLease).Unix(), 10)},
		},
	}
	if queued == 0 {
		in.ExpressionAttributeValues[":lease"] = &ddbtypes.AttributeValueMemberN{Value: "0"}
	}
	_, err := s.db.Client.UpdateItem(ctx, in)
	if store.IsConditionFailed(err) {
		return nil // its lease ran out and another replay took the endpoint
	}
	return err
}

// release frees the lock of a replay that queued nothing (it did not start).
func (s *Store) releaseReplay(ctx context.Context, l *replayLock) {
	_, _ = s.db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.db.Table), Key: store.Key(DeliveriesPK(l.org, l.endpoint), replaySK),
		ConditionExpression:       aws.String("replay_id = :me"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":me": &ddbtypes.AttributeValueMemberS{Value: l.id}},
	})
}

// replayStep counts one replayed event's first attempt (made, or dropped
// because the endpoint was turned off or unsubscribed).
func (s *Store) replayStep(ctx context.Context, org, endpoint, replay string) error {
	_, err := s.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.db.Table), Key: store.Key(DeliveriesPK(org, endpoint), replaySK),
		UpdateExpression:    aws.String("ADD done :one"),
		ConditionExpression: aws.String("replay_id = :me"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":one": &ddbtypes.AttributeValueMemberN{Value: "1"}, ":me": &ddbtypes.AttributeValueMemberS{Value: replay},
		},
	})
	if store.IsConditionFailed(err) {
		return nil // another replay holds the endpoint now
	}
	return err
}

// Replay queues the feed's events of req's window to an active endpoint.
// What can never succeed is said first (404, a disabled endpoint's 409,
// 422 for types it does not take), then whether another replay holds it.
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
	l, err := d.Store.lockReplay(ctx, org, endpointID, now)
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
	return httpapi.Invalid("event_types", "the endpoint is not subscribed to %s, so its deliveries would be dropped; "+
		"replay the types it takes (%s), or PATCH its event_types first", strings.Join(not, ", "), strings.Join(outbox.Names(e.EventTypes), ", "))
}

// queueReplay reads the window from the feed and queues its events to e,
// under l; it settles the lock with the count (releases it on failure).
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
	var jobs [][]byte
	after := req.Since.UnixMicro() - 1
	limit := cmp.Or(d.ReplayLimit, ReplayMax)
	for len(jobs) < limit {
		page, err := outbox.Feed(ctx, d.Store.db, outbox.FeedQuery{Org: l.org, After: after, Types: types, Limit: min(httpapi.MaxPerPage, limit-len(jobs)),
			Now: now, Retention: outbox.FeedKeep(d.Store.FeedRetention), Until: until.Add(-time.Microsecond)})
		if err != nil {
			d.Store.releaseReplay(context.WithoutCancel(ctx), l)
			return Replay{}, err
		}
		for _, ev := range page.Events {
			j := jobOf(ev, e.ID)
			j.Replay = l.id
			job, _ := json.Marshal(j)
			jobs = append(jobs, job)
			after = ev.Sequence
		}
		if !page.More {
			break
		}
		after = page.Next // past the last event, or past what a filtered page read
	}
	if len(jobs) == limit {
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
	if err := d.Queue.SendBatch(ctx, l.org, jobs); err != nil {
		d.Store.releaseReplay(context.WithoutCancel(ctx), l)
		return Replay{}, err
	}
	r.Queued = len(jobs)
	return r, d.Store.settleReplay(context.WithoutCancel(ctx), l, r.Queued, now)
}
