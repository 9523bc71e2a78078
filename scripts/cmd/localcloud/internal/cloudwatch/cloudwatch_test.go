package cloudwatch

import (
	"github.com/practice-api/practice-api/shared/clock"
	"testing"
	"time"
)

// TestMissingDataAsCloudWatchTreatsIt: an alarm of 3 periods, 2 to alarm,
// threshold > 0, on the datapoints of the rows of AWS's table ("-" is
// missing, "X" breaching, "0" not), under each treatment.
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html
func TestMissingDataAsCloudWatchTreatsIt(t *testing.T) {
	for _, c := range []struct {
		points                                string
		missing, notBreaching, breaching, ign string
	}{
		{"0 - X", OK, OK, InAlarm, OK},
		{"X - X", InAlarm, InAlarm, InAlarm, InAlarm},
		{"- - -", InsufficientData, OK, InAlarm, InsufficientData},
		{"0 0 X", OK, OK, OK, OK},
		{"- X -", OK, OK, InAlarm, OK},
	} {
		for treatment, want := range map[string]string{"missing": c.missing, "notBreaching": c.notBreaching, "breaching": c.breaching, "ignore": c.ign} {
			s := NewStore()
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			m := Metric{Namespace: "PracticeApi", Name: "Errors", Dims: map[string]string{"Stage": "local"}}
			for i, f := range []byte{c.points[0], c.points[2], c.points[4]} {
				at := base.Add(time.Duration(i)*time.Minute + time.Second)
				s.Clock = clock.Func(func() time.Time { return at })
				switch f {
				case 'X':
					s.Put(m, 1)
				case '0':
					s.Put(m, 0)
				}
			}
			a, err := ParseAlarm("a", map[string]any{"MetricName": "Errors", "Namespace": "PracticeApi", "Statistic": "Sum", "Period": 60.0,
				"Dimensions": []any{map[string]any{"Name": "Stage", "Value": "local"}}, "Threshold": 0.0, "ComparisonOperator": "GreaterThanThreshold",
				"EvaluationPeriods": 3.0, "DatapointsToAlarm": 2.0, "TreatMissingData": treatment})
			if err != nil {
				t.Fatal(err)
			}
			e := &Evaluator{Store: s, Alarms: []*Alarm{a}, Resolve: func(v any) (string, error) { return v.(string), nil }}
			e.Evaluate(base.Add(3 * time.Minute))
			if got, _ := a.State(); got != want {
				t.Errorf("%s, %s: %s, want %s", c.points, treatment, got, want)
			}
		}
	}
}

// TestMetricMathAsAlarmsUseIt: the expressions the template's alarms use,
// on per-period values; a missing metric or a division by zero is a
// missing data point (and so is any sum with one), unless FILLed; an
// unknown function is refused.
func TestMetricMathAsAlarmsUseIt(t *testing.T) {
	for _, c := range []struct {
		expr string
		vars map[string]float64
		want float64
		ok   bool
	}{
		{"IF(requests > 20, 100 * errors / requests, 0)", map[string]float64{"requests": 40, "errors": 2}, 5, true},
		{"IF(requests > 20, 100 * errors / requests, 0)", map[string]float64{"requests": 10, "errors": 2}, 0, true},
		{"IF(part >= 2, 100 * part / requests, 0)", map[string]float64{"requests": 10}, 0, false},
		{"IF(errors >= 2 AND requests > 0, 1, 0)", map[string]float64{"requests": 1, "errors": 3}, 1, true},
		{"a / b", map[string]float64{"a": 1, "b": 0}, 0, false},
		{"-a + 2 * (b - 1)", map[string]float64{"a": 1, "b": 3}, 3, true},
		// A sum over operations: one missing makes it missing; FILL does not.
		{"getitem + query", map[string]float64{"getitem": 3}, 0, false},
		{"FILL(getitem, 0) + FILL(query, 0)", map[string]float64{"getitem": 3}, 3, true},
		{"FILL(getitem, 0) + FILL(query, 0)", map[string]float64{}, 0, true},
	} {
		e, _, err := ParseExpr(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := e(c.vars); ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s on %v: %v %v, want %v %v", c.expr, c.vars, got, ok, c.want, c.ok)
		}
	}
	if _, _, err := ParseExpr("ANOMALY_DETECTION_BAND(m1)"); err == nil {
		t.Error("an unknown function was accepted")
	}
	if _, _, err := ParseExpr("FILL(m1, REPEAT)"); err == nil {
		t.Error("FILL with a value that is not a number was accepted")
	}
}

// TestEMFAndFilters: an EMF line becomes its metrics, per dimension set;
// a metric filter counts the access log lines that match, with its
// dimension from the line.
func TestEMFAndFilters(t *testing.T) {
	s := NewStore()
	n := s.EMF(`{"msg":"request","Stage":"local","Function":"matters","Version":"2","ServerErrors":1,"Requests":1,"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"PracticeApi","Dimensions":[["Stage","Function","Version"]],"Metrics":[{"Name":"ServerErrors"},{"Name":"Requests"}]}]}}`)
	m := Metric{Namespace: "PracticeApi", Name: "ServerErrors", Dims: map[string]string{"Stage": "local", "Function": "matters", "Version": "2"}}
	if v, ok := s.Stat(m, "Sum", time.Time{}, time.Now().Add(time.Second)); n != 2 || !ok || v != 1 {
		t.Fatalf("EMF: %d metrics, ServerErrors %v %v", n, v, ok)
	}
	f, err := ParseFilter(`{ ($.status = "429") && ($.integrationStatus = "-") }`)
	if err != nil {
		t.Fatal(err)
	}
	f.Namespace, f.Name, f.Dims, f.Value = "PracticeApi", "GatewayThrottled", map[string]string{"ApiId": "$.apiId"}, 1
	if !f.Count(s, map[string]string{"status": "429", "integrationStatus": "-", "apiId": "abc"}) || f.Count(s, map[string]string{"status": "429", "integrationStatus": "200", "apiId": "abc"}) {
		t.Fatal("the filter matched wrongly")
	}
	f.Dims = map[string]string{"Stage": "local"}
	if f.Count(s, map[string]string{"status": "429", "integrationStatus": "-"}) {
		t.Fatal("a literal dimension value published a metric")
	}
	if _, err := ParseFilter(`[ip, user, status = 429]`); err == nil {
		t.Fatal("a space-delimited pattern was accepted")
	}
}

// TestAnEvaluationThatFellBehindIsCaughtUp: the intervals that ended
// between two evaluations (ticks a loaded machine dropped) are evaluated
// in turn, at most MaxCatchUp of them; on time, none.
func TestAnEvaluationThatFellBehindIsCaughtUp(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	if got := missedEvaluations(time.Time{}, base, time.Second); got != nil {
		t.Errorf("first evaluation: %v", got)
	}
	if got := missedEvaluations(base, base.Add(1300*time.Millisecond), time.Second); got != nil {
		t.Errorf("on time: %v", got)
	}
	got := missedEvaluations(base, base.Add(3400*time.Millisecond), time.Second)
	if len(got) != 2 || !got[0].Equal(base.Add(time.Second)) || !got[1].Equal(base.Add(2*time.Second)) {
		t.Errorf("two ticks dropped: %v", got)
	}
	if got := missedEvaluations(base, base.Add(time.Minute), time.Second); len(got) != MaxCatchUp || !got[len(got)-1].Equal(base.Add(59*time.Second)) {
		t.Errorf("a minute behind: %d evaluations, the last %v", len(got), got[len(got)-1])
	}
}

// TestStatFindsItsPeriodAmongManyPoints: Stat takes exactly the points in
// [from, to) of a long series.
func TestStatFindsItsPeriodAmongManyPoints(t *testing.T) {
	s := NewStore()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := Metric{Namespace: "AWS/Lambda", Name: "Duration"}
	for i := range 1000 {
		at := base.Add(time.Duration(i) * 100 * time.Millisecond)
		s.Clock = clock.Func(func() time.Time { return at })
		s.Put(m, float64(i))
	}
	if v, ok := s.Stat(m, "SampleCount", base.Add(10*time.Second), base.Add(11*time.Second)); !ok || v != 10 {
		t.Errorf("count %v %v, want 10", v, ok)
	}
	if v, _ := s.Stat(m, "Minimum", base.Add(10*time.Second), base.Add(11*time.Second)); v != 100 {
		t.Errorf("min %v, want 100", v)
	}
	if _, ok := s.Stat(m, "Sum", base.Add(time.Hour), base.Add(2*time.Hour)); ok {
		t.Error("a period after the last point has a value")
	}
}

// TestAHeartbeatAlarmLapsesOnlyAfterItsFirstData: the synthetic check's
// alarm (missing data "missing", INSUFFICIENT_DATA actions): created in
// INSUFFICIENT_DATA, it notifies nothing while no check has run; the
// first check takes it to OK; three minutes without one take it back to
// INSUFFICIENT_DATA, which notifies its INSUFFICIENT_DATA actions.
func TestAHeartbeatAlarmLapsesOnlyAfterItsFirstData(t *testing.T) {
	s := NewStore()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Clock = clock.Func(func() time.Time { return now })
	a, err := ParseAlarm("synthetic", map[string]any{"MetricName": "SyntheticCheckFailures", "Namespace": "PracticeApi", "Statistic": "Sum", "Period": 60.0,
		"Threshold": 0.0, "ComparisonOperator": "GreaterThanThreshold", "EvaluationPeriods": 3.0, "DatapointsToAlarm": 2.0, "TreatMissingData": "missing",
		"AlarmActions": []any{map[string]any{"Ref": "topic"}}, "InsufficientDataActions": []any{map[string]any{"Ref": "topic"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.InsufficientDataActions) != 1 || a.InsufficientDataActions[0] != "topic" {
		t.Fatalf("INSUFFICIENT_DATA actions %v, want [topic]", a.InsufficientDataActions)
	}
	var notified []string
	e := &Evaluator{Store: s, Alarms: []*Alarm{a}, Resolve: func(v any) (string, error) { return v.(string), nil },
		Notify: func(_ *Alarm, from, to, _ string) { notified = append(notified, from+"→"+to) }}
	minute := func(put bool) {
		if put {
			s.Put(Metric{Namespace: "PracticeApi", Name: "SyntheticCheckFailures", Dims: map[string]string{}}, 0)
		}
		now = now.Add(time.Minute)
		e.Evaluate(now)
	}
	for range 5 { // a new stack: no check yet
		minute(false)
	}
	if st, _ := a.State(); st != InsufficientData || len(notified) != 0 || a.Lapsed() != 0 {
		t.Fatalf("before the first check: %s, notified %v, lapsed %d; want INSUFFICIENT_DATA and nothing notified", st, notified, a.Lapsed())
	}
	minute(true)
	minute(true)
	if st, _ := a.State(); st != OK {
		t.Fatalf("after two passing checks: %s, want OK", st)
	}
	for range 3 { // the check stopped
		minute(false)
	}
	if st, _ := a.State(); st != InsufficientData || a.Lapsed() != 1 || len(notified) != 2 || notified[1] != "OK→INSUFFICIENT_DATA" {
		t.Fatalf("three minutes after the last check: %s, lapsed %d, notified %v; want INSUFFICIENT_DATA, notified once", st, a.Lapsed(), notified)
	}
}

// TestPutAtKeepsThePointsInOrder: a point stamped in the past (Lambda's
// metrics of an invocation that ended late) counts in its own period.
func TestPutAtKeepsThePointsInOrder(t *testing.T) {
	s := NewStore()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base.Add(3 * time.Minute)
	s.Clock = clock.Func(func() time.Time { return now })
	m := Metric{Namespace: "AWS/Lambda", Name: "Duration", Dims: map[string]string{"FunctionName": "f"}}
	s.Put(m, 1)
	s.PutAt(m, 50_000, base.Add(30*time.Second))
	s.PutAt(m, 40_000, base.Add(90*time.Second))
	for i, want := range []float64{50_000, 40_000, 0, 1} {
		from := base.Add(time.Duration(i) * time.Minute)
		v, ok := s.Stat(m, "Maximum", from, from.Add(time.Minute))
		if want == 0 && ok || want != 0 && (!ok || v != want) {
			t.Errorf("minute %d: %v (%v), want %v", i, v, ok, want)
		}
	}
}
