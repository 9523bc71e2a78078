package clock

import (
	"context"
	"fmt"
	shared "github.com/practice-api/practice-api/shared/clock"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestManualMovesOnlyWhenAdvanced: the manual clock stands still until
// Advance; at each minute's end its tick functions run before the
// participants due wake, and Advance returns only once each participant
// has acted and waits again (its next wait counted); a participant that
// never waits again is reported, not waited for forever; Sleep (no
// participant) wakes when the clock has passed its end.
func TestManualMovesOnlyWhenAdvanced(t *testing.T) {
	start := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	m := NewManual(start, time.Minute)
	var mu sync.Mutex
	var events []string
	record := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	m.OnTick(func(now time.Time) { record("tick " + now.Format("15:04:05")) })

	w := m.Join()
	acted := make(chan struct{})
	go func() {
		defer w.Leave()
		for i := 0; i < 3; i++ {
			if !w.Wait(context.Background(), 30*time.Second, nil) {
				record("woken otherwise")
				return
			}
			time.Sleep(20 * time.Millisecond) // acting takes time: Advance waits for it
			record("acted " + m.Now().Format("15:04:05"))
		}
		close(acted)
	}()
	slept := make(chan error, 1)
	go func() { slept <- m.Sleep(context.Background(), 90*time.Second) }()

	time.Sleep(50 * time.Millisecond)
	if got := m.Now(); !got.Equal(start) {
		t.Fatalf("the clock moved by itself: %v", got)
	}
	if _, err := m.Advance(time.Minute, 5*time.Second); err != nil {
		t.Fatalf("advance: %v", err)
	}
	mu.Lock()
	got := strings.Join(events, ", ")
	mu.Unlock()
	if want := "acted 06:00:30, tick 06:01:00, acted 06:01:00"; got != want {
		t.Fatalf("after a minute: %s, want %s (the tick first, each wait acted on before Advance returned)", got, want)
	}
	select {
	case err := <-slept:
		t.Fatalf("Sleep(90s) ended after a minute on the clock (%v)", err)
	default:
	}
	if _, err := m.Advance(time.Minute, 5*time.Second); err != nil {
		t.Fatalf("advance: %v", err)
	}
	<-acted
	select {
	case err := <-slept:
		if err != nil {
			t.Fatalf("Sleep: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Sleep(90s) did not end after two minutes on the clock")
	}

	// A participant that acts without end: Advance says so.
	stuck := m.Join()
	defer stuck.Leave()
	_, err := m.Advance(time.Minute, 200*time.Millisecond)
	if err == nil || !strings.Contains(fmt.Sprint(err), "1 participants still acting") {
		t.Errorf("a participant that never waits: Advance answered %v, want an error naming it", err)
	}
}

// TestScaledRunsFaster: the scaled clock's time runs Scale times faster
// than the wall clock's, and so do its waits.
func TestScaledRunsFaster(t *testing.T) {
	s := NewScaled(600)
	began, at := time.Now(), s.Now()
	w := s.Join()
	if !w.Wait(context.Background(), time.Minute, nil) { // 100 ms
		t.Fatal("a minute's wait at scale 600 ended otherwise")
	}
	if real := time.Since(began); real > 5*time.Second {
		t.Errorf("a minute at scale 600 took %v of real time", real)
	}
	if moved := s.Now().Sub(at); moved < time.Minute {
		t.Errorf("after a minute's wait the clock moved %v", moved)
	}
	wake := make(chan struct{})
	close(wake)
	if w.Wait(context.Background(), time.Hour, wake) {
		t.Error("a closed wake channel did not end the wait")
	}
}

// TestAtIsTheClocksTimeAtAWallMoment: a message sent before the clock
// moved ten minutes on has waited ten minutes on it.
func TestAtIsTheClocksTimeAtAWallMoment(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewManual(start, time.Minute)
	before := time.Now()
	if got := m.At(before); !got.Equal(start) {
		t.Fatalf("before any move: At %v, want %v", got, start)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := m.Advance(10*time.Minute, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := m.At(before); !got.Equal(start) {
		t.Errorf("At(a moment before the advance) %v, want %v", got, start)
	}
	if age := m.Now().Sub(m.At(before)); age != 10*time.Minute {
		t.Errorf("a wait from before the advance: %v on the clock, want 10m", age)
	}
	if got := m.At(time.Now()); !got.Equal(start.Add(10 * time.Minute)) {
		t.Errorf("At(now) %v, want %v", got, start.Add(10*time.Minute))
	}
}

// TestManualIsTheServicesClock: the manual clock is a shared/clock.Clock:
// a timer, a ticker and an AfterFunc fire once Advance has passed their
// times, not before, and a stopped timer never does.
func TestManualIsTheServicesClock(t *testing.T) {
	start := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	m := NewManual(start, time.Minute)
	var c shared.Clock = m
	slept := make(chan error, 1)
	go func() { slept <- shared.SleepOn(context.Background(), c, 90*time.Second) }()
	ticker, ticks := c.NewTicker(time.Minute)
	defer ticker.Stop()
	called := make(chan time.Time, 1)
	c.AfterFunc(30*time.Second, func() { called <- m.Now() })
	stopped, never := c.NewTimer(10 * time.Second)
	if !stopped.Stop() {
		t.Error("Stop of a timer that had not fired answered false")
	}
	for deadline := time.Now().Add(10 * time.Second); m.Sleeping() < 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d waits on the clock, want 3 (the sleep, the ticker, the AfterFunc)", m.Sleeping())
		}
	}
	within := func(what string, ch <-chan time.Time) time.Time {
		t.Helper()
		select {
		case at := <-ch:
			return at
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not fire", what)
			return time.Time{}
		}
	}
	if _, err := m.Advance(time.Minute, time.Second); err != nil {
		t.Fatal(err)
	}
	if at := within("the AfterFunc", called); !at.Equal(start.Add(30 * time.Second)) {
		t.Errorf("the AfterFunc of 30 s ran at %v", at)
	}
	if at := within("the ticker", ticks); !at.Equal(start.Add(time.Minute)) {
		t.Errorf("the first tick at %v, want %v", at, start.Add(time.Minute))
	}
	select {
	case err := <-slept:
		t.Fatalf("a 90 s sleep ended after a minute on the clock (%v)", err)
	case <-never:
		t.Fatal("a stopped timer fired")
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := m.Advance(time.Minute, time.Second); err != nil {
		t.Fatal(err)
	}
	if at := within("the ticker", ticks); !at.Equal(start.Add(2 * time.Minute)) {
		t.Errorf("the second tick at %v, want %v", at, start.Add(2*time.Minute))
	}
	select {
	case err := <-slept:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a 90 s sleep had not ended after two minutes on the clock")
	}
}
