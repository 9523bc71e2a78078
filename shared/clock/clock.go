// Package clock holds how the service waits: a pause that ends early when
// its context does, so a retry inside a request never outlives the request.
package clock

import (
	"context"
	"time"
)

// Sleep pauses for d, or until ctx is done, whichever comes first; it
// returns ctx's error when the context ended the pause, else nil.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
