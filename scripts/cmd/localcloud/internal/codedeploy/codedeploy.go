// Package codedeploy runs a function's release as CodeDeploy runs a
// Lambda deployment: the alias shifts to the new version by the
// deployment configuration (all at once, a canary share for an interval,
// or linear steps), while the deployment group's alarms are polled; an
// alarm in ALARM (at the start or at any poll) stops the deployment and,
// with automatic rollback, moves the alias back to the version it had.
// https://docs.aws.amazon.com/codedeploy/latest/userguide/deployment-configurations.html
// https://docs.aws.amazon.com/codedeploy/latest/userguide/monitoring-create-alarms.html
package codedeploy

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Alias is what a deployment shifts (a lambda.Alias).
type Alias interface {
	Route(primary, extra string, weight float64) error
	Routing() (primary, extra string, weight float64)
}

// Group is an AWS::CodeDeploy::DeploymentGroup: its configuration, the
// alarms it watches and its rollback events.
type Group struct {
	ID, Config   string
	Alarms       []string // alarm logical ids
	AutoRollback bool
}

// Shift is a deployment configuration: Percent to the new version for
// each Interval (canary: one step; linear: steps of Percent).
type Shift struct {
	Name     string
	Linear   bool
	Percent  float64
	Interval time.Duration
}

var predefined = regexp.MustCompile(`^CodeDeployDefault\.Lambda(AllAtOnce|Canary(\d+)Percent(\d+)Minutes?|Linear(\d+)PercentEvery(\d+)Minutes?)$`)

// ParseConfig reads one of CodeDeploy's predefined Lambda configurations
// (CodeDeployDefault.LambdaCanary10Percent5Minutes, …LinearNPercentEveryMMinutes,
// …AllAtOnce).
func ParseConfig(name string) (Shift, error) {
	m := predefined.FindStringSubmatch(name)
	if m == nil {
		return Shift{}, fmt.Errorf("deployment configuration %q is not one localcloud runs", name)
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	switch {
	case m[1] == "AllAtOnce":
		return Shift{Name: name, Percent: 100}, nil
	case m[2] != "":
		return Shift{Name: name, Percent: float64(atoi(m[2])), Interval: time.Duration(atoi(m[3])) * time.Minute}, nil
	default:
		return Shift{Name: name, Linear: true, Percent: float64(atoi(m[4])), Interval: time.Duration(atoi(m[5])) * time.Minute}, nil
	}
}

// Deployment is one release of a function.
type Deployment struct {
	ID, Function, From, To, Config string

	mu     sync.Mutex
	status string // InProgress, Succeeded, Stopped
	reason string
	done   chan struct{}
}

// Status is the deployment's status and why it ended so.
func (d *Deployment) Status() (string, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status, d.reason
}

// Done is closed when the deployment has ended.
func (d *Deployment) Done() <-chan struct{} { return d.done }

func (d *Deployment) end(status, reason string) {
	d.mu.Lock()
	d.status, d.reason = status, reason
	d.mu.Unlock()
	close(d.done)
}

// Service runs deployments.
type Service struct {
	// AlarmState is an alarm's state by its logical id.
	AlarmState func(id string) string
	// Scale divides every interval (LOCALCLOUD_TIME_SCALE).
	Scale float64
	// Target is told the version each function's release targets while
	// it runs ("" when none): its alarms watch that version.
	Target func(function, version string)
}

func (s *Service) scaled(d time.Duration) time.Duration {
	if s.Scale <= 0 {
		return d
	}
	return time.Duration(float64(d) / s.Scale)
}

// Deploy shifts alias from its current version to target as shift says,
// watching group's alarms; it returns at once, and the deployment runs
// until it succeeds or stops.
func (s *Service) Deploy(ctx context.Context, function string, alias Alias, group *Group, shift Shift, target string) *Deployment {
	from, _, _ := alias.Routing()
	d := &Deployment{ID: "d-" + uuid.NewString()[:9], Function: function, From: from, To: target, Config: shift.Name, status: "InProgress", done: make(chan struct{})}
	go s.run(ctx, d, alias, group, shift)
	return d
}

func (s *Service) run(ctx context.Context, d *Deployment, alias Alias, group *Group, shift Shift) {
	log := slog.With("deployment", d.ID, "function", d.Function, "from", d.From, "to", d.To, "config", shift.Name)
	if s.Target != nil {
		s.Target(d.Function, d.To)
		defer s.Target(d.Function, "")
	}
	inAlarm := func() string {
		for _, a := range group.Alarms {
			if s.AlarmState(a) == "ALARM" {
				return a
			}
		}
		return ""
	}
	stop := func(reason string) {
		if group.AutoRollback {
			_ = alias.Route(d.From, "", 0)
			reason += "; rolled back to version " + d.From
		}
		log.Warn("codedeploy deployment stopped", "reason", reason)
		d.end("Stopped", reason)
	}
	// wait holds a step for its interval, polling the alarms.
	wait := func(step time.Duration) bool {
		poll := s.scaled(10 * time.Second)
		until := time.Now().Add(s.scaled(step))
		for time.Now().Before(until) {
			if a := inAlarm(); a != "" {
				stop("alarm " + a + " is in ALARM")
				return false
			}
			select {
			case <-ctx.Done():
				stop("localcloud is stopping")
				return false
			case <-time.After(min(poll, time.Until(until))):
			}
		}
		return true
	}
	if a := inAlarm(); a != "" {
		stop("alarm " + a + " was in ALARM when the deployment started")
		return
	}
	log.Info("codedeploy deployment started")
	for pct := shift.Percent; pct < 100; pct += shift.Percent {
		if err := alias.Route(d.From, d.To, pct/100); err != nil {
			d.end("Stopped", err.Error())
			return
		}
		log.Info("codedeploy traffic shifted", "percent", pct)
		if !wait(shift.Interval) {
			return
		}
		if !shift.Linear {
			break
		}
	}
	if err := alias.Route(d.To, "", 0); err != nil {
		d.end("Stopped", err.Error())
		return
	}
	log.Info("codedeploy deployment succeeded", "percent", 100)
	d.end("Succeeded", "")
}
