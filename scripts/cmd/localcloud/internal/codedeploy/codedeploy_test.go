package codedeploy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
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
