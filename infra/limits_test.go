package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
)

// TestReadOnlyFunctionsWriteOnlyTheirCounters: the functions that only read
// (invoices, documents, reports) may write nothing but their requests'
// counts: one UpdateItem statement, on API clients (dynamodb:LeadingKeys
// APICLIENT#*), naming only the keys and the rl_* counts
// (dynamodb:Attributes) with ReturnValues held to the updated ones; their
// other actions are reads. (TestRolesHoldTheTenantBoundary holds every
// function's writes.)
func TestReadOnlyFunctionsWriteOnlyTheirCounters(t *testing.T) {
	readOnly := map[string]bool{"invoices": true, "documents": true, "reports": true}
	const counting = `{"ForAllValues:StringLike":{"dynamodb:Attributes":["PK","SK","rl_*"],"dynamodb:LeadingKeys":["APICLIENT#*"]},` +
		`"StringEqualsIfExists":{"dynamodb:ReturnValues":["NONE","UPDATED_OLD","UPDATED_NEW"]}}`
	for _, stage := range []string{"dev", "prod"} {
		for id, name := range functionIDs(stage) {
			if !readOnly[name] {
				continue
			}
			var scoped bool
			for _, st := range statementsOf(stage, id) {
				sid, _ := st["Sid"].(string)
				if sid != "Table" && !strings.HasPrefix(sid, "TableWrites") {
					continue
				}
				actions := listOf(st["Action"])
				writes := slices.ContainsFunc(actions, isWrite)
				cond, _ := json.Marshal(st["Condition"])
				switch {
				case sid == "Table" && writes:
					t.Errorf("%s %s: the read-only %s may write without a condition: %v", stage, sid, name, actions)
				case sid != "Table":
					scoped = string(cond) == counting && slices.Equal(actions, []string{"dynamodb:UpdateItem"})
					if !scoped {
						t.Errorf("%s %s: %v confined by %s", stage, name, actions, cond)
					}
				}
			}
			if !scoped {
				t.Errorf("%s %s: no write statement confined to its counters", stage, name)
			}
		}
	}
}

// TestRouteThrottlesFollowTheTrafficModel: every keyed route has its own
// gateway throttle, three times its share of the modeled peak (at least
// MinRouteRate); reports are held at ReportsRate and their function has
// reserved concurrency; the local stage keeps the suites' high limits.
func TestRouteThrottlesFollowTheTrafficModel(t *testing.T) {
	total := 0.0
	for name, rps := range TrafficModel {
		total += rps
		found := false
		for _, rt := range routes.Table {
			found = found || rt.Name == name
		}
		if !found {
			t.Errorf("the traffic model names %s, which is no route", name)
		}
	}
	if total != 1000 {
		t.Errorf("the traffic model adds up to %v requests a second, not 1,000", total)
	}
	stage := resources("prod", "AWS::ApiGatewayV2::Stage")
	var settings map[string]any
	for _, r := range stage {
		settings = props(r)["RouteSettings"].(map[string]any)
	}
	for _, rt := range routes.Table {
		got, ok := settings[rt.Method+" "+routes.Prefix+rt.Path].(map[string]any)
		if !ok {
			t.Errorf("%s %s has no route settings", rt.Method, rt.Path)
			continue
		}
		rate, burst := RouteThrottle(rt)
		if rt.Public {
			rate, burst = DefaultPublicThrottleRate, DefaultPublicThrottleBurst
		}
		if got["ThrottlingRateLimit"] != rate || got["ThrottlingBurstLimit"] != burst {
			t.Errorf("%s %s: %v, want rate %v burst %v", rt.Method, rt.Path, got, rate, burst)
		}
		if rt.Family == routes.Reports && rate != ReportsRate {
			t.Errorf("reports at %v a second", rate)
		}
	}
	assertTemplates["prod"].HasResourceProperties(jsii.String("AWS::Lambda::Function"), &map[string]any{
		"Description": "practice-api reports", "ReservedConcurrentExecutions": ReportsConcurrency,
	})
	if r, _ := RouteThrottle(routes.Route{Name: "matters.get", Family: routes.Matters}); r != 500 {
		t.Errorf("matters.get throttled at %v, want 3 × 165 in tens up", r)
	}
	// The event feed is polled by many organisations: a share of its own,
	// not the floor of the rare routes.
	if r, _ := RouteThrottle(routes.Route{Name: "events.list", Family: routes.Webhooks}); r != 90 {
		t.Errorf("events.list throttled at %v, want 3 × 30", r)
	}
}

// TestCapacityAlarmsAndOutboxSettings: the gateway's own 429s and the
// account's concurrency raise alarms; the stream hands companies' inserts
// to the dispatcher (their enrichment's trigger); every function that
// writes or sweeps events has the stage's outbox settings.
func TestCapacityAlarmsAndOutboxSettings(t *testing.T) {
	tpl := assertTemplates["prod"]
	tpl.HasResourceProperties(jsii.String("AWS::Logs::MetricFilter"), &map[string]any{
		"FilterPattern":         `{ ($.status = "429") && ($.integrationStatus = "-") }`,
		"MetricTransformations": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{"MetricName": "GatewayThrottled"})}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), &map[string]any{"MetricName": "GatewayThrottled", "Threshold": 100})
	// A metric filter's dimensions take their values from the event's
	// fields ($.apiId, which the access log carries): a literal publishes
	// nothing, and the alarm on it would never fire.
	format := ""
	for _, st := range resources("prod", "AWS::ApiGatewayV2::Stage") {
		format = props(st)["AccessLogSettings"].(map[string]any)["Format"].(string)
	}
	for id, f := range resources("prod", "AWS::Logs::MetricFilter") {
		for _, tr := range props(f)["MetricTransformations"].([]any) {
			dims, _ := tr.(map[string]any)["Dimensions"].([]any)
			for _, d := range dims {
				v, _ := d.(map[string]any)["Value"].(string)
				if !strings.HasPrefix(v, "$.") || !strings.Contains(format, `"`+strings.TrimPrefix(v, "$.")+`":`) {
					t.Errorf("metric filter %s: dimension %v is not a field of the access log line", id, d)
				}
			}
		}
	}
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), &map[string]any{
		"MetricName": "ConcurrentExecutions", "Namespace": "AWS/Lambda", "Threshold": 800,
	})
	mappings := resources("prod", "AWS::Lambda::EventSourceMapping")
	var filters string
	for _, m := range mappings {
		if fc, ok := props(m)["FilterCriteria"]; ok {
			b, _ := json.Marshal(fc)
			filters += string(b)
		}
	}
	if !strings.Contains(filters, `\"event\",\"company\"`) {
		t.Errorf("the stream filter does not pass companies' inserts: %s", filters)
	}
	for _, f := range resources("prod", "AWS::Lambda::Function") {
		vars, _ := props(f)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if _, ok := vars["TABLE_NAME"]; !ok {
			continue
		}
		if vars["OUTBOX_SHARDS"] != "32" || vars["OUTBOX_RETENTION"] != "168h" || vars["EVENT_RETENTION"] != "720h" {
			t.Errorf("%s: OUTBOX_SHARDS=%v OUTBOX_RETENTION=%v EVENT_RETENTION=%v", props(f)["Description"], vars["OUTBOX_SHARDS"], vars["OUTBOX_RETENTION"], vars["EVENT_RETENTION"])
		}
	}
}

// TestThrottleSettingsScaleEveryRoute: throttleRate and throttleBurst are
// the stage's peak; a stage that doubles the rate (2,000) and sets a burst
// of 1.5 times it sees every keyed route's throttle double and its burst
// follow, and a freeze (throttleRate 1) takes every keyed route down to a
// trickle; the routes that need no key keep their own settings. (Before,
// every route had settings of its own from the traffic model, so the two
// settings changed nothing.)
func TestThrottleSettingsScaleEveryRoute(t *testing.T) {
	dir := standInCode(t)
	ctx, err := CDKJSONContext("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	settingsOf := func(rate, burst float64) map[string]any {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "out")), Context: &ctx})
		s := NewPracticeStack(app, "PracticeApi-dev", &Props{Stage: "dev", CodeDir: dir, RateLimit: 120, ThrottleRate: rate, ThrottleBurst: burst})
		out := *assertions.Template_FromStack(s.Stack, nil).ToJSON()
		for _, r := range out["Resources"].(map[string]any) {
			if rm := r.(map[string]any); rm["Type"] == "AWS::ApiGatewayV2::Stage" {
				return rm["Properties"].(map[string]any)["RouteSettings"].(map[string]any)
			}
		}
		t.Fatal("no stage")
		return nil
	}
	base := resources("dev", "AWS::ApiGatewayV2::Stage")
	var def map[string]any
	for _, r := range base {
		def = props(r)["RouteSettings"].(map[string]any)
	}
	doubled, frozen := settingsOf(2000, 3000), settingsOf(1, 1)
	for _, rt := range routes.Table {
		key := rt.Method + " " + routes.Prefix + rt.Path
		d, x, f := def[key].(map[string]any), doubled[key].(map[string]any), frozen[key].(map[string]any)
		if rt.Public {
			if x["ThrottlingRateLimit"] != d["ThrottlingRateLimit"] || f["ThrottlingRateLimit"] != d["ThrottlingRateLimit"] {
				t.Errorf("%s (public) moved with throttleRate: %v, %v, %v", key, d, x, f)
			}
			continue
		}
		dr, xr, xb, fr := d["ThrottlingRateLimit"].(float64), x["ThrottlingRateLimit"].(float64), x["ThrottlingBurstLimit"].(float64), f["ThrottlingRateLimit"].(float64)
		if xr != 2*dr || xb != math.Round(1.5*xr) {
			t.Errorf("%s: rate %v burst %v at throttleRate 2000/3000, want %v and %v (default rate %v)", key, xr, xb, 2*dr, math.Round(1.5*xr), dr)
		}
		if fr >= 1 || f["ThrottlingBurstLimit"] != 1.0 {
			t.Errorf("%s frozen at rate %v burst %v", key, fr, f["ThrottlingBurstLimit"])
		}
	}
}

// TestDynamoDBAlarmsSeeOneOperationAlone: the table's throttle and system
// error alarms sum the service's operations by DynamoDB's own names
// (GetItem, not GET_ITEM: a name DynamoDB does not publish has no data),
// each FILLed with 0: metric math's sum with a missing operand is
// missing, so a plain sum has data only in a period in which every one of
// the operations was throttled, and the alarm would miss the table
// throttling the reads alone.
func TestDynamoDBAlarmsSeeOneOperationAlone(t *testing.T) {
	dynamoOps := map[string]bool{"GetItem": true, "PutItem": true, "UpdateItem": true, "DeleteItem": true, "Query": true, "BatchWriteItem": true, "TransactWriteItems": true}
	seen := 0
	for id, a := range resources("prod", "AWS::CloudWatch::Alarm") {
		if !strings.HasPrefix(id, "dynamodb") {
			continue
		}
		seen++
		ops := 0
		for _, m := range props(a)["Metrics"].([]any) {
			mm := m.(map[string]any)
			if _, ok := mm["Expression"]; ok {
				continue
			}
			for _, d := range mm["MetricStat"].(map[string]any)["Metric"].(map[string]any)["Dimensions"].([]any) {
				if dm := d.(map[string]any); dm["Name"] == "Operation" {
					if !dynamoOps[dm["Value"].(string)] {
						t.Errorf("%s: Operation %v is not a name DynamoDB publishes", id, dm["Value"])
					}
					ops++
					if !strings.Contains(fmt.Sprint(props(a)["Metrics"]), "FILL("+mm["Id"].(string)+", 0)") {
						t.Errorf("%s: %s is summed unFILLed", id, mm["Id"])
					}
				}
			}
		}
		if ops != len(dynamoOps) {
			t.Errorf("%s: %d operations, want %d", id, ops, len(dynamoOps))
		}
	}
	if seen != 2 {
		t.Errorf("%d DynamoDB alarms, want throttles and system errors", seen)
	}
}
