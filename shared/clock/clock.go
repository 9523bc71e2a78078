// Package clock is where the service reads the time and waits: one Clock
// interface (Now, timers, tickers, AfterFunc) passed to every part where
// time passes — leases, sweeps, schedules, visibility timeouts, key and
// secret expiry — instead of reading the time package deep inside.
//
// Production code uses Real (a nil Clock means Real: Or); tests use a
// Manual clock and move it with Advance instead of sleeping, so a lease of
// a minute expires in a microsecond and a test cannot pass by luck of the
// machine's speed.
//
// Waits that pace calls to another service (a retry's backoff after a
// throttled store call) are not the service's time: they stay on the real
// clock (Sleep), so a manual clock that nobody moves cannot hang them.
package clock

import (
	"context"
	"time"
)

// Clock is the time as a part of the service sees it.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// NewTimer is a timer that sends the time on its channel once, d from
	// now (time.NewTimer).
	NewTimer(d time.Duration) (Timer, <-chan time.Time)
	// NewTicker is a ticker that sends the time on its channel every d
	// (time.NewTicker; d must be positive), dropping ticks a slow reader
	// misses.
	NewTicker(d time.Duration) (Ticker, <-chan time.Time)
	// AfterFunc calls f once, d from now (time.AfterFunc).
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer of a Clock; *time.Timer is one.
type Timer interface {
	// Stop keeps the timer from firing; false when it had fired or been
	// stopped already.
	Stop() bool
	// Reset makes the timer fire d from now; false when it had fired or
	// been stopped.
	Reset(d time.Duration) bool
}

// Ticker is a ticker of a Clock; *time.Ticker is one.
type Ticker interface {
	// Stop ends the ticks.
	Stop()
	// Reset makes the ticks come every d from now.
	Reset(d time.Duration)
}

// Real is the wall clock: the time package.
type Real struct{}

var _ Clock = Real{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (Real) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := time.NewTimer(d)
	return t, t.C
}

// NewTicker is time.NewTicker.
func (Real) NewTicker(d time.Duration) (Ticker, <-chan time.Time) {
	t := time.NewTicker(d)
	return t, t.C
}

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Or is c, or Real when c is nil: what a part uses when its Clock field
// was left unset.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Since is the time passed on c since t.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Sleep pauses for d on the wall clock, or until ctx is done, whichever
// comes first; it returns ctx's error when the context ended the pause,
// else nil. It is for backoffs between calls to other services; a wait
// that is the service's own time (a lease, a schedule) uses SleepOn with
// the part's Clock.
func Sleep(ctx context.Context, d time.Duration) error { return SleepOn(ctx, Real{}, d) }

// SleepOn pauses for d on c, or until ctx is done, whichever comes first;
// it returns ctx's error when the context ended the pause, else nil.
func SleepOn(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t, fired := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-fired:
		return nil
	}
}

// Func is a Clock whose Now is now and whose timers and tickers are the
// wall clock's: for a test that sets the time it reads (a fixed "now")
// but waits in real time.
func Func(now func() time.Time) Clock { return funcClock{now: now} }

type funcClock struct {
	Real
	now func() time.Time
}

func (c funcClock) Now() time.Time { return c.now() }
