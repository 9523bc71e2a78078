package codedeploy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/clock"
)

type fakeAlias struct {
	mu             sync.Mutex
	primary, extra string
	weight         float64
	steps          []string
}

func (a *fakeAlias) Route(p, e string, w float64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.primary, a.extra, a.weight = p, e, w
	a.steps = append(a.steps, fmt.Sprintf("%s+%s@%.0f", p, e, 100*w))
	return nil
}

func (a *fakeAlias) Routing() (string, string, float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.primary, a.extra, a.weight
}

// TestConfigurationsShiftAsCodeDeploysDo: the predefined configurations'
// steps (canary: its share, then all; linear: its share each interval),
// an alarm in ALARM stopping a deployment and rolling it back, and one in
// ALARM at the start stopping it before any traffic moves.
func TestConfigurationsShiftAsCodeDeploysDo(t *testing.T) {
	for name, want := range map[string]string{
		"CodeDeployDefault.LambdaCanary10Percent5Minutes":     "[1+2@10 2+@0]",
		"CodeDeployDefault.LambdaLinear10PercentEvery1Minute": "[1+2@10 1+2@20 1+2@30 1+2@40 1+2@50 1+2@60 1+2@70 1+2@80 1+2@90 2+@0]",
		"CodeDeployDefault.LambdaAllAtOnce":                   "[2+@0]",
	} {
		shift, err := ParseConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		a := &fakeAlias{primary: "1"}
		s := &Service{Scale: 6000, AlarmState: func(string) string { return "OK" }}
		d := s.Deploy(context.Background(), "fn", a, &Group{AutoRollback: true}, shift, "2")
		<-d.Done()
		if st, _ := d.Status(); st != "Succeeded" || fmt.Sprint(a.steps) != want {
			t.Errorf("%s: %s, steps %v, want %s", name, st, a.steps, want)
		}
	}
	shift, _ := ParseConfig("CodeDeployDefault.LambdaCanary10Percent10Minutes")
	var mu sync.Mutex
	state := "OK"
	a := &fakeAlias{primary: "1"}
	s := &Service{Scale: 600, AlarmState: func(string) string { mu.Lock(); defer mu.Unlock(); return state }}
	d := s.Deploy(context.Background(), "fn", a, &Group{Alarms: []string{"v-5xx"}, AutoRollback: true}, shift, "2")
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	state = "ALARM"
	mu.Unlock()
	<-d.Done()
	if st, why := d.Status(); st != "Stopped" || fmt.Sprint(a.steps) != "[1+2@10 1+@0]" {
		t.Errorf("an alarm during the canary: %s (%s), steps %v", st, why, a.steps)
	}
	a = &fakeAlias{primary: "1"}
	d = s.Deploy(context.Background(), "fn", a, &Group{Alarms: []string{"v-5xx"}, AutoRollback: true}, shift, "3")
	<-d.Done()
	if st, _ := d.Status(); st != "Stopped" || fmt.Sprint(a.steps) != "[1+@0]" {
		t.Errorf("an alarm at the start: %s, steps %v", st, a.steps)
	}
	if _, err := ParseConfig("CodeDeployDefault.OneAtATime"); err == nil {
		t.Error("a server configuration was accepted")
	}
}

// TestOnAManualClockEachMinuteIsActedOnBeforeTheNext: with a manual
// clock, a deployment moves only when the clock does, and Advance returns
// once it has acted: a linear configuration is 10 % more after each
// minute, whatever the machine's speed; an alarm that the minute's tick
// puts in ALARM (as CloudWatch's evaluation at the minute's end would)
// has stopped the canary and rolled it back when Advance returns; a hook
// that reports nothing fails the deployment when an hour has passed on
// the clock, not before.
func TestOnAManualClockEachMinuteIsActedOnBeforeTheNext(t *testing.T) {
	start := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	advance := func(t *testing.T, m *clock.Manual, d time.Duration) {
		t.Helper()
		if _, err := m.Advance(d, 10*time.Second); err != nil {
			t.Fatalf("advance %v: %v", d, err)
		}
	}
	t.Run("linear", func(t *testing.T) {
		m := clock.NewManual(start, time.Minute)
		shift, _ := ParseConfig("CodeDeployDefault.LambdaLinear10PercentEvery1Minute")
		a := &fakeAlias{primary: "1"}
		s := &Service{Clock: m, AlarmState: func(string) string { return "OK" }}
		d := s.Deploy(context.Background(), "fn", a, &Group{Alarms: []string{"v-5xx"}, AutoRollback: true}, shift, "2")
		advance(t, m, time.Second) // the deployment starts, shifts its first tenth and waits on the clock
		for minute := 1; minute <= 9; minute++ {
			if pct, _ := d.Traffic(); pct != float64(10*minute) {
				t.Fatalf("after %d minutes the new version has %v%%, want %d%% (steps %v)", minute-1, pct, 10*minute, a.steps)
			}
			advance(t, m, time.Minute)
		}
		if st, why := d.Status(); st != "Succeeded" || len(a.steps) != 10 {
			t.Errorf("after ten minutes: %s (%s), steps %v; want Succeeded in 10 steps", st, why, a.steps)
		}
	})
	t.Run("canary stopped by an alarm", func(t *testing.T) {
		m := clock.NewManual(start, time.Minute)
		var mu sync.Mutex
		state, minutes := "OK", 0
		m.OnTick(func(time.Time) { // the alarm breaches from the end of minute 2
			mu.Lock()
			defer mu.Unlock()
			if minutes++; minutes == 2 {
				state = "ALARM"
			}
		})
		shift, _ := ParseConfig("CodeDeployDefault.LambdaCanary10Percent10Minutes")
		a := &fakeAlias{primary: "1"}
		s := &Service{Clock: m, AlarmState: func(string) string { mu.Lock(); defer mu.Unlock(); return state }}
		d := s.Deploy(context.Background(), "fn", a, &Group{Alarms: []string{"v-5xx"}, AutoRollback: true}, shift, "2")
		advance(t, m, time.Minute)
		if st, _ := d.Status(); st != "InProgress" || fmt.Sprint(a.steps) != "[1+2@10]" {
			t.Fatalf("after minute 1 (alarm OK): %s, steps %v; want InProgress at 10%%", st, a.steps)
		}
		advance(t, m, time.Minute)
		st, why := d.Status()
		if pct, _ := d.Traffic(); st != "Stopped" || pct != 0 || fmt.Sprint(a.steps) != "[1+2@10 1+@0]" || !strings.Contains(why, "v-5xx") {
			t.Errorf("after minute 2 (alarm in ALARM at its end): %s (%s), %v%% on the new version, steps %v; want Stopped and rolled back", st, why, pct, a.steps)
		}
	})
	t.Run("hook silent for an hour", func(t *testing.T) {
		m := clock.NewManual(start, time.Minute)
		shift, _ := ParseConfig("CodeDeployDefault.LambdaAllAtOnce")
		a := &fakeAlias{primary: "1"}
		s := &Service{Clock: m, AlarmState: func(string) string { return "OK" }, Invoke: func(context.Context, string, []byte) {}}
		d := s.Deploy(context.Background(), "fn", a, &Group{Hook: "check", AutoRollback: true}, shift, "2")
		advance(t, m, 59*time.Minute)
		if st, _ := d.Status(); st != "InProgress" {
			t.Fatalf("a hook silent for 59 minutes: %s, want InProgress", st)
		}
		advance(t, m, time.Minute)
		if st, why := d.Status(); st != "Failed" || len(a.steps) != 0 {
			t.Errorf("a hook silent for an hour: %s (%s), steps %v; want Failed, the alias unmoved", st, why, a.steps)
		}
	})
}
