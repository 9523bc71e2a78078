package clock

import (
	"sync"
	"time"

	shared "github.com/practice-api/practice-api/shared/clock"
)

// Both of localcloud's clocks are the service's Clock too (shared/clock):
// a part written against it (the metrics' store, a schedule's ticker, a
// retry's pause) runs on either.
var (
	_ shared.Clock = (*Manual)(nil)
	_ shared.Clock = (*Scaled)(nil)
)

// NewTimer is a timer that fires once the clock has passed d from now
// (its time sent, as time.Timer sends it; what its reader does then is
// not waited for).
func (m *Manual) NewTimer(d time.Duration) (shared.Timer, <-chan time.Time) {
	t := &manualTimer{m: m, c: make(chan time.Time, 1)}
	t.arm(m.Now().Add(d))
	return t, t.c
}

// NewTicker is a ticker that fires each time the clock passes another d
// (a tick its reader has not taken yet is dropped, as time.Ticker does).
func (m *Manual) NewTicker(d time.Duration) (shared.Ticker, <-chan time.Time) {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &manualTimer{m: m, c: make(chan time.Time, 1), period: d}
	t.arm(m.Now().Add(d))
	return manualTicker{t}, t.c
}

// AfterFunc calls f, in a goroutine of its own, once the clock has passed
// d from now: Advance waits for f to return before it moves on, so f
// sees Now at its own time.
func (m *Manual) AfterFunc(d time.Duration, f func()) shared.Timer {
	t := &manualTimer{m: m, f: f}
	t.arm(m.Now().Add(d))
	return t
}

// manualTimer is a timer (period 0), ticker or AfterFunc of a Manual
// clock: a participant's sleeper and a goroutine waiting on it, busy
// from its firing until it has sent the time (or run f).
type manualTimer struct {
	m      *Manual
	period time.Duration
	c      chan time.Time
	f      func()

	mu   sync.Mutex
	s    *sleeper
	stop chan struct{}
}

// arm sets the timer to fire when the clock reaches until.
func (t *manualTimer) arm(until time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.m
	m.mu.Lock()
	m.busy++ // a participant, waiting from addLocked on
	s := m.addLocked(until, true)
	m.mu.Unlock()
	stop := make(chan struct{})
	t.s, t.stop = s, stop
	go func() {
		select {
		case <-stop: // Stop took the sleeper back, and left
			return
		case <-s.fired: // Advance counted it busy
		}
		if t.f != nil {
			t.f()
		} else {
			select {
			case t.c <- until:
			default: // the reader has not taken the last one
			}
		}
		t.mu.Lock()
		period, current := t.period, t.stop == stop
		t.mu.Unlock()
		if period > 0 && current {
			t.arm(until.Add(period))
		}
		m.leave()
	}()
}

// Stop keeps the timer from firing; false when it had fired or been
// stopped already.
func (t *manualTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stop == nil {
		return false
	}
	stop := t.stop
	t.stop = nil
	if t.m.remove(t.s) {
		return false // fired: its goroutine leaves
	}
	close(stop)
	t.m.leave() // remove counted it busy again
	return true
}

// Reset makes the timer fire d from now; false when it had fired or been
// stopped.
func (t *manualTimer) Reset(d time.Duration) bool {
	active := t.Stop()
	t.arm(t.m.Now().Add(d))
	return active
}

type manualTicker struct{ t *manualTimer }

func (k manualTicker) Stop() { k.t.Stop() }

// Reset makes the ticker fire every d from now on.
func (k manualTicker) Reset(d time.Duration) {
	k.t.mu.Lock()
	k.t.period = d // its goroutine reads it under mu
	k.t.mu.Unlock()
	k.t.Reset(d)
}

// NewTimer is a timer of the scaled clock: d on it, d/Scale of real time.
func (s *Scaled) NewTimer(d time.Duration) (shared.Timer, <-chan time.Time) {
	t := time.NewTimer(s.real(d))
	return t, t.C
}

// NewTicker is a ticker of the scaled clock: every d on it.
func (s *Scaled) NewTicker(d time.Duration) (shared.Ticker, <-chan time.Time) {
	t := time.NewTicker(s.real(d))
	return scaledTicker{t, s}, t.C
}

// AfterFunc calls f once d has passed on the scaled clock.
func (s *Scaled) AfterFunc(d time.Duration, f func()) shared.Timer {
	return scaledTimer{time.AfterFunc(s.real(d), f), s}
}

type scaledTicker struct {
	*time.Ticker
	s *Scaled
}

func (k scaledTicker) Reset(d time.Duration) { k.Ticker.Reset(k.s.real(d)) }

type scaledTimer struct {
	*time.Timer
	s *Scaled
}

func (k scaledTimer) Reset(d time.Duration) bool { return k.Timer.Reset(k.s.real(d)) }
