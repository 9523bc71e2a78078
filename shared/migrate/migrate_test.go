package migrate_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/migrate"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// TestEachStepRunsOnce: eight runs at once on a fresh table apply each
// step exactly once, in order; a step that fails stops the ones after it
// and is retried by the next run; a run that died holding a step is taken
// over once its lease is out; a second run finds nothing pending.
func TestEachStepRunsOnce(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := context.Background()
	var runs [3]atomic.Int64
	var order []string
	var mu sync.Mutex
	failSecond := atomic.Bool{}
	failSecond.Store(true)
	var met chan struct{} // closed when a run of applyAtOnce met a held step
	step := func(i int, id string) migrate.Step {
		return migrate.Step{ID: id, What: "step " + id, Run: func(context.Context, *store.DB) error {
			if i == 1 && failSecond.Load() {
				return errors.New("the second step's first try fails")
			}
			runs[i].Add(1)
			mu.Lock()
			order = append(order, id)
			mu.Unlock()
			select { // held until another run has met the lease
			case <-met:
			case <-time.After(10 * time.Second):
			}
			return nil
		}}
	}
	steps := []migrate.Step{step(0, "2026-11-24-a"), step(1, "2026-11-24-b"), step(2, "2026-11-24-c")}
	lease := clock.NewManual(time.Now())
	db.Clock = lease
	// applyAtOnce runs eight Applies at once and returns their errors.
	applyAtOnce := func() []error {
		met = make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = migrate.Apply(ctx, db, steps)
				if errors.Is(errs[i], migrate.ErrHeld) {
					once.Do(func() { close(met) })
				}
			}()
		}
		wg.Wait()
		return errs
	}
	errs := applyAtOnce()
	if runs[0].Load() != 1 || runs[1].Load() != 0 || runs[2].Load() != 0 {
		t.Fatalf("with the second step failing: runs %d %d %d (errors %v)", runs[0].Load(), runs[1].Load(), runs[2].Load(), errs)
	}
	if !slices.ContainsFunc(errs, func(err error) bool { return errors.Is(err, migrate.ErrHeld) }) {
		t.Fatalf("no run met the first step's lease: %v", errs)
	}
	failSecond.Store(false)
	errs = applyAtOnce()
	for i := range steps {
		if runs[i].Load() != 1 {
			t.Fatalf("step %d ran %d times (errors %v)", i, runs[i].Load(), errs)
		}
	}
	if len(order) != 3 || order[0] != "2026-11-24-a" || order[1] != "2026-11-24-b" || order[2] != "2026-11-24-c" {
		t.Fatalf("order %v", order)
	}
	status, err := migrate.List(ctx, db, steps)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range status {
		if s.AppliedAt == "" {
			t.Fatalf("%s is not recorded as applied", s.ID)
		}
	}
	if applied, err := migrate.Apply(ctx, db, steps); err != nil || len(applied) != 0 {
		t.Fatalf("a second run applied %v (%v)", applied, err)
	}

	// A run that died holding a step: the next waits out the lease.
	held := []migrate.Step{{ID: "2026-11-24-d", What: "dies", Run: func(context.Context, *store.DB) error { panic("killed") }}}
	func() {
		defer func() { _ = recover() }()
		_, _ = migrate.Apply(ctx, db, held)
	}()
	ran := false
	held[0].Run = func(context.Context, *store.DB) error { ran = true; return nil }
	if _, err := migrate.Apply(ctx, db, held); !errors.Is(err, migrate.ErrHeld) || ran {
		t.Fatalf("within the lease: %v, ran %v", err, ran)
	}
	lease.Advance(migrate.Lease - time.Second)
	if _, err := migrate.Apply(ctx, db, held); !errors.Is(err, migrate.ErrHeld) || ran {
		t.Fatalf("a second before the lease ends: %v, ran %v", err, ran)
	}
	lease.Advance(2 * time.Second)
	if applied, err := migrate.Apply(ctx, db, held); err != nil || len(applied) != 1 || !ran {
		t.Fatalf("after the lease: %v %v, ran %v", applied, err, ran)
	}
	if _, err := migrate.Apply(ctx, db, append(held, held[0])); err == nil {
		t.Fatal("a repeated step id was accepted")
	}
}
