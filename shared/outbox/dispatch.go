package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// Sweep dispatches every pending event older than minAge, shard by shard.
// It returns how many it dispatched.
func (d *Dispatcher) Sweep(ctx context.Context, minAge time.Duration) (int, error) {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	upTo := store.FormatTime(now().Add(-minAge)) + "~"
	n := 0
	for shard := range Shards {
		// Dispatched events leave the index, so each round reads the shard
		// from its start again.
		for {
			evs, next, err := store.QueryInto[Event](ctx, d.DB, store.ListQuery{Index: "GSI6", PK: PendingPK(shard), SKTo: upTo, Limit: 100})
			if err != nil {
				return n, err
			}
			for _, ev := range evs {
				if err := d.Dispatch(ctx, ev); err != nil {
					return n, err
				}
				n++
			}
			if next == nil {
				break
			}
		}
	}
	return n, nil
}

// Dispatch sends ev to its queues, then marks it dispatched. A crash in
// between sends it again on the next sweep: consumers deduplicate on the
// event id.
func (d *Dispatcher) Dispatch(ctx context.Context, ev Event) error {
	if ev.GSI6PK == "" {
		return nil // already dispatched
	}
	body, err := json.Marshal(Message{ID: ev.ID, OrgID: ev.OrgID, Type: ev.Type, CreatedAt: ev.CreatedAt, Data: json.RawMessage(ev.Data)})
	if err != nil {
		return err
	}
	for _, q := range d.Routes[ev.Type] {
		if err := q.Send(ctx, body, 0); err != nil {
			return fmt.Errorf("dispatch %s: %w", ev.ID, err)
		}
	}
	pending := ev.GSI6PK
	ev.GSI6PK, ev.GSI6SK = "", "" // out of the pending index
	item, err := store.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = d.DB.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(d.DB.Table), Item: item,
		ConditionExpression:       aws.String("GSI6PK = :pending"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pending": &ddbtypes.AttributeValueMemberS{Value: pending}},
	})
	if err != nil && !store.IsConditionFailed(err) { // a concurrent sweep marked it first
		return fmt.Errorf("mark %s dispatched: %w", ev.ID, err)
	}
	return nil
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
