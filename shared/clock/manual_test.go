package clock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/practice-api/practice-api/shared/clock"
)

var start = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// received is what ch holds now (the zero time when nothing).
func received(ch <-chan time.Time) time.Time {
	select {
	case at := <-ch:
		return at
	default:
		return time.Time{}
	}
}

func TestManualTimer(t *testing.T) {
	t.Run("fires when the clock reaches it, at its own time", func(t *testing.T) {
		m := clock.NewManual(start)
		_, ch := m.NewTimer(time.Minute)
		m.Advance(59 * time.Second)
		if at := received(ch); !at.IsZero() {
			t.Fatalf("fired at %v, a second early", at)
		}
		m.Advance(time.Hour)
		if at := received(ch); !at.Equal(start.Add(time.Minute)) {
			t.Fatalf("fired at %v, want %v", at, start.Add(time.Minute))
		}
		if got, want := m.Now(), start.Add(time.Hour+59*time.Second); !got.Equal(want) {
			t.Fatalf("Now = %v, want %v", got, want)
		}
		if m.Pending() != 0 {
			t.Fatalf("a fired timer is still pending")
		}
	})
	t.Run("a stopped timer does not fire; a reset one fires from the new now", func(t *testing.T) {
		m := clock.NewManual(start)
		tm, ch := m.NewTimer(time.Minute)
		if !tm.Stop() {
			t.Fatal("Stop of a pending timer = false")
		}
		m.Advance(2 * time.Minute)
		if at := received(ch); !at.IsZero() {
			t.Fatalf("a stopped timer fired at %v", at)
		}
		if tm.Reset(time.Minute) {
			t.Fatal("Reset of a stopped timer = true")
		}
		m.Advance(time.Minute)
		if at := received(ch); !at.Equal(start.Add(3 * time.Minute)) {
			t.Fatalf("reset timer fired at %v, want %v", at, start.Add(3*time.Minute))
		}
		if tm.Stop() {
			t.Fatal("Stop of a fired timer = true")
		}
	})
	t.Run("a timer of no duration fires at once", func(t *testing.T) {
		m := clock.NewManual(start)
		if _, ch := m.NewTimer(0); !received(ch).Equal(start) {
			t.Fatal("NewTimer(0) did not fire at once")
		}
		ran := make(chan struct{})
		m.AfterFunc(-time.Second, func() { close(ran) })
		select {
		case <-ran:
		case <-time.After(30 * time.Second):
			t.Fatal("AfterFunc(-1s) did not run")
		}
		if m.Pending() != 0 {
			t.Fatalf("%d pending after timers of no duration", m.Pending())
		}
	})
	t.Run("timers fire in time order, each seeing its own now", func(t *testing.T) {
		m := clock.NewManual(start)
		var seen []time.Duration
		for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
			m.AfterFunc(d, func() { seen = append(seen, m.Now().Sub(start)) })
		}
		m.Advance(10 * time.Second)
		if len(seen) != 3 || seen[0] != time.Second || seen[1] != 2*time.Second || seen[2] != 3*time.Second {
			t.Fatalf("AfterFuncs ran at %v, want [1s 2s 3s]", seen)
		}
	})
}

func TestManualTicker(t *testing.T) {
	m := clock.NewManual(start)
	tk, ch := m.NewTicker(10 * time.Second)
	m.Advance(25 * time.Second) // two ticks due: the second is dropped, the first unread
	if at := received(ch); !at.Equal(start.Add(10 * time.Second)) {
		t.Fatalf("first tick at %v, want +10s", at)
	}
	if at := received(ch); !at.IsZero() {
		t.Fatalf("a dropped tick came at %v", at)
	}
	m.Advance(5 * time.Second)
	if at := received(ch); !at.Equal(start.Add(30 * time.Second)) {
		t.Fatalf("third tick at %v, want +30s", at)
	}
	tk.Reset(time.Minute)
	m.Advance(59 * time.Second)
	if at := received(ch); !at.IsZero() {
		t.Fatalf("tick at %v before the reset period", at)
	}
	m.Advance(time.Second)
	if at := received(ch); !at.Equal(start.Add(90 * time.Second)) {
		t.Fatalf("tick at %v, want +90s", at)
	}
	tk.Stop()
	m.Advance(time.Hour)
	if at := received(ch); !at.IsZero() || m.Pending() != 0 {
		t.Fatalf("a stopped ticker ticked at %v (pending %d)", at, m.Pending())
	}
}

// A goroutine sleeping on the manual clock wakes when a test moves it,
// and not before; AwaitPending tells the test it has reached its sleep.
func TestManualSleepOn(t *testing.T) {
	m := clock.NewManual(start)
	done := make(chan error, 1)
	go func() { done <- clock.SleepOn(context.Background(), m, time.Hour) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.AwaitPending(ctx, 1); err != nil {
		t.Fatalf("the sleeper never set its timer: %v", err)
	}
	m.Advance(59 * time.Minute)
	select {
	case err := <-done:
		t.Fatalf("woke %v a minute early", err)
	default:
	}
	m.Advance(time.Minute)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("SleepOn = %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the sleeper did not wake when its hour had passed")
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := clock.SleepOn(cctx, m, time.Hour); err == nil {
		t.Fatal("SleepOn with a done context = nil")
	}
}

// Many goroutines set, stop and wait on timers while others move the
// clock (run with -race): every timer that was not stopped fires once.
func TestManualConcurrent(t *testing.T) {
	m := clock.NewManual(start)
	var fired atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			for j := range 50 {
				m.AfterFunc(time.Duration(i+j)*time.Millisecond, func() { fired.Add(1) })
				tm, _ := m.NewTimer(time.Millisecond)
				tm.Stop()
				_ = m.Now()
			}
		})
		wg.Go(func() { m.Advance(time.Millisecond) })
	}
	wg.Wait()
	m.Advance(time.Second)
	if got := fired.Load(); got != 20*50 {
		t.Fatalf("%d AfterFuncs ran, want %d", got, 20*50)
	}
}

// Real is the time package; in a synctest bubble its timers and tickers
// run on the bubble's fake clock.
func TestReal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock.Or(nil)
		t0 := c.Now()
		_, tick := c.NewTicker(time.Second)
		_, timer := c.NewTimer(3 * time.Second)
		ticks := 0
		for range 3 {
			<-tick
			ticks++
		}
		<-timer
		if got := clock.Since(c, t0); got != 3*time.Second || ticks != 3 {
			t.Fatalf("3 ticks and the timer after %v, want 3s", got)
		}
		var ran atomic.Bool
		c.AfterFunc(time.Second, func() { ran.Store(true) })
		_, later := c.NewTimer(time.Second)
		<-later
		synctest.Wait()
		if !ran.Load() {
			t.Fatal("AfterFunc did not run")
		}
	})
	fixed := clock.Func(func() time.Time { return start })
	if !fixed.Now().Equal(start) {
		t.Fatalf("Func's Now = %v, want %v", fixed.Now(), start)
	}
}
