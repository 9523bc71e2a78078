package app_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/clock"
)

type countingSweeper struct{ n atomic.Int32 }

func (s *countingSweeper) SweepClaims(context.Context) (int, error) { s.n.Add(1); return 0, nil }

// TestSweepClaimsEveryRunsOnItsClock: the devserver's claim sweep comes
// once per interval of its clock, and not before: the test moves a manual
// clock through three minutes instead of waiting them out (in a synctest
// bubble, so that synctest.Wait says when the sweeper has acted on a move).
func TestSweepClaimsEveryRunsOnItsClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := clock.NewManual(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
		s := &countingSweeper{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			app.SweepClaimsEvery(ctx, s, m, time.Minute, app.Metrics{Log: slog.New(slog.DiscardHandler)})
		}()
		synctest.Wait()
		if m.Pending() != 1 {
			t.Fatalf("the sweeper waits on %d timers of its clock, want its ticker", m.Pending())
		}
		m.Advance(59 * time.Second)
		synctest.Wait()
		if n := s.n.Load(); n != 0 {
			t.Fatalf("%d sweeps before the first minute was out", n)
		}
		for i := range int32(3) {
			m.Advance(time.Minute)
			synctest.Wait()
			if n := s.n.Load(); n != i+1 {
				t.Fatalf("%d sweeps after %d minutes, want %d", n, i+1, i+1)
			}
		}
		cancel()
		<-done
	})
}
