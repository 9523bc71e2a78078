package queue

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/practice-api/practice-api/shared/clock"
)

// Memory is the in-process adapter: the same contract as SQS (delays,
// visibility timeouts, receive counts, at-least-once, fair queues by
// group), for tests. Messages live as long as the process.
type Memory struct {
	// Clock is the queue's time: delays and visibility timeouts (the wall
	// clock when nil). A receive's wait is the wall clock's.
	Clock clock.Clock

	mu         sync.Mutex
	visibility time.Duration
	seq        int
	msgs       map[string]*memMsg
	wake       chan struct{}
	fair       *Fair
}

type memMsg struct {
	id, group string
	seq       int
	body      []byte
	sent      time.Time
	visibleAt time.Time
	receipt   string
	count     int
}

// NewMemory returns an empty queue with the given visibility timeout.
func NewMemory(visibility time.Duration) *Memory {
	return &Memory{visibility: visibility, msgs: map[string]*memMsg{}, wake: make(chan struct{}, 1), fair: NewFair()}
}

var _ Queue = (*Memory)(nil)

func (q *Memory) now() time.Time { return clock.Or(q.Clock).Now() }

// Send enqueues body.
func (q *Memory) Send(_ context.Context, group string, body []byte, delay time.Duration) error {
	if delay > MaxDelay {
		return ErrDelayTooLong
	}
	q.mu.Lock()
	q.seq++
	id := strconv.Itoa(q.seq)
	now := q.now()
	q.msgs[id] = &memMsg{id: id, group: group, seq: q.seq, body: append([]byte(nil), body...), sent: now, visibleAt: now.Add(delay)}
	q.fair.Sent(Tenant(group, id), now)
	q.mu.Unlock()
	notify(q.wake)
	return nil
}

// SendBatch enqueues each body.
func (q *Memory) SendBatch(ctx context.Context, group string, bodies [][]byte, delays ...time.Duration) error {
	return sendEach(ctx, group, q.Send, bodies, delays)
}

// Receive returns visible messages, waiting up to wait for the first.
func (q *Memory) Receive(ctx context.Context, max int, wait time.Duration) ([]Message, error) {
	return receiveWaiting(ctx, wait, 50*time.Millisecond, q.wake, func() ([]Message, error) { return q.take(max), nil })
}

func (q *Memory) take(max int) []Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	var visible []*memMsg
	for _, m := range q.msgs {
		if !m.visibleAt.After(now) {
			visible = append(visible, m)
		}
	}
	// The queue's own order, oldest first; the fair queue's rules reorder it.
	sort.Slice(visible, func(i, j int) bool { return visible[i].seq < visible[j].seq })
	tenants := make([]string, len(visible))
	for i, m := range visible {
		tenants[i] = Tenant(m.group, m.id)
	}
	var out []Message
	for _, i := range q.fair.Pick(now, tenants, max) {
		m := visible[i]
		m.count++
		m.receipt = m.id + "/" + strconv.Itoa(m.count)
		m.visibleAt = now.Add(q.visibility)
		q.fair.Received(tenants[i], m.id, now, m.visibleAt)
		out = append(out, Message{ID: m.id, Body: m.body, Receipt: m.receipt, ReceiveCount: m.count, Group: m.group})
	}
	return out
}

// Delete removes a message if the receipt is its latest.
func (q *Memory) Delete(_ context.Context, m Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if cur, ok := q.msgs[m.ID]; ok && cur.receipt == m.Receipt {
		delete(q.msgs, m.ID)
		q.fair.Ended(Tenant(cur.group, cur.id), cur.id, q.now())
	}
	return nil
}

// Len is the number of messages not yet deleted (visible or not).
func (q *Memory) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs)
}

// Bodies is the body of every message not yet deleted (visible or not),
// in the order sent: what a test reads to see what was queued.
func (q *Memory) Bodies() [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	msgs := make([]*memMsg, 0, len(q.msgs))
	for _, m := range q.msgs {
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool { return msgs[i].seq < msgs[j].seq })
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = append([]byte(nil), m.body...)
	}
	return out
}

// Fairness is the queue's fair-queue metrics now.
func (q *Memory) Fairness() FairMetrics {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	states := make([]MessageState, 0, len(q.msgs))
	for _, m := range q.msgs {
		hidden := m.visibleAt.After(now)
		states = append(states, MessageState{Tenant: Tenant(m.group, m.id), Sent: m.sent, InFlight: hidden && m.count > 0, Delayed: hidden && m.count == 0})
	}
	return q.fair.Metrics(now, states)
}

// Noisy lists the groups the queue treats as noisy neighbours now.
func (q *Memory) Noisy() []string { return q.fair.NoisyTenants() }
