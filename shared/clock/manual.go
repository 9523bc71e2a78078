package clock

import (
	"context"
	"sync"
	"time"
)

// Manual is a Clock that moves only when told to (Advance), for tests: a
// lease, a visibility timeout or a schedule passes in one call, and the
// timers, tickers and AfterFunc functions due on the way fire in the order
// of their times, each seeing Now at its own time. It is safe for
// concurrent use.
type Manual struct {
	advance sync.Mutex // one Advance at a time

	mu      sync.Mutex
	now     time.Time
	seq     uint64
	pending []*manualTimer
	changed chan struct{} // closed (and replaced) when a timer is set
}

var _ Clock = (*Manual)(nil)

// NewManual is a manual clock standing at start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start, changed: make(chan struct{})}
}

// manualTimer is a timer (period 0) or ticker of a Manual clock; f, when
// set, is an AfterFunc's function, else c takes the ticks.
type manualTimer struct {
	m      *Manual
	when   time.Time
	seq    uint64 // orders timers due at the same time: first set, first fired
	period time.Duration
	c      chan time.Time
	f      func()
	active bool
}

// Now is the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// NewTimer is a timer that fires when the clock has moved d from now (at
// once when d <= 0, as time.NewTimer).
func (m *Manual) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := &manualTimer{m: m, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t, t.c
}

// NewTicker is a ticker that fires each time the clock passes another d.
func (m *Manual) NewTicker(d time.Duration) (Ticker, <-chan time.Time) {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &manualTimer{m: m, c: make(chan time.Time, 1), period: d}
	t.Reset(d)
	return manualTicker{t}, t.c
}

// AfterFunc calls f when the clock has moved d from now, in the goroutine
// that moves it: Advance returns after f has (when d <= 0, at once in a
// goroutine of its own, as time.AfterFunc).
func (m *Manual) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{m: m, f: f}
	t.Reset(d)
	return t
}

// Pending is how many timers, tickers and AfterFunc functions wait on the
// clock.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

// AwaitPending waits until at least n timers, tickers or AfterFunc
// functions wait on the clock (the code under test has reached its wait),
// or ctx ends; a test calls it before Advance so that the move is not
// made before the wait it should end was set.
func (m *Manual) AwaitPending(ctx context.Context, n int) error {
	for {
		m.mu.Lock()
		have, changed := len(m.pending), m.changed
		m.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// Advance moves the clock d forward and fires, in time order, every timer,
// tick and AfterFunc due on the way (a ticker as many times as its period
// fits; a tick its reader has not taken yet is dropped, as time.Ticker
// does). Concurrent Advances take turns.
func (m *Manual) Advance(d time.Duration) {
	m.advance.Lock()
	defer m.advance.Unlock()
	m.mu.Lock()
	target := m.now.Add(d)
	m.mu.Unlock()
	for m.fireNext(target) {
	}
	m.mu.Lock()
	if target.After(m.now) {
		m.now = target
	}
	m.mu.Unlock()
}

// fireNext fires the earliest timer due by target, if any; it reports
// whether it fired one.
func (m *Manual) fireNext(target time.Time) bool {
	m.mu.Lock()
	var next *manualTimer
	for _, t := range m.pending {
		if !t.when.After(target) && (next == nil || t.when.Before(next.when) || (t.when.Equal(next.when) && t.seq < next.seq)) {
			next = t
		}
	}
	if next == nil {
		m.mu.Unlock()
		return false
	}
	if next.when.After(m.now) {
		m.now = next.when
	}
	now := m.now
	if next.period > 0 {
		next.when = next.when.Add(next.period)
		m.seq++
		next.seq = m.seq
	} else {
		m.remove(next)
	}
	if next.c != nil {
		select {
		case next.c <- now:
		default: // the last tick is still unread: this one is dropped
		}
	}
	f := next.f
	m.mu.Unlock()
	if f != nil {
		f()
	}
	return true
}

// add sets t pending; m.mu is held.
func (m *Manual) add(t *manualTimer) {
	m.seq++
	t.seq = m.seq
	if !t.active {
		t.active = true
		m.pending = append(m.pending, t)
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// remove takes t off the pending timers; m.mu is held.
func (m *Manual) remove(t *manualTimer) {
	if !t.active {
		return
	}
	t.active = false
	for i, p := range m.pending {
		if p == t {
			m.pending = append(m.pending[:i], m.pending[i+1:]...)
			break
		}
	}
}

// Stop keeps the timer from firing and empties its channel (as
// time.Timer does since Go 1.23).
func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := t.active
	t.m.remove(t)
	t.drain()
	return was
}

// Reset makes the timer fire d from the clock's now (at once when a
// timer's d <= 0).
func (t *manualTimer) Reset(d time.Duration) bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := t.active
	t.when = t.m.now.Add(d)
	t.drain()
	if d <= 0 && t.period == 0 {
		t.m.remove(t)
		if t.c != nil {
			t.c <- t.m.now // drained above: room for one
		} else {
			go t.f()
		}
		return was
	}
	t.m.add(t)
	return was
}

func (t *manualTimer) drain() {
	if t.c == nil {
		return
	}
	select {
	case <-t.c:
	default:
	}
}

// manualTicker is a manual ticker: a manualTimer with a period.
type manualTicker struct{ t *manualTimer }

func (k manualTicker) Stop() { k.t.Stop() }

func (k manualTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	k.t.m.mu.Lock()
	k.t.period = d
	k.t.m.mu.Unlock()
	k.t.Reset(d)
}
