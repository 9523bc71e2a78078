package queue

import (
	"context"
	"fmt"
	"slices"
	"sort"
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
	"github.com/practice-api/practice-api/shared/store"
)

// Table is a durable work queue kept in the service's own table: the
// devserver's stand-in for SQS, so that jobs queued when the process is
// killed (kill -9 included) are still there when it starts again on the
// same data (LOCAL_DYNAMODB_DIR). It has SQS's semantics: delays,
// visibility timeouts, receive counts, at-least-once delivery, a message
// received MaxReceives times without being deleted is set aside as dead
// (SQS's redrive to a dead-letter queue), and fair queues (Fair): a
// message's group is its tenant, and a noisy tenant's messages come after
// quiet tenants'.
//
// A message is the item QUEUE#<name> / MSG#<id> (its group in grp);
// while it waits it has the GSI5 slot QUEUE#<name> / <visible at,
// ms>#<id>, which a receive moves forward by the visibility timeout with a
// conditional write (the receipt is the claim). One process consumes a
// Table (the devserver): it keeps a mirror of its messages' groups and
// slots, loaded from the table at its first receive, from which a receive
// picks in the fair queue's order without reading the table; the
// conditional write still decides every claim, and a receive that finds
// nothing due in the mirror queries GSI5 for messages sent by others.
type Table struct {
	// Clock is the queue's time: delays, visibility timeouts, retention
	// (the wall clock when nil). A receive's wait is the wall clock's.
	Clock clock.Clock

	db          *store.DB
	name        string
	visibility  time.Duration
	maxReceives int
	wake        chan struct{}
	fair        *Fair

	mu     sync.Mutex
	loaded bool
	known  map[string]*tableMsg // the mirror, by message id
}

// tableMsg is what the mirror knows of a message.
type tableMsg struct {
	group, slot string
	visibleAt   time.Time
	sent        time.Time
	count       int
	claiming    bool // a receive of this process is claiming it
}

// NewTable returns the queue name on db; maxReceives 0 never dead-letters.
func NewTable(db *store.DB, name string, visibility time.Duration, maxReceives int) *Table {
	return &Table{db: db, name: name, visibility: visibility, maxReceives: maxReceives, wake: make(chan struct{}, 1),
		fair: NewFair(), known: map[string]*tableMsg{}}
}

var _ Queue = (*Table)(nil)

func (q *Table) now() time.Time { return clock.Or(q.Clock).Now() }

// Retention is how long an unreceived message is kept (SQS's default).
const Retention = 4 * 24 * time.Hour

const queueIndex = store.GSI5

func (q *Table) pk() string { return "QUEUE#" + q.name }

func slot(visibleAt time.Time, id string) string {
	return fmt.Sprintf("%015d#%s", visibleAt.UnixMilli(), id)
}

// slotTime is the visible-at time of a slot.
func slotTime(s string) time.Time {
	ms, _ := strconv.ParseInt(strings.SplitN(s, "#", 2)[0], 10, 64)
	return time.UnixMilli(ms)
}

// sentAt is when a message was sent: its id is a UUIDv7, whose first 48
// bits are the milliseconds of its making.
func sentAt(id string) time.Time {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return time.Time{}
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec)
}

// message is a message's item, new, and its place in the mirror.
func (q *Table) message(group string, body []byte, delay time.Duration, now time.Time) (map[string]ddbtypes.AttributeValue, string, *tableMsg, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, "", nil, err
	}
	sl := slot(now.Add(delay), id.String())
	item := map[string]ddbtypes.AttributeValue{
		store.AttrPK: &ddbtypes.AttributeValueMemberS{Value: q.pk()}, store.AttrSK: &ddbtypes.AttributeValueMemberS{Value: "MSG#" + id.String()},
		"kind": &ddbtypes.AttributeValueMemberS{Value: "queue_message"}, "id": &ddbtypes.AttributeValueMemberS{Value: id.String()},
		"grp":  &ddbtypes.AttributeValueMemberS{Value: group},
		"body": &ddbtypes.AttributeValueMemberB{Value: body}, "receive_count": &ddbtypes.AttributeValueMemberN{Value: "0"},
		"GSI5PK": &ddbtypes.AttributeValueMemberS{Value: q.pk()}, "GSI5SK": &ddbtypes.AttributeValueMemberS{Value: sl},
		store.AttrTTL: &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(Retention).Unix(), 10)},
	}
	return item, id.String(), &tableMsg{group: group, slot: sl, visibleAt: now.Add(delay), sent: now}, nil
}

// sent puts sent messages in the mirror and wakes a receiver.
func (q *Table) sent(ids []string, ms []*tableMsg) {
	q.mu.Lock()
	for i, id := range ids {
		q.known[id] = ms[i]
	}
	q.mu.Unlock()
	for i, id := range ids {
		q.fair.Sent(Tenant(ms[i].group, id), ms[i].sent)
	}
	notify(q.wake)
}

// Send enqueues body.
func (q *Table) Send(ctx context.Context, group string, body []byte, delay time.Duration) error {
	if delay > MaxDelay {
		return ErrDelayTooLong
	}
	item, id, m, err := q.message(group, body, delay, q.now())
	if err != nil {
		return err
	}
	if _, err := q.db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(q.db.Table), Item: item}); err != nil {
		return fmt.Errorf("queue %s: send: %w", q.name, err)
	}
	q.sent([]string{id}, []*tableMsg{m})
	return nil
}

// SendBatch enqueues bodies 25 to a BatchWriteItem (a replay's thousand
// jobs are 40 calls, not a thousand); items the table did not process are
// written again, a few times, and any still not written are the
// BatchError's.
func (q *Table) SendBatch(ctx context.Context, group string, bodies [][]byte, delays ...time.Duration) error {
	now := q.now()
	var unsent []int
	var lastErr error
	for start := 0; start < len(bodies); start += 25 {
		chunk := bodies[start:min(start+25, len(bodies))]
		pending := map[string]int{} // message id -> index in bodies
		var reqs []ddbtypes.WriteRequest
		var ids []string
		var ms []*tableMsg
		for i, b := range chunk {
			item, id, m, err := q.message(group, b, DelayOf(delays, start+i), now)
			if err != nil {
				return err
			}
			pending[id] = start + i
			ids, ms = append(ids, id), append(ms, m)
			reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: item}})
		}
		for try := 0; try < 5 && len(reqs) > 0; try++ {
			out, err := q.db.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{q.db.Table: reqs}})
			if err != nil {
				lastErr = err
				if clock.Sleep(ctx, time.Duration(try+1)*50*time.Millisecond) != nil {
					break
				}
				continue
			}
			reqs = out.UnprocessedItems[q.db.Table]
			if len(reqs) > 0 {
				lastErr = fmt.Errorf("%d items unprocessed", len(reqs))
				if clock.Sleep(ctx, time.Duration(try+1)*50*time.Millisecond) != nil {
					break
				}
			}
		}
		for _, r := range reqs { // never written
			id := r.PutRequest.Item["id"].(*ddbtypes.AttributeValueMemberS).Value
			unsent = append(unsent, pending[id])
			delete(pending, id)
		}
		var okIDs []string
		var okMs []*tableMsg
		for i, id := range ids {
			if _, ok := pending[id]; ok {
				okIDs, okMs = append(okIDs, id), append(okMs, ms[i])
			}
		}
		q.sent(okIDs, okMs)
	}
	if len(unsent) > 0 {
		slices.Sort(unsent)
		return &BatchError{Unsent: unsent, Err: fmt.Errorf("queue %s: send: %w", q.name, lastErr)}
	}
	return nil
}

// Receive returns up to max due messages, waiting up to wait for the first,
// and hides them for the visibility timeout.
func (q *Table) Receive(ctx context.Context, max int, wait time.Duration) ([]Message, error) {
	// A send in this process wakes a receiver at once; the poll only finds
	// delayed messages come due (and sends of other processes), so once a
	// second is enough, and keeps idle receivers off the store.
	return receiveWaiting(ctx, wait, time.Second, q.wake, func() ([]Message, error) { return q.take(ctx, max) })
}

// load fills the mirror from the table, once: the messages a process
// before this one left (their groups, slots and receive counts).
func (q *Table) load(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.loaded {
		return nil
	}
	now := q.now()
	in, err := q.messages(expression.NamesList(expression.Name("id"), expression.Name("grp"), expression.Name("GSI5SK"),
		expression.Name("receive_count"), expression.Name("dead")))
	if err != nil {
		return fmt.Errorf("queue %s: read its messages: %w", q.name, err)
	}
	p := dynamodb.NewQueryPaginator(q.db.Client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("queue %s: read its messages: %w", q.name, err)
		}
		for _, it := range page.Items {
			m, id := mirrorOf(it)
			if m == nil {
				continue
			}
			q.remember(id, m, now)
		}
	}
	q.loaded = true
	return nil
}

// mirrorOf reads an item (whole, or projected) into the mirror's form;
// nil for a dead message or an item that is not a message.
func mirrorOf(it map[string]ddbtypes.AttributeValue) (*tableMsg, string) {
	str := func(k string) string {
		v, _ := it[k].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	if d, ok := it["dead"].(*ddbtypes.AttributeValueMemberBOOL); ok && d.Value {
		return nil, ""
	}
	id, sl := str("id"), str("GSI5SK")
	if id == "" || sl == "" {
		return nil, ""
	}
	m := &tableMsg{group: str("grp"), slot: sl, visibleAt: slotTime(sl), sent: sentAt(id)}
	if n, ok := it["receive_count"].(*ddbtypes.AttributeValueMemberN); ok {
		m.count, _ = strconv.Atoi(n.Value)
	}
	return m, id
}

// remember adds a message found in the table to the mirror (q.mu held).
func (q *Table) remember(id string, m *tableMsg, now time.Time) {
	if _, ok := q.known[id]; ok {
		return
	}
	q.known[id] = m
	t := Tenant(m.group, id)
	q.fair.Sent(t, m.sent)
	if m.count > 0 && m.visibleAt.After(now) {
		q.fair.Received(t, id, now, m.visibleAt) // in flight when its process stopped
	}
}

// pick reserves up to max due messages of the mirror in the fair queue's
// order, for this receive to claim.
func (q *Table) pick(now time.Time, max int) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	type due struct {
		id string
		m  *tableMsg
	}
	var ds []due
	for id, m := range q.known {
		if !m.claiming && !m.visibleAt.After(now) {
			ds = append(ds, due{id, m})
		}
	}
	// The queue's own order: by when they became visible (GSI5's order).
	sort.Slice(ds, func(i, j int) bool { return ds[i].m.slot < ds[j].m.slot })
	tenants := make([]string, len(ds))
	for i, d := range ds {
		tenants[i] = Tenant(d.m.group, d.id)
	}
	var ids []string
	for _, i := range q.fair.Pick(now, tenants, max) {
		ds[i].m.claiming = true
		ids = append(ids, ds[i].id)
	}
	return ids
}

func (q *Table) take(ctx context.Context, max int) ([]Message, error) {
	if err := q.load(ctx); err != nil {
		return nil, err
	}
	now := q.now()
	ids := q.pick(now, max)
	if len(ids) == 0 {
		// Nothing due that this process knows of: what others sent.
		page, err := q.db.Query(ctx, store.ListQuery{Index: queueIndex, PK: q.pk(), SKTo: slot(now, "~"), Limit: max})
		if err != nil {
			return nil, fmt.Errorf("queue %s: receive: %w", q.name, err)
		}
		q.mu.Lock()
		for _, it := range page.Items {
			if m, id := mirrorOf(it); m != nil {
				q.remember(id, m, now)
			}
		}
		q.mu.Unlock()
		ids = q.pick(now, max)
	}
	var out []Message
	for i, id := range ids {
		m, err := q.claim(ctx, id, now)
		if err != nil {
			q.release(ids[i:])
			return out, err
		}
		if m != nil {
			out = append(out, *m)
		}
	}
	return out, nil
}

// release gives back reservations a failed receive did not claim.
func (q *Table) release(ids []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, id := range ids {
		if m := q.known[id]; m != nil {
			m.claiming = false
		}
	}
}

// claim receives one reserved message: its slot moves by the visibility
// timeout, by condition (the slot the mirror knows: nobody received it
// meanwhile). nil, nil: it was not there to claim, or went dead.
func (q *Table) claim(ctx context.Context, id string, now time.Time) (*Message, error) {
	q.mu.Lock()
	known := q.known[id]
	q.mu.Unlock()
	if known == nil {
		return nil, nil
	}
	next := slot(now.Add(q.visibility), id)
	receipt := uuid.NewString()
	e, err := expression.NewBuilder().
		WithCondition(expression.Name("GSI5SK").Equal(expression.Value(known.slot))). // nobody received it meanwhile
		WithUpdate(expression.Set(expression.Name("GSI5SK"), expression.Value(next)).
			Set(expression.Name("receipt"), expression.Value(receipt)).
			Add(expression.Name("receive_count"), expression.Value(1))).Build()
	if err != nil {
		return nil, fmt.Errorf("queue %s: receive: %w", q.name, err)
	}
	res, err := q.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(q.db.Table), Key: store.Key(q.pk(), "MSG#"+id),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValues: ddbtypes.ReturnValueAllNew,
	})
	tenant := Tenant(known.group, id)
	if store.IsConditionFailed(err) {
		// Deleted, or received, by another process: the mirror forgets it;
		// a receive that finds nothing due reads GSI5 again.
		q.forget(id, tenant, now)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queue %s: receive: %w", q.name, err)
	}
	count, _ := strconv.Atoi(res.Attributes["receive_count"].(*ddbtypes.AttributeValueMemberN).Value)
	if q.maxReceives > 0 && count > q.maxReceives {
		// Received MaxReceives times and never deleted: out of the
		// queue, kept (dead) for inspection, as SQS's dead-letter queue.
		e, err := expression.NewBuilder().WithCondition(receiptIs(receipt)).
			WithUpdate(expression.Set(expression.Name("dead"), expression.Value(true)).
				Set(expression.Name("dead_at"), expression.Value(store.FormatTime(now))).
				Remove(expression.Name("GSI5PK")).Remove(expression.Name("GSI5SK"))).Build()
		if err == nil {
			_, _ = q.db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(q.db.Table), Key: store.Key(q.pk(), "MSG#"+id),
				UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
				ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
			})
		}
		q.forget(id, tenant, now)
		return nil, nil
	}
	q.mu.Lock()
	known.slot, known.visibleAt, known.count, known.claiming = next, now.Add(q.visibility), count, false
	q.mu.Unlock()
	q.fair.Received(tenant, id, now, now.Add(q.visibility))
	m := &Message{ID: id, Receipt: receipt, ReceiveCount: count, Group: known.group}
	if body, _ := res.Attributes["body"].(*ddbtypes.AttributeValueMemberB); body != nil {
		m.Body = body.Value
	}
	return m, nil
}

// forget takes a message out of the mirror.
func (q *Table) forget(id, tenant string, now time.Time) {
	q.mu.Lock()
	delete(q.known, id)
	q.mu.Unlock()
	q.fair.Ended(tenant, id, now)
}

// Delete removes a message if the receipt is its latest.
func (q *Table) Delete(ctx context.Context, m Message) error {
	e, err := expression.NewBuilder().WithCondition(receiptIs(m.Receipt)).Build()
	if err != nil {
		return fmt.Errorf("queue %s: delete: %w", q.name, err)
	}
	_, err = q.db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(q.db.Table), Key: store.Key(q.pk(), "MSG#"+m.ID),
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	if store.IsConditionFailed(err) {
		return nil // a stale receipt: the message came back and is someone else's
	}
	if err != nil {
		return fmt.Errorf("queue %s: delete: %w", q.name, err)
	}
	q.forget(m.ID, Tenant(m.Group, m.ID), q.now())
	return nil
}

// messages is the Query of the queue's partition (its messages), reading
// only proj's attributes.
func (q *Table) messages(proj expression.ProjectionBuilder) (*dynamodb.QueryInput, error) {
	e, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(store.AttrPK).Equal(expression.Value(q.pk()))).WithProjection(proj).Build()
	if err != nil {
		return nil, err
	}
	return &dynamodb.QueryInput{
		TableName: aws.String(q.db.Table), KeyConditionExpression: e.KeyCondition(), ProjectionExpression: e.Projection(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}, nil
}

// receiptIs is the condition that a message's latest receipt is r.
func receiptIs(r string) expression.ConditionBuilder {
	return expression.Name("receipt").Equal(expression.Value(r))
}

// Counts are how many messages wait (visible or not) and how many are dead.
func (q *Table) Counts(ctx context.Context) (waiting, dead int, err error) {
	in, err := q.messages(expression.NamesList(expression.Name("dead")))
	if err != nil {
		return 0, 0, err
	}
	p := dynamodb.NewQueryPaginator(q.db.Client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, 0, err
		}
		for _, it := range page.Items {
			if d, ok := it["dead"].(*ddbtypes.AttributeValueMemberBOOL); ok && d.Value {
				dead++
			} else {
				waiting++
			}
		}
	}
	return waiting, dead, nil
}

// Fairness is the queue's fair-queue metrics now, from the mirror.
func (q *Table) Fairness() FairMetrics {
	q.mu.Lock()
	now := q.now()
	states := make([]MessageState, 0, len(q.known))
	for id, m := range q.known {
		hidden := m.visibleAt.After(now)
		states = append(states, MessageState{Tenant: Tenant(m.group, id), Sent: m.sent, InFlight: hidden && m.count > 0, Delayed: hidden && m.count == 0})
	}
	q.mu.Unlock()
	return q.fair.Metrics(now, states)
}

// Noisy lists the groups the queue treats as noisy neighbours now.
func (q *Table) Noisy() []string { return q.fair.NoisyTenants() }
