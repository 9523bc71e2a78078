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
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/clock"
)

// Alias is what a deployment shifts (a lambda.Alias).
type Alias interface {
	Route(primary, extra string, weight float64) error
	Routing() (primary, extra string, weight float64)
}

// Group is an AWS::CodeDeploy::DeploymentGroup: its configuration, the
// alarms it watches and its rollback events; with the alias's
// BeforeAllowTraffic hook (the function's logical id; "" for none).
type Group struct {
	ID, Config   string
	Alarms       []string // alarm logical ids
	AutoRollback bool
	Hook         string
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
	// Group is its deployment group's name (localcloud's: the logical id);
	// Name the function's name, Alias the alias it shifts (its AppSpec's).
	Group, Name, Alias string

	mu     sync.Mutex
	status string // InProgress, Succeeded, Stopped, Failed
	reason string
	done   chan struct{}
	hookID string // the BeforeAllowTraffic hook's execution id, while it runs
	// hookReported is closed when the hook has put its status, hookStatus.
	hookReported chan struct{}
	hookStatus   string
	// percent is the new version's share of the traffic now (0 to 100);
	// shifted the clock's time when it last changed.
	percent float64
	shifted time.Time
}

// AppSpec is the deployment's AppSpec content, as CloudFormation's
// deployments of a Lambda alias carry it (the function, its alias, the
// version it leaves and the one it shifts to).
// https://docs.aws.amazon.com/codedeploy/latest/userguide/reference-appspec-file-structure-resources.html
func (d *Deployment) AppSpec() string {
	b, _ := json.Marshal(map[string]any{"version": 0.0, "Resources": []any{map[string]any{d.Name: map[string]any{"Type": "AWS::Lambda::Function",
		"Properties": map[string]any{"Name": d.Name, "Alias": d.Alias, "CurrentVersion": d.From, "TargetVersion": d.To}}}}})
	return string(b)
}

// PutHookStatus is the hook's PutLifecycleEventHookExecutionStatus: its
// Succeeded or Failed, once, for the execution id it was invoked with.
func (d *Deployment) PutHookStatus(execID, status string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hookID == "" || execID != d.hookID {
		return fmt.Errorf("InvalidLifecycleEventHookExecutionIdException: no lifecycle event hook execution %q in deployment %s", execID, d.ID)
	}
	if status != "Succeeded" && status != "Failed" {
		return fmt.Errorf("InvalidLifecycleEventHookExecutionStatusException: %q (Succeeded or Failed)", status)
	}
	if d.hookStatus != "" {
		return fmt.Errorf("LifecycleEventAlreadyCompletedException: the hook execution %s has already reported", execID)
	}
	d.hookStatus = status
	close(d.hookReported)
	return nil
}

// Status is the deployment's status and why it ended so.
func (d *Deployment) Status() (string, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status, d.reason
}

// Traffic is the new version's share of the alias's traffic now (0 to
// 100: 0 before the first shift and after a rollback), and the time, on
// the service's clock, when it last changed.
func (d *Deployment) Traffic() (percent float64, since time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.percent, d.shifted
}

func (d *Deployment) setTraffic(percent float64, at time.Time) {
	d.mu.Lock()
	d.percent, d.shifted = percent, at
	d.mu.Unlock()
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
	// Scale divides every interval (LOCALCLOUD_TIME_SCALE) when Clock is
	// nil.
	Scale float64
	// Clock is the time the deployments wait on (nil: the wall clock,
	// Scale times faster). With a manual clock (clock.Manual) a deployment
	// is one of its participants: the clock's Advance returns once each
	// deployment has polled its alarms and shifted, stopped or finished.
	Clock clock.Clock
	// Target is told the version each function's release targets while
	// it runs ("" when none): its alarms watch that version.
	Target func(function, version string)
	// Invoke invokes a hook function (its logical id) with CodeDeploy's
	// event, asynchronously: it returns at once, and the hook reports by
	// PutLifecycleEventHookExecutionStatus (Deployment.PutHookStatus).
	Invoke func(ctx context.Context, function string, event []byte)

	deployments sync.Map // id → *Deployment
}

// Deployment is a deployment by its id (nil: none).
func (s *Service) Deployment(id string) *Deployment {
	d, _ := s.deployments.Load(id)
	d2, _ := d.(*Deployment)
	return d2
}

// HookTimeout is how long a deployment waits for a lifecycle hook's
// status before it fails (an hour, on the clock).
// https://docs.aws.amazon.com/codedeploy/latest/userguide/reference-appspec-file-structure-hooks.html#appspec-hooks-lambda
const HookTimeout = time.Hour

// AlarmPoll is how often, on the clock, a deployment polls its alarms
// while it waits: CodeDeploy stops a deployment when one of its group's
// alarms goes into ALARM at any time during it (and, with automatic
// rollback on DEPLOYMENT_STOP_ON_ALARM, moves the alias back).
// https://docs.aws.amazon.com/codedeploy/latest/userguide/deployment-groups-configure-advanced-options.html
const AlarmPoll = 10 * time.Second

var defaultClocks sync.Map // scale → *clock.Scaled

func (s *Service) clock() clock.Clock {
	if s.Clock != nil {
		return s.Clock
	}
	c, _ := defaultClocks.LoadOrStore(s.Scale, clock.NewScaled(s.Scale))
	return c.(clock.Clock)
}

// Deploy shifts alias from its current version to target as shift says,
// watching group's alarms; it returns at once, and the deployment runs
// until it succeeds or stops.
func (s *Service) Deploy(ctx context.Context, function string, alias Alias, group *Group, shift Shift, target string) *Deployment {
	from, _, _ := alias.Routing()
	d := &Deployment{ID: "d-" + uuid.NewString()[:9], Function: function, From: from, To: target, Config: shift.Name, status: "InProgress", done: make(chan struct{}),
		Group: group.ID, Name: function, hookReported: make(chan struct{})}
	if n, ok := alias.(interface{ Name() string }); ok {
		d.Name = n.Name()
	}
	if n, ok := alias.(interface{ ARN() string }); ok { // function:name:alias
		d.Alias = n.ARN()[strings.LastIndexByte(n.ARN(), ':')+1:]
	}
	s.deployments.Store(d.ID, d)
	w := s.clock().Join() // before it returns: a manual clock's next Advance waits for it
	go func() {
		defer w.Leave()
		s.run(ctx, d, w, alias, group, shift)
	}()
	return d
}

func (s *Service) run(ctx context.Context, d *Deployment, w clock.Waiter, alias Alias, group *Group, shift Shift) {
	clk := s.clock()
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
			d.setTraffic(0, clk.Now())
			reason += "; rolled back to version " + d.From
		}
		log.Warn("codedeploy deployment stopped", "reason", reason)
		d.end("Stopped", reason)
	}
	// wait holds a step for its interval on the clock, polling the
	// alarms every AlarmPoll and once more at its end (an alarm that went
	// into ALARM in the step's last minute stops the next shift too).
	wait := func(step time.Duration) bool {
		until := clk.Now().Add(step)
		for {
			if a := inAlarm(); a != "" {
				stop("alarm " + a + " is in ALARM")
				return false
			}
			left := until.Sub(clk.Now())
			if left <= 0 {
				return true
			}
			w.Wait(ctx, min(AlarmPoll, left), nil)
			if ctx.Err() != nil {
				stop("localcloud is stopping")
				return false
			}
		}
	}
	if a := inAlarm(); a != "" {
		stop("alarm " + a + " was in ALARM when the deployment started")
		return
	}
	log.Info("codedeploy deployment started")
	// BeforeAllowTraffic: the hook checks the new version before any
	// traffic moves; a Failed status, or none within the hour, fails the
	// deployment (the alias has not moved).
	if group.Hook != "" && s.Invoke != nil {
		exec := uuid.NewString()
		d.mu.Lock()
		d.hookID = exec
		d.mu.Unlock()
		event, _ := json.Marshal(map[string]string{"DeploymentId": d.ID, "LifecycleEventHookExecutionId": exec})
		s.Invoke(ctx, group.Hook, event)
		var status string
		if w.Wait(ctx, HookTimeout, d.hookReported) {
			status = "not reported within an hour"
		} else if ctx.Err() != nil {
			stop("localcloud is stopping")
			return
		} else {
			d.mu.Lock()
			status = d.hookStatus
			d.mu.Unlock()
		}
		if status != "Succeeded" {
			reason := "the BeforeAllowTraffic hook " + group.Hook + ": " + status
			if group.AutoRollback {
				reason += "; rolled back to version " + d.From
			}
			log.Warn("codedeploy deployment failed", "reason", reason)
			d.end("Failed", reason)
			return
		}
		log.Info("codedeploy lifecycle hook succeeded", "hook", group.Hook)
	}
	for pct := shift.Percent; pct < 100; pct += shift.Percent {
		if err := alias.Route(d.From, d.To, pct/100); err != nil {
			d.end("Stopped", err.Error())
			return
		}
		d.setTraffic(pct, clk.Now())
		log.Info("codedeploy traffic shifted", "percent", pct, "at", clk.Now().Format(time.RFC3339))
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
	d.setTraffic(100, clk.Now())
	log.Info("codedeploy deployment succeeded", "percent", 100, "at", clk.Now().Format(time.RFC3339))
	d.end("Succeeded", "")
}
