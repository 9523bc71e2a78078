package clock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/practice-api/practice-api/shared/clock"
)

func TestSleep(t *testing.T) {
	t.Run("waits the whole pause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			if err := clock.Sleep(context.Background(), 3*time.Second); err != nil {
				t.Fatalf("Sleep = %v, want nil", err)
			}
			if got := time.Since(start); got != 3*time.Second {
				t.Fatalf("slept %v, want 3s", got)
			}
		})
	})
	t.Run("ends with its context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			if err := clock.Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Sleep = %v, want DeadlineExceeded", err)
			}
			if got := time.Since(start); got != time.Second {
				t.Fatalf("slept %v, want 1s (the context's deadline)", got)
			}
		})
	})
	t.Run("a done context does not wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := clock.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep = %v, want Canceled", err)
		}
	})
}
