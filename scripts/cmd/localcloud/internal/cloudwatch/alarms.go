package cloudwatch

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Alarm states.
const (
	OK               = "OK"
	InAlarm          = "ALARM"
	InsufficientData = "INSUFFICIENT_DATA"
)

// MetricStat is one metric an alarm reads, with its statistic and period.
// Its dimensions' values are as the template writes them (a Ref or a
// Fn::GetAtt may stand for one): they are resolved at each evaluation, so
// an alarm on "the version CloudFormation just published" follows a
// release.
type MetricStat struct {
	Namespace, Name string
	Dims            map[string]any
	Stat            string
	Period          time.Duration
}

// query is one entry of an alarm's Metrics (metric math).
type query struct {
	id     string
	stat   *MetricStat
	expr   Expr
	ret    bool
	period time.Duration
}

// Alarm is one AWS::CloudWatch::Alarm of the template.
type Alarm struct {
	ID, Description         string
	single                  *MetricStat
	queries                 []query
	Threshold               float64
	Compare                 string
	Evaluation, ToAlarm     int
	Missing                 string
	AlarmActions, OKActions []string // logical ids of topics
	// InsufficientDataActions are notified when the alarm goes into
	// INSUFFICIENT_DATA from another state (not at its creation: an
	// alarm starts there, and CloudWatch acts only on a change).
	InsufficientDataActions []string

	mu      sync.Mutex
	state   string
	reason  string
	changed time.Time
	fired   int // times it went into ALARM
	lapsed  int // times it went into INSUFFICIENT_DATA from another state
}

// Lapsed is how many times the alarm went into INSUFFICIENT_DATA from OK
// or ALARM: its data stopped (an alarm with InsufficientDataActions
// notifies then).
func (a *Alarm) Lapsed() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lapsed
}

// State is the alarm's state, and how many times it went into ALARM.
func (a *Alarm) State() (string, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state, a.fired
}

// Period is the alarm's period (its metric's, or the returned
// expression's).
func (a *Alarm) Period() time.Duration {
	if a.single != nil {
		return a.single.Period
	}
	for _, q := range a.queries {
		if q.ret {
			return q.period
		}
	}
	return time.Minute
}

// Namespaces are the namespaces the alarm reads.
func (a *Alarm) Namespaces() []string {
	var out []string
	if a.single != nil {
		out = append(out, a.single.Namespace)
	}
	for _, q := range a.queries {
		if q.stat != nil {
			out = append(out, q.stat.Namespace)
		}
	}
	return out
}

// ParseAlarm reads an alarm's properties; what it does not evaluate (an
// anomaly detection band, a metric math function other than IF) is an
// error, so localcloud stops rather than run an alarm that never fires.
func ParseAlarm(id string, p map[string]any) (*Alarm, error) {
	a := &Alarm{ID: id, state: InsufficientData, Threshold: num(p["Threshold"]), Compare: str(p["ComparisonOperator"]),
		Evaluation: int(num(p["EvaluationPeriods"])), Missing: str(p["TreatMissingData"])}
	a.Description = str(p["AlarmDescription"])
	a.ToAlarm = a.Evaluation
	if d, ok := p["DatapointsToAlarm"]; ok {
		a.ToAlarm = int(num(d))
	}
	if a.Missing == "" {
		a.Missing = "missing"
	}
	if _, ok := p["ThresholdMetricId"]; ok {
		return nil, fmt.Errorf("alarm %s: anomaly detection bands are not evaluated by localcloud", id)
	}
	switch a.Compare {
	case "GreaterThanThreshold", "GreaterThanOrEqualToThreshold", "LessThanThreshold", "LessThanOrEqualToThreshold":
	default:
		return nil, fmt.Errorf("alarm %s: comparison %q is not evaluated by localcloud", id, a.Compare)
	}
	for k, to := range map[string]*[]string{"AlarmActions": &a.AlarmActions, "OKActions": &a.OKActions, "InsufficientDataActions": &a.InsufficientDataActions} {
		acts, _ := p[k].([]any)
		for _, act := range acts {
			if ref := refID(act); ref != "" {
				*to = append(*to, ref)
			}
		}
	}
	if qs, ok := p["Metrics"].([]any); ok {
		for _, q := range qs {
			qm := q.(map[string]any)
			mq := query{id: str(qm["Id"]), ret: qm["ReturnData"] != false}
			if ms, ok := qm["MetricStat"].(map[string]any); ok {
				m := ms["Metric"].(map[string]any)
				mq.stat = &MetricStat{Namespace: str(m["Namespace"]), Name: str(m["MetricName"]), Dims: dims(m["Dimensions"]), Stat: str(ms["Stat"]),
					Period: time.Duration(num(ms["Period"])) * time.Second}
				mq.period = mq.stat.Period
			} else {
				e, _, err := ParseExpr(str(qm["Expression"]))
				if err != nil {
					return nil, fmt.Errorf("alarm %s: %w", id, err)
				}
				mq.expr, mq.period = e, time.Duration(num(qm["Period"]))*time.Second
			}
			a.queries = append(a.queries, mq)
		}
		for i := range a.queries { // an expression's period is its metrics' when unset
			if a.queries[i].period == 0 {
				for _, q := range a.queries {
					if q.stat != nil {
						a.queries[i].period = q.stat.Period
					}
				}
			}
		}
		return a, nil
	}
	stat := str(p["Statistic"])
	if stat == "" {
		stat = str(p["ExtendedStatistic"])
	}
	a.single = &MetricStat{Namespace: str(p["Namespace"]), Name: str(p["MetricName"]), Dims: dims(p["Dimensions"]), Stat: stat,
		Period: time.Duration(num(p["Period"])) * time.Second}
	return a, nil
}

func dims(v any) map[string]any {
	out := map[string]any{}
	list, _ := v.([]any)
	for _, d := range list {
		dm := d.(map[string]any)
		out[str(dm["Name"])] = dm["Value"]
	}
	return out
}

func str(v any) string { s, _ := v.(string); return s }

func num(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case string:
		var f float64
		fmt.Sscan(n, &f)
		return f
	}
	return 0
}

func refID(v any) string {
	m, _ := v.(map[string]any)
	if s, ok := m["Ref"].(string); ok {
		return s
	}
	return ""
}

// Evaluator evaluates alarms on a store's metrics, as CloudWatch does
// every minute, and calls Notify on each change of state.
type Evaluator struct {
	Store  *Store
	Alarms []*Alarm
	// Scale divides every period and the evaluation interval (1: real time).
	Scale float64
	// Resolve turns a dimension's template value (a string, a Ref, a
	// Fn::GetAtt) into its value now.
	Resolve func(v any) (string, error)
	// Notify is told of each change of state (the alarm's actions).
	Notify func(a *Alarm, from, to, reason string)
}

func (e *Evaluator) scaled(d time.Duration) time.Duration {
	if e.Scale <= 0 {
		return d
	}
	return time.Duration(float64(d) / e.Scale)
}

// Run evaluates every alarm each (scaled) minute until ctx ends. An
// evaluation that falls behind (a loaded machine, one-second scaled
// minutes) is caught up: each interval that ended since the last one is
// evaluated in turn, up to MaxCatchUp, as CloudWatch evaluates every
// period, so a window of datapoints is never skipped.
func (e *Evaluator) Run(ctx context.Context) {
	every := e.scaled(time.Minute)
	if p := e.shortestPeriod(); p > 0 && p < every {
		every = p
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, missed := range missedEvaluations(last, now, every) {
				e.Evaluate(missed)
			}
			e.Evaluate(now)
			last = now.Truncate(every)
		}
	}
}

// MaxCatchUp bounds the intervals Run evaluates late in one go.
const MaxCatchUp = 10

// missedEvaluations are the interval boundaries between the last
// evaluation's (last, truncated to every; zero: none yet) and now's that
// were not evaluated, oldest first, at most MaxCatchUp of the latest.
func missedEvaluations(last, now time.Time, every time.Duration) []time.Time {
	at := now.Truncate(every)
	if last.IsZero() || at.Sub(last) <= every {
		return nil
	}
	from := last.Add(every)
	if oldest := at.Add(-time.Duration(MaxCatchUp) * every); from.Before(oldest) {
		from = oldest
	}
	var out []time.Time
	for t := from; t.Before(at); t = t.Add(every) {
		out = append(out, t)
	}
	return out
}

func (e *Evaluator) shortestPeriod() time.Duration {
	var p time.Duration
	for _, a := range e.Alarms {
		if d := e.scaled(a.Period()); p == 0 || d < p {
			p = d
		}
	}
	return p
}

// Evaluate evaluates every alarm at now: the alarm's last Evaluation
// complete periods, each breaching, not breaching or missing, and the
// missing ones treated as the alarm says (AWS/DynamoDB alarms always as
// "ignore"): all missing is INSUFFICIENT_DATA ("missing"), OK
// ("notBreaching"), ALARM ("breaching") or no change ("ignore"); otherwise
// ALARM when at least DatapointsToAlarm of them breach.
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html
func (e *Evaluator) Evaluate(now time.Time) {
	for _, a := range e.Alarms {
		points, err := e.datapoints(a, now)
		if err != nil {
			continue // a dimension that does not resolve yet: no data
		}
		missing := a.Missing
		for _, ns := range a.Namespaces() {
			if ns == "AWS/DynamoDB" {
				missing = "ignore"
			}
		}
		breaching, present := 0, 0
		var shown []string
		for _, p := range points {
			switch {
			case p == nil && missing == "breaching":
				breaching++
				shown = append(shown, "missing (breaching)")
			case p == nil:
				shown = append(shown, "missing")
			default:
				present++
				if breaches(a, *p) {
					breaching++
				}
				shown = append(shown, fmt.Sprintf("%g", *p))
			}
		}
		a.mu.Lock()
		from, to := a.state, a.state
		switch {
		case present == 0 && missing == "missing":
			to = InsufficientData
		case present == 0 && missing == "ignore":
		case breaching >= a.ToAlarm:
			to = InAlarm
		case present == 0 && missing == "breaching":
			to = InAlarm
		default:
			to = OK
		}
		reason := fmt.Sprintf("the last %d datapoints [%s]: %d breaching the threshold %s %g (%d needed)", len(points), strings.Join(shown, ", "),
			breaching, a.Compare, a.Threshold, a.ToAlarm)
		if to != from {
			a.state, a.reason, a.changed = to, reason, now
			switch to {
			case InAlarm:
				a.fired++
			case InsufficientData:
				a.lapsed++
			}
		}
		a.mu.Unlock()
		if to != from && e.Notify != nil {
			e.Notify(a, from, to, reason)
		}
	}
}

func breaches(a *Alarm, v float64) bool {
	switch a.Compare {
	case "GreaterThanThreshold":
		return v > a.Threshold
	case "GreaterThanOrEqualToThreshold":
		return v >= a.Threshold
	case "LessThanThreshold":
		return v < a.Threshold
	default:
		return v <= a.Threshold
	}
}

// datapoints are the alarm's last Evaluation complete periods' values,
// oldest first (nil: missing).
func (e *Evaluator) datapoints(a *Alarm, now time.Time) ([]*float64, error) {
	period := e.scaled(a.Period())
	end := now.Truncate(period)
	out := make([]*float64, a.Evaluation)
	for i := 0; i < a.Evaluation; i++ {
		to := end.Add(-time.Duration(a.Evaluation-1-i) * period)
		from := to.Add(-period)
		v, ok, err := e.value(a, from, to)
		if err != nil {
			return nil, err
		}
		if ok {
			out[i] = &v
		}
	}
	return out, nil
}

func (e *Evaluator) metric(ms *MetricStat) (Metric, error) {
	m := Metric{Namespace: ms.Namespace, Name: ms.Name, Dims: map[string]string{}}
	names := make([]string, 0, len(ms.Dims))
	for k := range ms.Dims {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, err := e.Resolve(ms.Dims[k])
		if err != nil {
			return m, err
		}
		m.Dims[k] = v
	}
	return m, nil
}

func (e *Evaluator) value(a *Alarm, from, to time.Time) (float64, bool, error) {
	if a.single != nil {
		m, err := e.metric(a.single)
		if err != nil {
			return 0, false, err
		}
		v, ok := e.Store.Stat(m, a.single.Stat, from, to)
		return v, ok, nil
	}
	vars := map[string]float64{}
	for _, q := range a.queries {
		if q.stat == nil {
			continue
		}
		m, err := e.metric(q.stat)
		if err != nil {
			return 0, false, err
		}
		if v, ok := e.Store.Stat(m, q.stat.Stat, from, to); ok {
			vars[q.id] = v
		}
	}
	for _, q := range a.queries {
		if q.ret && q.expr != nil {
			v, ok := q.expr(vars)
			return v, ok, nil
		}
		if q.ret && q.stat != nil {
			v, ok := vars[q.id]
			return v, ok, nil
		}
	}
	return 0, false, nil
}
