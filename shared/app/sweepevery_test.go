package app_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/clock"
)

type countingSweeper struct{ n atomic.Int32 }

func (s *countingSweeper) SweepClaims(context.Context) (int, error) { s.n.Add(1); return 0, nil }

// TestSweepClaimsEveryRunsOnItsClock: the devserver's claim sweep comes
// once per interval of its clock, and not before: a test moves a manual
// clock through three minutes instead of waiting them out.
func TestSweepClaimsEveryRunsOnItsClock(t *testing.T) {
	m := clock.NewManual(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	s := &countingSweeper{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		app.SweepClaimsEvery(ctx, s, m, time.Minute, app.Metrics{Log: slog.New(slog.DiscardHandler)})
	}()
	if err := m.AwaitPending(ctx, 1); err != nil {
		t.Fatalf("the sweeper set no ticker: %v", err)
	}
	waitFor := func(want int32) {
		t.Helper()
		for s.n.Load() < want && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		if got := s.n.Load(); got != want {
			t.Fatalf("%d sweeps, want %d", got, want)
		}
	}
	m.Advance(59 * time.Second)
	time.Sleep(10 * time.Millisecond) // room for a wrong early sweep to show
	if n := s.n.Load(); n != 0 {
		t.Fatalf("%d sweeps before the first minute was out", n)
	}
	for i := range int32(3) {
		m.Advance(time.Minute)
		waitFor(i + 1)
	}
	cancel()
	<-done
}
