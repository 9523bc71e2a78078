package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/jsii-runtime-go"

	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/families"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/lambdahttp"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
	"github.com/practice-api/practice-api/shared/webhookwire"
)

// templates are synthesized once per stage for all tests (jsii is slow to start).
var templates = map[string]map[string]any{}
var assertTemplates = map[string]assertions.Template{}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("infra: skipped with -short (the CDK synthesizes on Node for about a minute); make test runs it")
		os.Exit(0)
	}
	os.Setenv("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
	os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	code := func() int {
		defer jsii.Close()
		dir, err := os.MkdirTemp("", "lambda-code")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		for _, fn := range Functions { // stand-in binaries: assets only need files
			_ = os.MkdirAll(filepath.Join(dir, fn.Name), 0o755)
			_ = os.WriteFile(filepath.Join(dir, fn.Name, "bootstrap"), []byte(fn.Name), 0o755)
		}
		cdkContext, err := CDKJSONContext("../cdk.json") // what cdk deploy synthesizes with: its feature flags included
		if err != nil {
			panic(err)
		}
		for _, stage := range []string{"dev", "prod"} {
			// GIVEN a stage's props WHEN the stack is synthesized
			a := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "out-"+stage)), Context: &cdkContext})
			p := &Props{Stage: stage, CodeDir: dir, RateLimit: 120}
			if stage == "prod" {
				p.AlarmEmail = "ops@example.dk" // as a deployable prod must have (its failed-delivery queue and alarm: the cost table counts them)
			}
			s := NewPracticeStack(a, "PracticeApi-"+stage, p)
			tpl := assertions.Template_FromStack(s.Stack, nil)
			assertTemplates[stage] = tpl
			var parsed map[string]any
			raw, _ := json.Marshal(tpl.ToJSON())
			if err := json.Unmarshal(raw, &parsed); err != nil {
				panic(err)
			}
			templates[stage] = parsed
		}
		return m.Run()
	}()
	os.Exit(code)
}

func resources(stage, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range templates[stage]["Resources"].(map[string]any) {
		if r.(map[string]any)["Type"] == typ {
			out[id] = r.(map[string]any)
		}
	}
	return out
}

func props(r map[string]any) map[string]any { return r["Properties"].(map[string]any) }

// functionBehind is the logical id of the function a reference names: a
// function's own (Fn::GetAtt [id, Arn], Ref id) or its live alias's.
func functionBehind(stage string, ref any) string {
	m, _ := ref.(map[string]any)
	id, _ := m["Ref"].(string)
	if g, ok := m["Fn::GetAtt"].([]any); ok {
		id, _ = g[0].(string)
	}
	r, _ := templates[stage]["Resources"].(map[string]any)[id].(map[string]any)
	if r != nil && r["Type"] == "AWS::Lambda::Alias" {
		return functionBehind(stage, props(r)["FunctionName"])
	}
	return id
}

// functionIDs maps each function's logical id to its name under functions/.
func functionIDs(stage string) map[string]string {
	out := map[string]string{}
	for id, r := range resources(stage, "AWS::Lambda::Function") {
		out[id] = strings.TrimPrefix(props(r)["Description"].(string), "practice-api ")
	}
	return out
}

func TestEveryRouteReachesItsFamilysFunction(t *testing.T) {
	fns := functionIDs("dev")
	integrationFn := map[string]string{}
	for id, r := range resources("dev", "AWS::ApiGatewayV2::Integration") {
		p := props(r)
		if p["PayloadFormatVersion"] != "2.0" || p["IntegrationType"] != "AWS_PROXY" {
			t.Fatalf("integration %s: %v", id, p)
		}
		integrationFn[id] = fns[functionBehind("dev", p["IntegrationUri"])]
	}
	byKey := map[string]string{}
	for _, r := range resources("dev", "AWS::ApiGatewayV2::Route") {
		p := props(r)
		target, _ := json.Marshal(p["Target"])
		for integ, fn := range integrationFn {
			if strings.Contains(string(target), `"`+integ+`"`) {
				byKey[p["RouteKey"].(string)] = fn
			}
		}
	}
	if byKey["$default"] != "meta" {
		t.Fatalf("the catch-all route goes to %q, want meta", byKey["$default"])
	}
	delete(byKey, "$default")
	if len(byKey) != len(routes.Table) {
		t.Fatalf("%d routes in the template besides $default, %d in the route table", len(byKey), len(routes.Table))
	}
	family := map[string]string{}
	for _, fn := range Functions {
		family[fn.Name] = fn.Family
	}
	for _, rt := range routes.Table {
		key := rt.Method + " " + routes.Prefix + rt.Path
		if fn, ok := byKey[key]; !ok || family[fn] != rt.Family {
			t.Errorf("route %s goes to %q, want the %s function", key, fn, rt.Family)
		}
	}
}

func TestFunctionsRuntimeArchitectureAndLimits(t *testing.T) {
	tpl := assertTemplates["dev"]
	for _, fn := range Functions {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), &map[string]any{
			"Description":   "practice-api " + fn.Name,
			"Runtime":       "provided.al2023",
			"Architectures": []string{"arm64"},
			"Handler":       "bootstrap",
			"MemorySize":    fn.MemoryMB,
			"Timeout":       fn.TimeoutS,
			"TracingConfig": assertions.Match_Absent(), // no X-Ray: nothing is instrumented (docs/cost-model.md)
			"LoggingConfig": assertions.Match_ObjectLike(&map[string]any{"LogFormat": "JSON", "ApplicationLogLevel": "INFO"}),
		})
	}
	if n := len(resources("dev", "AWS::Lambda::Function")); n != len(Functions) {
		t.Fatalf("%d functions, want %d", n, len(Functions))
	}
}

// actionsOf collects every action of the policies attached to a function's role.
func actionsOf(stage, fnID string) []string {
	role := props(templates[stage]["Resources"].(map[string]any)[fnID].(map[string]any))["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	var out []string
	for _, r := range resources(stage, "AWS::IAM::Policy") {
		p := props(r)
		attached := false
		for _, ref := range p["Roles"].([]any) {
			attached = attached || ref.(map[string]any)["Ref"] == role
		}
		if !attached {
			continue
		}
		for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			switch a := st.(map[string]any)["Action"].(type) {
			case string:
				out = append(out, a)
			case []any:
				for _, x := range a {
					out = append(out, x.(string))
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// TestLeastPrivilegePerFunction: no function's role names an action by
// wildcard, and the one without a store (meta) has no store or queue
// action at all. Whether each role allows what its code calls is not a
// list kept here by hand: scripts/localcloud checks every store and queue
// call against the synthesized roles as IAM would (its TestTemplateMistakesFailTheSuite
// shows the suite failing on a role that lacks one grant), and the
// end-to-end suite runs every route on it in make test.
func TestLeastPrivilegePerFunction(t *testing.T) {
	names := functionIDs("dev")
	for _, fn := range Functions {
		var id string
		for k, v := range names {
			if v == fn.Name {
				id = k
			}
		}
		got := actionsOf("dev", id)
		for _, a := range got {
			if strings.Contains(a, "*") {
				t.Errorf("%s: wildcard action %s", fn.Name, a)
			}
			if len(fn.Table) == 0 && (strings.HasPrefix(a, "dynamodb:") || strings.HasPrefix(a, "sqs:")) {
				t.Errorf("%s has no store, but its role allows %s", fn.Name, a)
			}
		}
		if len(got) == 0 {
			t.Errorf("%s: no actions at all (its logs and traces need some)", fn.Name)
		}
	}
}

func TestTableKeysIndexesAndRecovery(t *testing.T) {
	def := store.TableDefinition("x")
	var gsis []any
	for _, g := range def.GlobalSecondaryIndexes {
		gsis = append(gsis, map[string]any{
			"IndexName": *g.IndexName,
			"KeySchema": []any{
				map[string]any{"AttributeName": *g.KeySchema[0].AttributeName, "KeyType": "HASH"},
				map[string]any{"AttributeName": *g.KeySchema[1].AttributeName, "KeyType": "RANGE"},
			},
			"Projection": map[string]any{"ProjectionType": string(g.Projection.ProjectionType)},
		})
	}
	for stage, protected := range map[string]bool{"dev": false, "prod": true} {
		tpl := assertTemplates[stage]
		tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), &map[string]any{
			"KeySchema": []any{
				map[string]any{"AttributeName": "PK", "KeyType": "HASH"},
				map[string]any{"AttributeName": "SK", "KeyType": "RANGE"},
			},
			"BillingMode":                      "PAY_PER_REQUEST",
			"GlobalSecondaryIndexes":           gsis,
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": "ttl", "Enabled": true},
			"StreamSpecification":              map[string]any{"StreamViewType": "NEW_IMAGE"},
			"DeletionProtectionEnabled":        protected,
		})
		policy := "Delete"
		if protected {
			policy = "Retain"
		}
		tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), &map[string]any{"DeletionPolicy": policy, "UpdateReplacePolicy": policy})
	}
}

func TestQueuesHaveDeadLetterQueues(t *testing.T) {
	queues := resources("dev", "AWS::SQS::Queue")
	var main []map[string]any
	for _, q := range queues {
		if _, ok := props(q)["RedrivePolicy"]; ok {
			main = append(main, props(q))
		}
	}
	// Two work queues with their dead-letter queues, and the dispatcher's
	// failure destination (itself a dead-letter queue).
	if len(main) != 2 || len(queues) != 5 {
		t.Fatalf("%d queues, %d with a dead-letter queue", len(queues), len(main))
	}
	for _, p := range main {
		rp := p["RedrivePolicy"].(map[string]any)
		if rp["maxReceiveCount"] != 5.0 || rp["deadLetterTargetArn"] == nil {
			t.Fatalf("redrive %v", rp)
		}
		// Visibility is at least six times the consuming function's timeout.
		if p["VisibilityTimeout"].(float64) < 6*30 {
			t.Fatalf("visibility %v", p["VisibilityTimeout"])
		}
	}
	assertTemplates["dev"].HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), &map[string]any{
		"FunctionResponseTypes": []string{"ReportBatchItemFailures"},
	})
	assertTemplates["dev"].HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), &map[string]any{
		"StartingPosition": "LATEST",
		"FilterCriteria":   assertions.Match_ObjectLike(&map[string]any{}),
	})
	assertTemplates["dev"].HasResourceProperties(jsii.String("AWS::Events::Rule"), &map[string]any{"ScheduleExpression": "rate(1 minute)",
		"Targets": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{"RetryPolicy": map[string]any{"MaximumRetryAttempts": 0}})})})
	// The sweep is not retried asynchronously either: the next one is a minute away.
	assertTemplates["dev"].HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), &map[string]any{"MaximumRetryAttempts": 0})
	// The enrichment trigger never has more than the register's allowance
	// (five) of lookups in flight: one record per invocation, five at once.
	assertTemplates["dev"].HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), &map[string]any{
		"ScalingConfig": map[string]any{"MaximumConcurrency": 5}, "BatchSize": 1,
	})
}

func TestAlarmsGoToTheTopic(t *testing.T) {
	alarms := resources("dev", "AWS::CloudWatch::Alarm")
	// 5xx rate and p99 latency per route; errors, throttles and duration
	// per function; two queues' age and two DLQs; DynamoDB throttles and
	// system errors; stream iterator age, dispatch failures, parked events,
	// the dispatcher's failure queue, disabled webhooks; the gateway's own
	// throttles and the account's concurrency.
	// Per route besides: its 5xx share; the 401 rate and the synthetic
	// check; per function the release's own (its version's errors, and for
	// the API's the version's 5xx and latency, for the keyed its 4xx).
	api, keyed := 0, 0
	for _, fn := range Functions {
		if fn.Family != "" {
			api++
			if fn.Family != routes.Meta {
				keyed++
			}
		}
	}
	watched := 0 // the deploy's custom resource's handler has no alarms: a failure fails the deploy
	for _, fn := range Functions {
		if !fn.Deploy {
			watched++
		}
	}
	want := 1 + len(routes.Table) + 3*watched + 2 + 2 + 2 + 5 + 2 + len(routes.Table) + 2 + watched - 1 + 2*api + keyed // the release check has no release
	if len(alarms) != want {
		t.Fatalf("%d alarms, want %d", len(alarms), want)
	}
	var topic, pager string
	for id := range resources("dev", "AWS::SNS::Topic") {
		if strings.HasPrefix(id, "pager") {
			pager = id
		} else {
			topic = id
		}
	}
	var descs []string
	pages := 0
	for _, a := range alarms {
		p := props(a)
		actions, _ := json.Marshal(p["AlarmActions"])
		ok, _ := json.Marshal(p["OKActions"])
		if !strings.Contains(string(actions), topic) || !strings.Contains(string(ok), topic) {
			t.Fatalf("alarm %v does not notify the topic when it fires and when it clears", p["AlarmDescription"])
		}
		critical := strings.Contains(p["AlarmDescription"].(string), "Severity: critical.")
		if critical != strings.Contains(string(actions), pager) || critical != strings.Contains(string(ok), pager) {
			t.Errorf("alarm %v: critical %v, pages %s", p["AlarmDescription"], critical, actions)
		}
		if critical {
			pages++
		}
		descs = append(descs, p["AlarmDescription"].(string))
	}
	t.Logf("dev: %d alarms, %d of them critical (paging)", len(alarms), pages)
	all := strings.Join(descs, "\n")
	for _, s := range []string{"5xx", "dead-letter", "webhook endpoint was disabled", "throttled", "invocation errors",
		"p99 latency", "p99 duration above 80% of its timeout", "oldest message", "DynamoDB throttled", "DynamoDB system errors",
		"stream is over 5 minutes behind", "failed to dispatch", "were parked", "triggers failed", "gateway refused", "account's Lambda concurrency",
		"answered 401", "synthetic check failed", "the version being released"} {
		if !strings.Contains(all, s) {
			t.Errorf("no alarm on %s", s)
		}
	}
}

// TestANewStackPagesOnNothingBeforeItsFirstCheck: no alarm treats missing
// data as breaching (a new stack has no data at all: such an alarm goes
// into ALARM, and pages, on day one), and the synthetic check's alarm
// still tells a check that stopped running: its missing data is
// "missing", so three minutes without a check take it to
// INSUFFICIENT_DATA, which notifies the topic and pages, as its ALARM
// does; a new alarm starts in INSUFFICIENT_DATA, and CloudWatch acts only
// on a change of state.
func TestANewStackPagesOnNothingBeforeItsFirstCheck(t *testing.T) {
	for _, stage := range []string{"dev", "prod"} {
		var topic, pager string
		for id := range resources(stage, "AWS::SNS::Topic") {
			if strings.HasPrefix(id, "pager") {
				pager = id
			} else if strings.HasPrefix(id, "alarms") {
				topic = id
			}
		}
		if topic == "" || pager == "" {
			t.Fatalf("%s: no alarm topic (%q) or pager topic (%q)", stage, topic, pager)
		}
		synthetic := 0
		for id, a := range resources(stage, "AWS::CloudWatch::Alarm") {
			p := props(a)
			if p["TreatMissingData"] == "breaching" {
				t.Errorf("%s: alarm %s treats missing data as breaching: a new stack, with no data yet, pages on it", stage, id)
			}
			insufficient, _ := json.Marshal(p["InsufficientDataActions"])
			if !strings.HasPrefix(id, "syntheticcheckalarm") {
				if p["InsufficientDataActions"] != nil {
					t.Errorf("%s: alarm %s notifies on INSUFFICIENT_DATA (%s): only the synthetic check's heartbeat should", stage, id, insufficient)
				}
				continue
			}
			synthetic++
			if p["TreatMissingData"] != "missing" || p["MetricName"] != "SyntheticCheckFailures" || p["Period"] != 60.0 ||
				p["EvaluationPeriods"] != 3.0 || p["DatapointsToAlarm"] != 2.0 {
				t.Errorf("%s: the synthetic check's alarm: missing data %v, metric %v, period %v, %v of %v; want missing, SyntheticCheckFailures, 60, 2 of 3",
					stage, p["TreatMissingData"], p["MetricName"], p["Period"], p["DatapointsToAlarm"], p["EvaluationPeriods"])
			}
			for _, k := range []string{"AlarmActions", "OKActions", "InsufficientDataActions"} {
				acts, _ := json.Marshal(p[k])
				if !strings.Contains(string(acts), topic) || !strings.Contains(string(acts), pager) {
					t.Errorf("%s: the synthetic check's alarm's %s %s: want the alarm topic and the pager (a check that stopped pages)", stage, k, acts)
				}
			}
		}
		if synthetic != 1 {
			t.Errorf("%s: %d synthetic check alarms, want 1", stage, synthetic)
		}
	}
}

func TestOutputs(t *testing.T) {
	out := templates["dev"]["Outputs"].(map[string]any)
	if _, ok := out["ApiUrl"]; !ok {
		t.Fatal("no ApiUrl output")
	}
	if _, ok := out["TableName"]; !ok {
		t.Fatal("no TableName output")
	}
	url, _ := json.Marshal(out["ApiUrl"])
	if !strings.Contains(string(url), "/api/v1") {
		t.Fatalf("ApiUrl %s", url)
	}
}

// TestWiringFromTheStacksEnvironment builds each function's handler from
// exactly the environment variables the stack gives it (references resolved
// to a local table and queue): a variable the code needs and the stack
// forgets, or renames, fails here.
func TestWiringFromTheStacksEnvironment(t *testing.T) {
	db := storetest.NewDB(t)
	names := functionIDs("dev")
	for id, r := range resources("dev", "AWS::Lambda::Function") {
		name := names[id]
		t.Run(name, func(t *testing.T) {
			vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
			env := map[string]string{}
			for k, v := range vars {
				s, ok := v.(string)
				switch {
				case k == "TABLE_NAME":
					s = db.Table
				case k == "ENRICHMENT_QUEUE_URL" || k == "DELIVERY_QUEUE_URL":
					s = "http://127.0.0.1:1/queue/" + k
				case k == "SYNTHETIC_BASE_URL":
					s = "http://127.0.0.1:1/api/v1"
				case k == "RELEASE_FUNCTIONS" || k == "RELEASE_GROUPS": // JSON of every function's and group's name
					raw, _ := json.Marshal(v)
					if !strings.Contains(string(raw), "Fn::Join") {
						t.Fatalf("%s=%s", k, raw)
					}
					s = "{}"
				case !ok:
					t.Fatalf("%s=%v is a reference the test cannot resolve", k, v)
				}
				env[k] = s
			}
			env["DYNAMODB_ENDPOINT"] = storetest.Endpoint(t) // the one variable AWS does not need
			// The function's environment read as its cold start reads it:
			// every value the template gives must pass config's checks.
			cfg, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if err != nil {
				t.Fatal(err)
			}
			var fn Function
			for _, f := range Functions {
				if f.Name == name {
					fn = f
				}
			}
			ctx := context.Background()
			if fn.Deploy { // the StageSecrets custom resource's handler, on a table of its own (the others' cold starts made theirs)
				cfg.TableName = storetest.NewDB(t).Table
				sdb, err := store.New(ctx, app.StoreConfig(cfg))
				if err != nil {
					t.Fatal(err)
				}
				id, data, err := app.SeedConfig(sdb, 120)(ctx, cfn.Event{RequestType: cfn.RequestCreate})
				if err != nil || id != app.ConfigSeedID || data["Made"] != len(store.ConfigSecrets) {
					t.Fatalf("seed: %q %v %v", id, data, err)
				}
				if _, data, err = app.SeedConfig(sdb, 120)(ctx, cfn.Event{RequestType: cfn.RequestUpdate}); err != nil || data["Made"] != 0 {
					t.Fatalf("seed again: %v %v (a secret replaced?)", data, err)
				}
				return
			}
			if fn.Hook {
				if _, ok := env["RELEASE_FUNCTIONS"]; !ok || env["SYNTHETIC_BASE_URL"] == "" {
					t.Fatalf("releasecheck: %v", env)
				}
				return
			}
			if fn.Name == "synthetic" { // its check's target, and nothing else
				if cfg.SyntheticBaseURL == "" || cfg.TableName != "practice-api" {
					t.Fatalf("synthetic: base URL %q, table %q", cfg.SyntheticBaseURL, cfg.TableName)
				}
				return
			}
			if fn.Family == routes.Meta {
				// Public: no key, no store, so no table name to be given.
				if _, ok := vars["TABLE_NAME"]; ok {
					t.Fatal("the meta function is given the table")
				}
				h, err := lambdahttp.PublicHandler(cfg, slog.Default(), fn.Family, families.Builds(nil)[fn.Family](nil))
				if err != nil {
					t.Fatal(err)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", routes.Prefix+"/openapi.json", nil))
				if rec.Code != 200 || rec.Header().Get("X-RateLimit-Limit") != "" {
					t.Fatalf("GET /openapi.json: %d %v", rec.Code, rec.Header())
				}
				return
			}
			var build apiapp.Build
			switch fn.Family {
			case "":
				w, err := app.WorkersOn(ctx, db, cfg, slog.Default())
				if err != nil || w.Enricher.Register != env["COMPANY_REGISTER_URL"] || w.Deliverer.Store.AllowPrivate {
					t.Fatalf("workers: %v", err)
				}
				return
			case routes.Webhooks: // as functions/webhooks wires it: delivery alone
				build = func(ctx context.Context, db *store.DB, cfg config.Config) (httpapi.Handlers, error) {
					d, err := webhookwire.DelivererOn(ctx, db, cfg)
					if err != nil || d.Store.AllowPrivate {
						return nil, fmt.Errorf("deliverer: %v", err)
					}
					return families.Builds(d)[fn.Family](db), nil
				}
			default:
				build = apiapp.On(families.Builds(nil)[fn.Family])
			}
			h, err := apiapp.FamilyHandler(ctx, cfg, slog.Default(), fn.Family, build)
			if err != nil {
				t.Fatal(err)
			}
			// A real request through the handler, with a key of the store.
			keys := auth.NewStore(db, 0)
			org, err := keys.CreateOrg(context.Background(), "", "wiring", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			_, tok, err := keys.CreateKey(context.Background(), auth.KeyRequest{OrgID: org.ID, Mode: env["API_KEY_MODES"], Scopes: auth.Catalogue}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			rt := routes.Family(fn.Family)[0]
			req := httptest.NewRequest(rt.Method, routes.Prefix+strings.Replace(rt.Path, "{type}", "wip", 1), nil)
			req.Header.Set("Authorization", "Bearer "+tok.String())
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 || rec.Header().Get("X-RateLimit-Limit") != env["RATE_LIMIT_PER_MINUTE"] {
				t.Fatalf("%s %s: %d %s", rt.Method, rt.Path, rec.Code, rec.Body)
			}
		})
	}
}

// TestMemorySizesFollowTheCostModel pins each function's memory to what
// docs/cost-model.md derives from the measured CPU per request: 512 MB for
// the API families (the knee of latency against cost), 1024 MB for the
// CPU-bound reports, 128 MB for the static meta function, 256 MB for the
// workers, which wait on I/O. Change both together.
func TestMemorySizesFollowTheCostModel(t *testing.T) {
	want := map[string]float64{
		"matters": 512, "parties": 512, "timeentries": 512, "invoices": 512, "documents": 512, "webhooks": 512,
		"reports": 1024, "meta": 128, "dispatcher": 256, "enrichment": 256, "delivery": 256, "synthetic": 128, "releasecheck": 128,
		"configseed": 128, // once a deploy, a few store calls
	}
	if len(want) != len(Functions) {
		t.Fatalf("%d functions, %d sizes pinned", len(Functions), len(want))
	}
	tpl := assertTemplates["dev"]
	for name, mb := range want {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), &map[string]any{
			"Description": "practice-api " + name, "MemorySize": mb,
		})
	}
}

// TestGatewayGuardRails: stage throttling on every route, JSON access logs
// in their own log group, and a catch-all route to the meta function.
func TestGatewayGuardRails(t *testing.T) {
	for stage, keep := range map[string]bool{"dev": false, "prod": true} {
		tpl := assertTemplates[stage]
		tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), &map[string]any{
			"StageName":            "$default",
			"DefaultRouteSettings": map[string]any{"ThrottlingRateLimit": MinRouteRate, "ThrottlingBurstLimit": 2 * MinRouteRate},
			"AccessLogSettings": map[string]any{
				"DestinationArn": assertions.Match_AnyValue(),
				"Format":         assertions.Match_StringLikeRegexp(jsii.String(`"requestId":"\$context.requestId".*"routeKey":"\$context.routeKey".*"status":"\$context.status"`)),
			},
		})
		tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), &map[string]any{"RouteKey": "$default"})
		retention := map[bool]float64{false: 30, true: 365}[keep]
		policy := map[bool]string{false: "Delete", true: "Retain"}[keep]
		logs := resources(stage, "AWS::Logs::LogGroup")
		if len(logs) != len(Functions)+1 {
			t.Fatalf("%s: %d log groups, want one per function and the access log", stage, len(logs))
		}
		for id, r := range logs {
			if props(r)["RetentionInDays"] != retention || r["DeletionPolicy"] != policy {
				t.Errorf("%s: log group %s: %v", stage, id, r)
			}
		}
	}
	// That $default reaches the meta function: TestEveryRouteReachesItsFamilysFunction.
}

// TestCustomMetricsCarryTheStage: the disabled-endpoints alarm watches its
// own stage's metric, which the delivery worker emits with a Stage dimension.
func TestCustomMetricsCarryTheStage(t *testing.T) {
	for _, stage := range []string{"dev", "prod"} {
		assertTemplates[stage].HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), &map[string]any{
			"MetricName": "WebhookEndpointsDisabled", "Namespace": MetricNamespace,
			"Dimensions": []any{map[string]any{"Name": "Stage", "Value": stage}},
		})
	}
}

// TestDashboardAndAlarmOutput: one dashboard per stage, and the alarm
// topic's ARN as an output for the on-call tool.
func TestDashboardAndAlarmOutput(t *testing.T) {
	for _, stage := range []string{"dev", "prod"} {
		assertTemplates[stage].HasResourceProperties(jsii.String("AWS::CloudWatch::Dashboard"), &map[string]any{
			"DashboardName": "practice-api-" + stage,
		})
		assertTemplates[stage].HasOutput(jsii.String("AlarmTopicArn"), &map[string]any{"Value": assertions.Match_AnyValue()})
	}
	body, _ := json.Marshal(props(firstOf("dev", "AWS::CloudWatch::Dashboard"))["DashboardBody"])
	for _, want := range []string{"API latency p99", "Lambda duration p99", "Queue and DLQ depth", "Oldest message age", "OutboxDispatchFailures", "WebhookEndpointsDisabled"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the dashboard lacks %s", want)
		}
	}
}

func firstOf(stage, typ string) map[string]any {
	for _, r := range resources(stage, typ) {
		return r
	}
	return nil
}

// TestProtectedStagesNeedAnAlarmTarget: a stage that keeps data does not
// synthesize without somewhere for its alarms to go.
func TestProtectedStagesNeedAnAlarmTarget(t *testing.T) {
	dir := standInCode(t)
	base, err := CDKJSONContext("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	props := func(ctx map[string]any) (*Props, error) {
		full := maps.Clone(base)
		maps.Copy(full, ctx)
		full["codeDir"] = dir
		return PropsFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &full}))
	}
	if _, err := props(map[string]any{"stage": "prod"}); err == nil || !strings.Contains(err.Error(), "alarmEmail") {
		t.Fatalf("prod without an alarm target: %v", err)
	}
	if _, err := props(map[string]any{"stage": "prod", "alarmEmail": "ops@example.com"}); err != nil {
		t.Fatalf("prod with an alarm target: %v", err)
	}
	if _, err := props(map[string]any{"stage": "dev"}); err != nil {
		t.Fatalf("dev needs none: %v", err)
	}
	if _, err := props(map[string]any{"stage": "prod", "teardown": "on"}); err != nil {
		t.Fatalf("a tear-down (make destroy) needs none: %v", err)
	}
}

// TestWorkersHaveReservedConcurrency: the dispatcher, the enrichment worker
// and the delivery worker each have a reserved ceiling, as have reports
// (a report may run for seconds); the other API functions draw on the
// account's pool.
func TestWorkersHaveReservedConcurrency(t *testing.T) {
	// The dispatcher: one poller per stream shard and the sweep (ten by
	// default); enrichment: the register's allowance.
	want := map[string]any{"dispatcher": 10.0, "enrichment": 5.0, "delivery": 105.0, "reports": float64(ReportsConcurrency)}
	for id, name := range functionIDs("dev") {
		got := props(resources("dev", "AWS::Lambda::Function")[id])["ReservedConcurrentExecutions"]
		if got != want[name] {
			t.Errorf("%s: reserved concurrency %v, want %v", name, got, want[name])
		}
	}
}

// TestLocalStackCoversTheStack checks offline what Docker would: the
// compose file's SERVICES allow-list covers every service of the
// synthesized template and of cdklocal bootstrap, its port is the one the
// Makefile waits on, the image serves HTTP APIs, and the Makefile reads the
// outputs of the stack name the app gives the local stage.
func TestLocalStackCoversTheStack(t *testing.T) {
	compose, err := os.ReadFile("../localstack/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	for _, line := range strings.Split(string(compose), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "- SERVICES="); ok {
			services = strings.Split(v, ",")
		}
	}
	need := map[string]string{ // template resource prefix → LocalStack service
		"AWS::DynamoDB::": "dynamodb", "AWS::Lambda::": "lambda", "AWS::ApiGatewayV2::": "apigatewayv2", "AWS::SQS::": "sqs",
		"AWS::SNS::": "sns", "AWS::Events::": "events", "AWS::CloudWatch::": "cloudwatch", "AWS::Logs::": "logs", "AWS::IAM::": "iam",
		"AWS::CodeDeploy::": "codedeploy",
	}
	for id, r := range templates["dev"]["Resources"].(map[string]any) {
		typ := r.(map[string]any)["Type"].(string)
		svc := ""
		for prefix, s := range need {
			if strings.HasPrefix(typ, prefix) {
				svc = s
			}
		}
		if svc == "" && typ != "Custom::LogRetention" && !strings.HasPrefix(typ, "Custom::") {
			t.Errorf("%s (%s): no LocalStack service is known for it; add it here and to SERVICES", id, typ)
		} else if svc != "" && !slices.Contains(services, svc) {
			t.Errorf("SERVICES lacks %s, which %s (%s) needs", svc, id, typ)
		}
	}
	for _, svc := range []string{"cloudformation", "s3", "ssm", "ecr", "iam", "sts", "dynamodbstreams"} { // cdk bootstrap and the stream
		if !slices.Contains(services, svc) {
			t.Errorf("SERVICES lacks %s (cdklocal bootstrap or the outbox stream needs it)", svc)
		}
	}
	if !strings.Contains(string(compose), `"127.0.0.1:4566:4566"`) || !strings.Contains(string(makefile), "LOCALSTACK := http://127.0.0.1:4566") {
		t.Error("the compose file's port and the Makefile's LOCALSTACK differ")
	}
	if !strings.Contains(string(compose), "image: localstack/localstack-pro:") || !strings.Contains(string(compose), "LOCALSTACK_AUTH_TOKEN=${LOCALSTACK_AUTH_TOKEN") {
		t.Error("the image must be LocalStack Pro (HTTP APIs), pinned, with the token from the environment")
	}
	if !strings.Contains(string(makefile), `.["PracticeApi-local"]`) || !strings.Contains(string(makefile), "-c stage=local") {
		t.Error("the Makefile must deploy stage local and read the outputs of PracticeApi-local")
	}
	if !strings.Contains(string(makefile), "-timeout 30m -v ./scripts/e2e/...") {
		t.Error("the e2e runs need a -timeout")
	}
}

// TestLocalStageProps: the local stage lets the e2e suite through, and
// builds for the host's architecture when told.
func TestLocalStageProps(t *testing.T) {
	dir := standInCode(t)
	ctx := map[string]any{"stage": "local", "codeDir": dir, "lambdaArch": "amd64"}
	p, err := PropsFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
	if err != nil {
		t.Fatal(err)
	}
	if p.RateLimit < 10000 || *p.Architecture().Name() != "x86_64" || p.Protected() {
		t.Fatalf("local stage props: rate limit %d, architecture %s", p.RateLimit, *p.Architecture().Name())
	}
}

// TestStagesArePinned: a protected stage deploys only to the account and
// region cdk.json pins for it; synth fails with other credentials, and for
// a protected stage that is not pinned.
func TestStagesArePinned(t *testing.T) {
	dir := standInCode(t)
	base, err := CDKJSONContext("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	props := func(stage string) (*Props, error) {
		ctx := maps.Clone(base)
		ctx["stage"], ctx["codeDir"], ctx["alarmEmail"] = stage, dir, "ops@example.com"
		return PropsFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
	}
	t.Setenv("CDK_DEFAULT_ACCOUNT", "")
	t.Setenv("CDK_DEFAULT_REGION", "")
	p, err := props("prod")
	if err != nil || p.Env == nil || *p.Env.Account != "000000000000" || *p.Env.Region != "eu-north-1" {
		t.Fatalf("prod offline: %+v %v", p, err)
	}
	t.Setenv("CDK_DEFAULT_ACCOUNT", "999999999999")
	t.Setenv("CDK_DEFAULT_REGION", "eu-north-1")
	// A real deploy to the committed placeholder: one line, saying exactly what to set.
	_, err = props("prod")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `"prod": {"account": "999999999999", "region": "eu-north-1"}`) {
		t.Fatalf("a deploy to the placeholder account: %v", err)
	}
	base["stages"] = map[string]any{"prod": map[string]any{"account": "111111111111", "region": "eu-north-1"}}
	if _, err := props("prod"); err == nil || !strings.Contains(err.Error(), "pinned to account") {
		t.Fatalf("prod with another account's credentials: %v", err)
	}
	t.Setenv("CDK_DEFAULT_ACCOUNT", "111111111111")
	t.Setenv("CDK_DEFAULT_REGION", "us-east-1")
	if _, err := props("prod"); err == nil || !strings.Contains(err.Error(), "pinned to region") {
		t.Fatalf("prod in another region: %v", err)
	}
	if _, err := props("qa"); err == nil || !strings.Contains(err.Error(), "must be pinned") {
		t.Fatalf("an unpinned protected stage: %v", err)
	}
	if p, err := props("dev"); err != nil || p.Env == nil || *p.Env.Region != "us-east-1" {
		t.Fatalf("dev follows the credentials: %+v %v", p, err)
	}
}

// standInCode is a code folder with one stand-in bootstrap per function:
// assets only need files.
func standInCode(t testing.TB) string {
	dir := t.TempDir()
	for _, fn := range Functions {
		_ = os.MkdirAll(filepath.Join(dir, fn.Name), 0o755)
		_ = os.WriteFile(filepath.Join(dir, fn.Name, "bootstrap"), []byte(fn.Name), 0o755)
	}
	return dir
}

// statementsOf returns the IAM statements attached to a function's role.
func statementsOf(stage, fnID string) []map[string]any {
	role := props(templates[stage]["Resources"].(map[string]any)[fnID].(map[string]any))["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	var out []map[string]any
	for _, r := range resources(stage, "AWS::IAM::Policy") {
		p := props(r)
		for _, ref := range p["Roles"].([]any) {
			if ref.(map[string]any)["Ref"] == role {
				for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
					out = append(out, st.(map[string]any))
				}
			}
		}
	}
	return out
}

// TestProtectedStagesEncryptWithTheirOwnKey: prod's table uses a rotating
// customer-managed key, which every function with table actions may use
// only through DynamoDB (kms:ViaService; the dispatcher's stream reads
// too); webhook signing secrets are
// sealed under a second key, which only webhooks and delivery may use, and
// they alone are told it. dev stays on the AWS-managed key.
func TestProtectedStagesEncryptWithTheirOwnKey(t *testing.T) {
	prod := assertTemplates["prod"]
	keys := resources("prod", "AWS::KMS::Key")
	if len(keys) != 2 {
		t.Fatalf("prod has %d KMS keys, want 2 (table, webhook secrets)", len(keys))
	}
	var tableKey, secretsKey string
	for id, k := range keys {
		if props(k)["EnableKeyRotation"] != true {
			t.Errorf("key %s does not rotate", id)
		}
		if strings.Contains(props(k)["Description"].(string), "webhook") {
			secretsKey = id
		} else {
			tableKey = id
		}
	}
	prod.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), &map[string]any{
		"SSESpecification": map[string]any{"SSEEnabled": true, "SSEType": "KMS",
			"KMSMasterKeyId": map[string]any{"Fn::GetAtt": []any{tableKey, "Arn"}}},
	})
	if n := len(resources("dev", "AWS::KMS::Key")); n != 0 {
		t.Fatalf("dev has %d KMS keys", n)
	}
	fns := functionIDs("prod")
	for id, r := range resources("prod", "AWS::Lambda::Function") {
		name := fns[id]
		fn := Functions[slices.IndexFunc(Functions, func(f Function) bool { return f.Name == name })]
		env, _ := json.Marshal(props(r)["Environment"])
		seals := name == "webhooks" || name == "delivery"
		if strings.Contains(string(env), "WEBHOOK_SECRETS_KEY_ARN") != seals || (seals && !strings.Contains(string(env), secretsKey)) {
			t.Errorf("%s: WEBHOOK_SECRETS_KEY_ARN %s, want present %v", name, env, seals)
		}
		var onTable, onSecrets bool
		for _, st := range statementsOf("prod", id) {
			res, _ := json.Marshal(st["Resource"])
			switch {
			case strings.Contains(string(res), secretsKey):
				onSecrets = true
			case strings.Contains(string(res), tableKey):
				onTable = true
				cond, _ := json.Marshal(st["Condition"])
				if !strings.Contains(string(cond), "kms:ViaService") || !strings.Contains(string(cond), "dynamodb.") {
					t.Errorf("%s may use the table key outside DynamoDB: %v", name, st)
				}
			}
		}
		if onTable != (len(fn.Table) > 0) {
			t.Errorf("%s: table key statement %v, table actions %v", name, onTable, fn.Table)
		}
		if onSecrets != seals {
			t.Errorf("%s: may use the secrets key %v, want %v", name, onSecrets, seals)
		}
	}
}

// TestPrivateTargetsOnlyOnTheLocalStage: the local stage's settings may
// admit receivers on this machine and an http:// loopback origin (its
// template then says so, for localcloud to run as it is); every other
// stage refuses both, and AWS stages' templates keep the guard on.
func TestPrivateTargetsOnlyOnTheLocalStage(t *testing.T) {
	dir := standInCode(t)
	stageProps := func(stage string, kv ...string) (*Props, error) {
		ctx := map[string]any{"stage": stage, "codeDir": dir, "alarmEmail": "ops@example.dk"}
		for i := 0; i+1 < len(kv); i += 2 {
			ctx[kv[i]] = kv[i+1]
		}
		return PropsFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
	}
	p, err := stageProps("local", "allowPrivateTargets", "true", "publicBaseUrl", "http://127.0.0.1:8080", "apiKeyModes", "test")
	if err != nil || !p.AllowPrivateTargets || p.PublicBaseURL != "http://127.0.0.1:8080" || p.KeyModes() != "test" {
		t.Fatalf("local stage: %+v, %v", p, err)
	}
	if p, err := stageProps("local"); err != nil || p.AllowPrivateTargets || p.KeyModes() != "live,test" {
		t.Fatalf("local stage by default: %+v, %v", p, err)
	}
	for _, c := range [][]string{
		{"dev", "allowPrivateTargets", "true"},
		{"prod", "allowPrivateTargets", "true"},
		{"local", "allowPrivateTargets", "yes"},
		{"dev", "publicBaseUrl", "http://127.0.0.1:8080"},
		{"local", "publicBaseUrl", "http://api.example.dk"},
		{"dev", "apiKeyModes", "live,sandbox"},
	} {
		if _, err := stageProps(c[0], c[1:]...); err == nil {
			t.Errorf("%v: accepted", c)
		}
	}
	for _, stage := range []string{"dev", "prod"} {
		for _, f := range resources(stage, "AWS::Lambda::Function") {
			vars, _ := props(f)["Environment"].(map[string]any)["Variables"].(map[string]any)
			if v, ok := vars["WEBHOOK_ALLOW_PRIVATE_TARGETS"]; ok && v != "0" {
				t.Errorf("%s, %s: WEBHOOK_ALLOW_PRIVATE_TARGETS=%v", stage, props(f)["Description"], v)
			}
			for _, local := range []string{"LOCAL_FAULTS", "DYNAMODB_ENDPOINT"} { // localcloud sets them; a deployed function never
				if v, ok := vars[local]; ok {
					t.Errorf("%s, %s: %s=%v", stage, props(f)["Description"], local, v)
				}
			}
		}
	}
}

// TestAlarmTopicsLetCloudWatchPublish: both topics' policies allow this
// account's CloudWatch alarms (and only this account's: aws:SourceAccount,
// aws:SourceArn) to publish, beside the SSL-only Deny; a policy with the
// Deny alone drops every alarm notification.
func TestAlarmTopicsLetCloudWatchPublish(t *testing.T) {
	for _, stage := range []string{"dev", "prod"} {
		topics := resources(stage, "AWS::SNS::Topic")
		if len(topics) != 2 {
			t.Fatalf("%s: %d topics, want the alarm topic and the pager topic", stage, len(topics))
		}
		allowed := map[string]bool{}
		for _, pol := range resources(stage, "AWS::SNS::TopicPolicy") {
			p := props(pol)
			for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				sm := st.(map[string]any)
				principal, _ := json.Marshal(sm["Principal"])
				cond, _ := json.Marshal(sm["Condition"])
				if sm["Effect"] != "Allow" || string(principal) != `{"Service":"cloudwatch.amazonaws.com"}` || sm["Action"] != "sns:Publish" {
					continue
				}
				if !strings.Contains(string(cond), `"StringEquals":{"aws:SourceAccount":{"Ref":"AWS::AccountId"}}`) || !strings.Contains(string(cond), `:alarm:*`) {
					t.Errorf("%s: CloudWatch may publish without this account's condition: %s", stage, cond)
					continue
				}
				for _, tp := range p["Topics"].([]any) {
					allowed[refOf(tp)] = true
				}
			}
		}
		for id := range topics {
			if !allowed[id] {
				t.Errorf("%s: topic %s does not let CloudWatch alarms publish", stage, id)
			}
		}
	}
}
