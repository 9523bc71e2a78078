package queue

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Memory is the in-process adapter: the same contract as SQS (delays,
// visibility timeouts, receive counts, at-least-once), for the devserver and
// tests. Messages live as long as the process.
type Memory struct {
	mu         sync.Mutex
	visibility time.Duration
	now        func() time.Time
	seq        int
	msgs       map[string]*memMsg
	wake       chan struct{}
}

type memMsg struct {
	id        string
	body      []byte
	visibleAt time.Time
	receipt   string
	count     int
}

// NewMemory returns an empty queue with the given visibility timeout.
func NewMemory(visibility time.Duration) *Memory {
	return &Memory{visibility: visibility, now: time.Now, msgs: map[string]*memMsg{}, wake: make(chan struct{}, 1)}
}

var _ Queue = (*Memory)(nil)

// Send enqueues body.
func (q *Memory) Send(_ context.Context, body []byte, delay time.Duration) error {
	if delay > MaxDelay {
		return ErrDelayTooLong
	}
	q.mu.Lock()
	q.seq++
	id := strconv.Itoa(q.seq)
	q.msgs[id] = &memMsg{id: id, body: append([]byte(nil), body...), visibleAt: q.now().Add(delay)}
	q.mu.Unlock()
	notify(q.wake)
	return nil
}

// SendBatch enqueues each body.
func (q *Memory) SendBatch(ctx context.Context, bodies [][]byte) error {
	return sendEach(ctx, q.Send, bodies)
}

// Receive returns visible messages, waiting up to wait for the first.
func (q *Memory) Receive(ctx context.Context, max int, wait time.Duration) ([]Message, error) {
	return receiveWaiting(ctx, wait, 50*time.Millisecond, q.wake, func() ([]Message, error) { return q.take(max), nil })
}

func (q *Memory) take(max int) []Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	var out []Message
	for _, m := range q.msgs {
		if len(out) == max {
			break
		}
		if m.visibleAt.After(now) {
			continue
		}
		m.count++
		m.receipt = m.id + "/" + strconv.Itoa(m.count)
		m.visibleAt = now.Add(q.visibility)
		out = append(out, Message{ID: m.id, Body: m.body, Receipt: m.receipt, ReceiveCount: m.count})
	}
	return out
}

// Delete removes a message if the receipt is its latest.
func (q *Memory) Delete(_ context.Context, m Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if cur, ok := q.msgs[m.ID]; ok && cur.receipt == m.Receipt {
		delete(q.msgs, m.ID)
	}
	return nil
}

// Len is the number of messages not yet deleted (visible or not).
func (q *Memory) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs)
}
