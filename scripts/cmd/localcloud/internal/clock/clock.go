// Package clock is the time localcloud's CloudWatch and CodeDeploy run
// on: the wall clock, sped up by LOCALCLOUD_TIME_SCALE (Scaled), or a
// clock that moves only when told to (Manual, LOCALCLOUD_CLOCK=manual,
// moved by the control API's POST /localcloud/clock).
//
// With the manual clock a test decides when a minute has passed: it
// serves that minute's traffic, waits for its metrics to be in, and only
// then moves the clock; the alarms are evaluated at the minute's end and
// every deployment waiting on the clock has acted on them (polled its
// alarms, shifted or rolled back) before Advance returns. However slow
// the machine, a minute holds the same requests and the same data
// points, so a canary stops at the same minute every run.
//
// Both clocks are the service's clock too (shared/clock.Clock: Now,
// timers, tickers, AfterFunc), so a part written against it (the
// metrics' store, a schedule's rate, a retry's pause) runs on either; a
// manual timer is a participant while it fires, so Advance returns after
// what it woke has acted.
package clock

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Clock is what a deployment (a participant: it joins, waits, leaves)
// and the other timers read the time from.
type Clock interface {
	// Now is the clock's time.
	Now() time.Time
	// Join makes the caller a participant: until it leaves, the clock
	// counts it busy except while it waits on the clock (Waiter.Wait), so
	// a manual clock's Advance returns only once it has acted on the time.
	Join() Waiter
	// Sleep waits until d has passed on the clock or ctx ends, for a
	// caller that is not a participant (an asynchronous retry).
	Sleep(ctx context.Context, d time.Duration) error
}

// Waiter is a participant of a clock.
type Waiter interface {
	// Wait waits until d has passed on the clock, wake is closed, or
	// ctx ends; elapsed reports the first.
	Wait(ctx context.Context, d time.Duration, wake <-chan struct{}) (elapsed bool)
	// Leave ends the participation.
	Leave()
}

// Scaled is the wall clock, Scale times faster (1 or less: real time),
// counted from when it was made.
type Scaled struct {
	Scale  float64
	origin time.Time
}

// NewScaled is the wall clock sped up scale times from now.
func NewScaled(scale float64) *Scaled { return &Scaled{Scale: scale, origin: time.Now()} }

func (s *Scaled) real(d time.Duration) time.Duration {
	if s.Scale <= 1 {
		return d
	}
	return time.Duration(float64(d) / s.Scale)
}

// Now is the scaled time: the origin plus the wall time since, Scale
// times over.
func (s *Scaled) Now() time.Time {
	if s.origin.IsZero() {
		return time.Now()
	}
	since := time.Since(s.origin)
	if s.Scale > 1 {
		since = time.Duration(float64(since) * s.Scale)
	}
	return s.origin.Add(since)
}

// Join returns a participant (the wall clock waits for no one).
func (s *Scaled) Join() Waiter { return scaledWaiter{s} }

// Sleep waits d on the scaled clock.
func (s *Scaled) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.real(d)):
		return nil
	}
}

type scaledWaiter struct{ s *Scaled }

func (w scaledWaiter) Wait(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	select {
	case <-ctx.Done():
		return false
	case <-wake:
		return false
	case <-time.After(w.s.real(d)):
		return true
	}
}

func (scaledWaiter) Leave() {}

// Manual is a clock that moves only by Advance. At each tick (every
// Every, aligned on it) it first calls the OnTick functions (CloudWatch
// samples the queues and evaluates the alarms), then wakes the
// participants whose wait ends there, and waits until each of them has
// waited again or left, before it moves on.
type Manual struct {
	// Every is the tick (a minute: CloudWatch evaluates alarms every
	// minute).
	Every time.Duration

	mu       sync.Mutex
	cond     *sync.Cond
	now      time.Time
	busy     int
	sleepers []*sleeper
	onTick   []func(time.Time)
	advance  sync.Mutex // one Advance at a time
	moves    []move     // each time the clock moved, and when (At)
}

// move is the clock's time from a moment of the wall clock on.
type move struct{ wall, now, from time.Time }

type sleeper struct {
	until       time.Time
	participant bool
	fired       chan struct{}
	done        bool
}

// NewManual is a manual clock at start (its ticks aligned on every).
func NewManual(start time.Time, every time.Duration) *Manual {
	m := &Manual{Every: every, now: start}
	m.cond = sync.NewCond(&m.mu)
	return m
}

// OnTick adds f to what runs at each tick, in the order added.
func (m *Manual) OnTick(f func(now time.Time)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onTick = append(m.onTick, f)
}

// Now is the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// At is the clock's time at a moment of the wall clock: what Now
// answered then. Ages that things keep on the wall clock (a queue's
// message sent at wall, a stream record created then) are on the manual
// clock Now().Sub(At(wall)): a message sent before the test moved the
// clock ten minutes on has waited ten minutes, however little real time
// passed.
func (m *Manual) At(wall time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := sort.Search(len(m.moves), func(i int) bool { return m.moves[i].wall.After(wall) })
	if i == 0 {
		if len(m.moves) == 0 {
			return m.now
		}
		return m.moves[0].from
	}
	return m.moves[i-1].now
}

// setNow moves the clock to t (m.mu held) and notes when.
func (m *Manual) setNow(t time.Time) {
	m.moves = append(m.moves, move{wall: time.Now(), now: t, from: m.now})
	m.now = t
}

// Busy is how many participants are acting (not waiting on the clock).
func (m *Manual) Busy() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.busy
}

// Sleeping is how many waits (a participant's or Sleep's) are on the
// clock: a test moves it once the wait it should end has begun.
func (m *Manual) Sleeping() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sleepers)
}

// Join makes the caller a participant, busy until it waits or leaves.
func (m *Manual) Join() Waiter {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.busy++
	return &manualWaiter{m: m}
}

// Sleep waits until the clock has moved d on, or ctx ends.
func (m *Manual) Sleep(ctx context.Context, d time.Duration) error {
	s := m.add(d, false)
	select {
	case <-s.fired:
		return nil
	case <-ctx.Done():
		m.remove(s)
		return ctx.Err()
	}
}

func (m *Manual) add(d time.Duration, participant bool) *sleeper {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addLocked(m.now.Add(d), participant)
}

// addLocked adds a sleeper until the clock reaches until (m.mu held).
func (m *Manual) addLocked(until time.Time, participant bool) *sleeper {
	s := &sleeper{until: until, participant: participant, fired: make(chan struct{})}
	if !until.After(m.now) {
		close(s.fired)
		s.done = true
		return s
	}
	m.sleepers = append(m.sleepers, s)
	sort.SliceStable(m.sleepers, func(i, j int) bool { return m.sleepers[i].until.Before(m.sleepers[j].until) })
	if participant {
		m.busy--
		m.cond.Broadcast()
	}
	return s
}

// remove takes back a sleeper that did not fire (its waiter woke
// otherwise); it reports whether it had fired meanwhile.
func (m *Manual) remove(s *sleeper) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.done {
		return true
	}
	s.done = true
	for i, o := range m.sleepers {
		if o == s {
			m.sleepers = append(m.sleepers[:i], m.sleepers[i+1:]...)
			break
		}
	}
	if s.participant {
		m.busy++
	}
	return false
}

type manualWaiter struct {
	m    *Manual
	left bool
}

func (w *manualWaiter) Wait(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	s := w.m.add(d, true)
	select {
	case <-s.fired: // Advance counted us busy again
		return true
	case <-wake:
	case <-ctx.Done():
	}
	return w.m.remove(s)
}

// leave ends a participation that is busy.
func (m *Manual) leave() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.busy--
	m.cond.Broadcast()
}

func (w *manualWaiter) Leave() {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if !w.left {
		w.left = true
		w.m.busy--
		w.m.cond.Broadcast()
	}
}

// Advance moves the clock d on, stopping at each tick and at each
// sleeper's end on the way: at a tick the OnTick functions run first;
// then the sleepers due are woken, and Advance waits (up to settle, of
// real time, for each stop) until every participant waits on the clock
// again or has left. It returns the new time, or an error naming the
// time when a participant did not settle.
func (m *Manual) Advance(d time.Duration, settle time.Duration) (time.Time, error) {
	m.advance.Lock()
	defer m.advance.Unlock()
	m.mu.Lock()
	target := m.now.Add(d)
	m.mu.Unlock()
	for {
		// Whoever is acting (a deployment just started, or one woken at
		// the last stop) waits on the clock again first: its next wait is
		// counted, and at the end Advance returns after it acted.
		if err := m.settle(settle); err != nil {
			now := m.Now()
			return now, fmt.Errorf("at %s: %w", now.Format(time.RFC3339), err)
		}
		m.mu.Lock()
		next := m.now.Truncate(m.Every).Add(m.Every)
		tick := true
		if len(m.sleepers) > 0 && m.sleepers[0].until.Before(next) {
			next, tick = m.sleepers[0].until, false
		}
		if next.After(target) {
			m.setNow(target)
			m.mu.Unlock()
			return target, nil
		}
		m.setNow(next)
		ticks := append([]func(time.Time){}, m.onTick...)
		m.mu.Unlock()
		if tick {
			for _, f := range ticks {
				f(next)
			}
		}
		m.mu.Lock()
		for len(m.sleepers) > 0 && !m.sleepers[0].until.After(next) {
			s := m.sleepers[0]
			m.sleepers = m.sleepers[1:]
			s.done = true
			if s.participant {
				m.busy++
			}
			close(s.fired)
		}
		m.mu.Unlock()
	}
}

// settle waits until no participant is busy, for at most within.
func (m *Manual) settle(within time.Duration) error {
	if within <= 0 {
		within = time.Minute
	}
	deadline := time.Now().Add(within)
	timer := time.AfterFunc(within, func() { m.mu.Lock(); m.cond.Broadcast(); m.mu.Unlock() })
	defer timer.Stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.busy > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d participants still acting after %v", m.busy, within)
		}
		m.cond.Wait()
	}
	return nil
}
