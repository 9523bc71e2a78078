package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
)

// Message is an event as queues carry it.
type Message struct {
	ID        string          `json:"id"`
	OrgID     string          `json:"organization_id"`
	Type      string          `json:"event"`
	CreatedAt string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
	// Attempt counts the jobs a consumer has run for this event (its retries).
	Attempt int `json:"attempt,omitempty"`
}

// Dispatcher moves pending events to the queues of their type. In AWS it
// runs on the table's stream and on a schedule (the sweep for anything the
// stream missed); in the devserver a poller runs Sweep.
type Dispatcher struct {
	DB     *store.DB
	Routes map[string][]Sink
	Now    func() time.Time
}

// Sink takes dispatched events: a queue, or the webhook fan-out.
type Sink interface {
	Send(ctx context.Context, body []byte, delay time.Duration) error
}

var _ Sink = queue.Queue(nil)

// Sweep dispatches every pending event older than minAge, shard by shard,
// and returns how many it dispatched. An event that fails is skipped (it
// stays pending for the next sweep) and does not hold back the others; the
// error is then a *FailedEvents.
func (d *Dispatcher) Sweep(ctx context.Context, minAge time.Duration) (int, error) {
	upTo := store.FormatTime(d.now().Add(-minAge)) + "~"
	var all dispatchTally
	for shard := range Shards {
		q := store.ListQuery{Index: "GSI6", PK: PendingPK(shard), SKTo: upTo, Limit: 100}
		for {
			evs, next, err := store.QueryInto[Event](ctx, d.DB, q)
			if err != nil {
				return all.sent, err
			}
			for _, ev := range evs {
				all.add(d.Dispatch(ctx, ev))
			}
			if next == nil {
				break
			}
			q.After = next
		}
	}
	return all.result()
}

// DispatchAll dispatches evs (a stream batch's events) as a sweep does its
// pages: a failing event is skipped and counted.
func (d *Dispatcher) DispatchAll(ctx context.Context, evs []Event) (int, error) {
	var all dispatchTally
	for _, ev := range evs {
		all.add(d.Dispatch(ctx, ev))
	}
	return all.result()
}

// dispatchTally counts a dispatch round's sends and failures.
type dispatchTally struct {
	sent, failed int
	first        error
}

func (t *dispatchTally) add(sent bool, err error) {
	switch {
	case err != nil:
		t.failed++
		t.first = cmp.Or(t.first, err)
	case sent:
		t.sent++
	}
}

func (t *dispatchTally) result() (int, error) {
	if t.failed > 0 {
		return t.sent, &FailedEvents{Count: t.failed, First: t.first}
	}
	return t.sent, nil
}

// FailedEvents reports the events a dispatch round could not send; they
// stay pending for the next sweep.
type FailedEvents struct {
	Count int
	First error
}

func (e *FailedEvents) Error() string {
	return fmt.Sprintf("outbox: %d events failed and stay pending; the first: %v", e.Count, e.First)
}

func (e *FailedEvents) Unwrap() error { return e.First }

// ClaimLease is how long a claimed event is reserved for its dispatcher: a
// dispatcher that dies after claiming leaves it to the next sweep after this.
const ClaimLease = 2 * time.Minute

// Dispatch sends ev to its queues exactly once among concurrent
// dispatchers (the stream trigger and the scheduled sweep): it first claims
// the event with a conditional write, sends, then takes it out of the
// pending index. A crash between sending and marking sends it again after
// the lease: consumers deduplicate on the event id. sent is false when ev
// was dispatched already, or is claimed by another dispatcher.
func (d *Dispatcher) Dispatch(ctx context.Context, ev Event) (sent bool, err error) {
	if ev.GSI6PK == "" {
		return false, nil // already dispatched
	}
	key := store.Key(ev.PK, ev.SK)
	now := d.now()
	token := uuid.NewString()
	_, err = d.DB.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.DB.Table), Key: key,
		UpdateExpression:    aws.String("SET claim = :token, claim_until = :until"),
		ConditionExpression: aws.String("attribute_exists(GSI6PK) AND (attribute_not_exists(claim_until) OR claim_until < :now)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":token": &ddbtypes.AttributeValueMemberS{Value: token},
			":until": &ddbtypes.AttributeValueMemberS{Value: store.FormatTime(now.Add(ClaimLease))},
			":now":   &ddbtypes.AttributeValueMemberS{Value: store.FormatTime(now)},
		},
	})
	if store.IsConditionFailed(err) {
		return false, nil // dispatched, or claimed by a concurrent dispatcher
	}
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", ev.ID, err)
	}
	mine := map[string]ddbtypes.AttributeValue{":token": &ddbtypes.AttributeValueMemberS{Value: token}}
	body, err := json.Marshal(Message{ID: ev.ID, OrgID: ev.OrgID, Type: ev.Type, CreatedAt: ev.CreatedAt, Data: json.RawMessage(ev.Data)})
	if err == nil {
		for _, q := range d.Routes[ev.Type] {
			if err = q.Send(ctx, body, 0); err != nil {
				break
			}
		}
	}
	if err != nil {
		// Give the claim back, so the next sweep retries at once.
		_, _ = d.DB.Client.UpdateItem(context.WithoutCancel(ctx), &dynamodb.UpdateItemInput{
			TableName: aws.String(d.DB.Table), Key: key, UpdateExpression: aws.String("REMOVE claim, claim_until"),
			ConditionExpression: aws.String("claim = :token"), ExpressionAttributeValues: mine,
		})
		return false, fmt.Errorf("dispatch %s: %w", ev.ID, err)
	}
	_, err = d.DB.Client.UpdateItem(context.WithoutCancel(ctx), &dynamodb.UpdateItemInput{
		TableName: aws.String(d.DB.Table), Key: key,
		UpdateExpression:    aws.String("REMOVE GSI6PK, GSI6SK, claim, claim_until"), // out of the pending index
		ConditionExpression: aws.String("claim = :token"), ExpressionAttributeValues: mine,
	})
	if err != nil && !store.IsConditionFailed(err) {
		return true, fmt.Errorf("mark %s dispatched: %w", ev.ID, err)
	}
	return true, nil
}

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Poll sweeps whenever kick fires (a write in this process) and every
// interval (events written elsewhere, say by the admin tool) until ctx
// ends: the devserver's stand-in for the stream trigger.
func (d *Dispatcher) Poll(ctx context.Context, kick <-chan struct{}, interval time.Duration, onError func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := d.Sweep(ctx, 0); err != nil && !errors.Is(err, context.Canceled) {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-t.C:
		}
	}
}
