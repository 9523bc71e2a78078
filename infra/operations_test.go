package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// TestEveryDispatchFailureHasSomewhereToGo: the stream trigger splits a
// failing batch, gives up on records older than an hour, and sends what it
// gives up on to the dispatch-failures queue; so do the schedule target and
// the dispatcher's asynchronous invocations; an alarm watches that queue.
func TestEveryDispatchFailureHasSomewhereToGo(t *testing.T) {
	var failures string
	for id, q := range resources("dev", "AWS::SQS::Queue") {
		if strings.Contains(id, "dispatchfailures") {
			failures = id
			if props(q)["MessageRetentionPeriod"] != 14.0*24*3600 {
				t.Errorf("dispatch failures kept %v s", props(q)["MessageRetentionPeriod"])
			}
		}
	}
	if failures == "" {
		t.Fatal("no dispatch-failures queue")
	}
	arn := map[string]any{"Fn::GetAtt": []any{failures, "Arn"}}
	tpl := assertTemplates["dev"]
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), &map[string]any{
		"StartingPosition": "LATEST", "BisectBatchOnFunctionError": true, "MaximumRecordAgeInSeconds": 3600, "MaximumRetryAttempts": 3,
		"DestinationConfig": map[string]any{"OnFailure": map[string]any{"Destination": arn}},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), &map[string]any{"Targets": assertions.Match_ArrayWith(&[]any{
		assertions.Match_ObjectLike(&map[string]any{"DeadLetterConfig": map[string]any{"Arn": arn},
			"RetryPolicy": map[string]any{"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 300}})})})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), &map[string]any{"MaximumRetryAttempts": 0,
		"DestinationConfig": map[string]any{"OnFailure": map[string]any{"Destination": arn}}})
	found := false
	for _, a := range resources("dev", "AWS::CloudWatch::Alarm") {
		dims, _ := json.Marshal(props(a)["Dimensions"])
		if props(a)["MetricName"] == "ApproximateNumberOfMessagesVisible" && strings.Contains(string(dims), failures) {
			found = true
		}
	}
	if !found {
		t.Fatal("no alarm on the dispatch-failures queue's depth")
	}
}

// TestEachFunctionMayQueryOnlyItsIndexes: the table statement of each
// function names exactly the indexes it queries (routes.Indexes, held to
// the code by shared/families), never index/* or all six.
func TestEachFunctionMayQueryOnlyItsIndexes(t *testing.T) {
	want := map[string][]string{"dispatcher": {string(outbox.Index)}}
	for _, fn := range Functions {
		if fn.Family != "" {
			want[fn.Name] = routes.Indexes[fn.Family]
		}
	}
	for id, name := range functionIDs("dev") {
		var got []string
		for _, st := range statementsOf("dev", id) {
			if st["Sid"] != "Table" {
				continue
			}
			list, ok := st["Resource"].([]any)
			if !ok { // one resource: the table alone
				list = []any{st["Resource"]}
			}
			for _, r := range list {
				b, _ := json.Marshal(r)
				if i := strings.Index(string(b), "/index/"); i >= 0 {
					got = append(got, strings.Trim(string(b[i+len("/index/"):]), `"]}`))
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want[name]) {
			t.Errorf("%s may query %v, want %v", name, got, want[name])
		}
	}
}

// TestOperationsGuardRails: per-route latency alarms (reports on their own
// threshold), low throttles on the routes that need no key, detailed
// metrics, log levels on every function, and a locked backup of protected
// stages' tables.
func TestOperationsGuardRails(t *testing.T) {
	for _, rt := range routes.Table {
		want := 1000.0
		if rt.Family == routes.Reports {
			want = 15000
		}
		assertTemplates["dev"].HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), &map[string]any{
			"MetricName": "Latency", "Namespace": "AWS/ApiGateway", "ExtendedStatistic": "p99", "Threshold": want,
			"Dimensions": assertions.Match_ArrayWith(&[]any{
				map[string]any{"Name": "Method", "Value": rt.Method}, map[string]any{"Name": "Resource", "Value": routes.Prefix + rt.Path}}),
		})
	}
	public := map[string]any{}
	for _, key := range []string{"$default", "GET /api/v1/openapi.json", "GET /api/v1/docs", "GET /api/v1/docs/{file}"} {
		public[key] = map[string]any{"ThrottlingRateLimit": DefaultPublicThrottleRate, "ThrottlingBurstLimit": DefaultPublicThrottleBurst, "DetailedMetricsEnabled": true}
	}
	assertTemplates["dev"].HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), &map[string]any{
		"RouteSettings":        public,
		"DefaultRouteSettings": assertions.Match_ObjectLike(&map[string]any{"DetailedMetricsEnabled": true, "ThrottlingRateLimit": MinRouteRate}),
	})
	for _, stage := range []string{"dev", "prod"} {
		for _, f := range resources(stage, "AWS::Lambda::Function") {
			lc := props(f)["LoggingConfig"].(map[string]any)
			if lc["LogFormat"] != "JSON" || lc["ApplicationLogLevel"] != "INFO" || lc["SystemLogLevel"] != "WARN" {
				t.Errorf("%s: logging %v", props(f)["Description"], lc)
			}
		}
	}
	if n := len(resources("dev", "AWS::Backup::BackupPlan")); n != 0 {
		t.Errorf("dev has %d backup plans", n)
	}
	prod := assertTemplates["prod"]
	prod.HasResourceProperties(jsii.String("AWS::Backup::BackupVault"), &map[string]any{
		"LockConfiguration": map[string]any{"MinRetentionDays": 35, "ChangeableForDays": 3},
	})
	prod.HasResource(jsii.String("AWS::Backup::BackupVault"), &map[string]any{"DeletionPolicy": "Retain"})
	// A retained vault of an earlier stack (a failed first deploy, a
	// destroy) does not block the next: its name comes from the stack's
	// id, new for each stack.
	for id, v := range resources("prod", "AWS::Backup::BackupVault") {
		name, _ := json.Marshal(props(v)["BackupVaultName"])
		if !strings.Contains(string(name), `"Ref":"AWS::StackId"`) || !strings.Contains(string(name), `practice-api`) {
			t.Errorf("vault %s is named %s: a fixed name blocks the retry of a failed first deploy", id, name)
		}
	}
	prod.HasResourceProperties(jsii.String("AWS::Backup::BackupPlan"), &map[string]any{"BackupPlan": assertions.Match_ObjectLike(&map[string]any{
		"BackupPlanRule": []any{assertions.Match_ObjectLike(&map[string]any{"ScheduleExpression": "cron(0 3 * * ? *)", "Lifecycle": map[string]any{"DeleteAfterDays": 35}})},
	})})
	var table string
	for id := range resources("prod", "AWS::DynamoDB::Table") {
		table = id
	}
	prod.HasResourceProperties(jsii.String("AWS::Backup::BackupSelection"), &map[string]any{"BackupSelection": assertions.Match_ObjectLike(&map[string]any{
		"Resources": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{})}),
	})})
	sel, _ := json.Marshal(resources("prod", "AWS::Backup::BackupSelection"))
	if !strings.Contains(string(sel), table) {
		t.Errorf("the backup selection does not name the table %s: %s", table, sel)
	}
}

// TestCustomDomainCloudFrontAndBackupCopy synthesizes a stage with the
// optional context: a custom domain turns the execute-api endpoint off and
// becomes the links' origin; CloudFront fronts the API with the WAF web ACL
// attached and nothing cached; backups are copied to the vault named.
func TestCustomDomainCloudFrontAndBackupCopy(t *testing.T) {
	dir := standInCode(t)
	ctx, err := CDKJSONContext("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "out")), Context: &ctx})
	s := NewPracticeStack(app, "PracticeApi-staging", &Props{Stage: "staging", CodeDir: dir, RateLimit: 120, AlarmEmail: "ops@example.com",
		DomainName: "api.example.dk", CertificateArn: "arn:aws:acm:eu-north-1:111111111111:certificate/abc",
		CloudFront: true, WafWebAclArn: "arn:aws:wafv2:us-east-1:111111111111:global/webacl/rate/abc",
		BackupCopyVaultArn: "arn:aws:backup:eu-central-1:222222222222:backup-vault:offsite"})
	tpl := assertions.Template_FromStack(s.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), &map[string]any{"DisableExecuteApiEndpoint": true})
	tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::DomainName"), &map[string]any{"DomainName": "api.example.dk"})
	tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::ApiMapping"), jsii.Number(1))
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), &map[string]any{"Environment": map[string]any{
		"Variables": assertions.Match_ObjectLike(&map[string]any{"PUBLIC_BASE_URL": "https://api.example.dk"})}})
	tpl.HasResourceProperties(jsii.String("AWS::CloudFront::Distribution"), &map[string]any{"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{
		"WebACLId": "arn:aws:wafv2:us-east-1:111111111111:global/webacl/rate/abc",
		"DefaultCacheBehavior": assertions.Match_ObjectLike(&map[string]any{
			"CachePolicyId": "4135ea2d-6df8-44a3-9df3-4b5a84be39ad", "ViewerProtocolPolicy": "https-only"}),
	})})
	tpl.HasResourceProperties(jsii.String("AWS::Backup::BackupPlan"), &map[string]any{"BackupPlan": assertions.Match_ObjectLike(&map[string]any{
		"BackupPlanRule": []any{assertions.Match_ObjectLike(&map[string]any{"CopyActions": []any{map[string]any{
			"DestinationBackupVaultArn": "arn:aws:backup:eu-central-1:222222222222:backup-vault:offsite", "Lifecycle": map[string]any{"DeleteAfterDays": 35}}}})},
	})})
	// alarmEmail's dead-letter queue has its alarm, and is on the dashboard.
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), &map[string]any{
		"AlarmDescription": assertions.Match_StringLikeRegexp(jsii.String("alarm-delivery-failures queue.*Severity: warning. Runbook: docs/operations.md#alarm-delivery-failures$")),
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{
			assertions.Match_StringLikeRegexp(jsii.String("^alarmdeliveryfailures")), "QueueName"}}}},
	})
	out := tpl.ToJSON()
	checkDeployOrder(t, "staging with a custom domain", *out) // its API mapping waits for the stage
	for id, r := range (*out)["Resources"].(map[string]any) {
		if r.(map[string]any)["Type"] == "AWS::CloudWatch::Dashboard" {
			body, _ := json.Marshal(r.(map[string]any)["Properties"].(map[string]any)["DashboardBody"])
			if !regexp.MustCompile(`alarmdeliveryfailures[0-9A-F]+`).Match(body) {
				t.Errorf("dashboard %s does not show the alarm-delivery-failures queue", id)
			}
		}
	}
	b, _ := json.Marshal((*out)["Outputs"])
	for _, o := range []string{"DomainTarget", "DistributionUrl", "https://api.example.dk/api/v1"} {
		if !strings.Contains(string(b), o) {
			t.Errorf("outputs lack %s: %s", o, b)
		}
	}
}

// TestDeployStopsOnThePlaceholderAccount: make deploy runs check-stage
// before it builds anything; with the committed placeholder it stops with
// one line that says what to set.
func TestDeployStopsOnThePlaceholderAccount(t *testing.T) {
	out, err := exec.Command("../scripts/lib/check-stage", "prod").CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err == nil || len(lines) != 1 || !strings.Contains(lines[0], "context.stages.prod.account") {
		t.Fatalf("check-stage prod: %v %q", err, out)
	}
	if out, err := exec.Command("../scripts/lib/check-stage", "dev").CombinedOutput(); err != nil {
		t.Fatalf("check-stage dev: %v %s", err, out)
	}
	mk, _ := os.ReadFile("../Makefile")
	if !strings.Contains(string(mk), "deploy: $(CDK_BIN)/cdk\n\t@scripts/lib/check-stage $(STAGE)\n\t$(MAKE) build") {
		t.Fatal("make deploy does not check the stage before it builds")
	}
}

// TestLocalDeployChecksLocalStackFirst: make local-deploy runs
// check-localstack before it builds, which stops in one line, naming the
// token and make local-cloud, when LocalStack is down or runs without an
// activated license, and passes a licensed one.
func TestLocalDeployChecksLocalStackFirst(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (the CDK needs it; so does this check)")
	}
	info := `{"version":"4.10.0","edition":"community","is_license_activated":false}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_localstack/info" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, info)
	}))
	defer srv.Close()
	check := func(url string) (string, error) {
		out, err := exec.Command("../scripts/lib/check-localstack", url).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for name, url := range map[string]string{"down": down.URL, "community": srv.URL} {
		out, err := check(url)
		if err == nil || strings.Count(out, "\n") != 0 || !strings.Contains(out, "LOCALSTACK_AUTH_TOKEN") || !strings.Contains(out, "make local-cloud") {
			t.Errorf("%s: %v %q", name, err, out)
		}
	}
	info = `{"version":"4.10.0","edition":"pro","is_license_activated":true}`
	if out, err := check(srv.URL); err != nil || !strings.Contains(out, "license activated") {
		t.Errorf("licensed: %v %q", err, out)
	}
	mk, _ := os.ReadFile("../Makefile")
	if !strings.Contains(string(mk), "local-deploy: $(CDK_BIN)/cdklocal\n\t@scripts/lib/check-localstack $(LOCALSTACK)\n\t$(MAKE) build") {
		t.Fatal("make local-deploy does not check LocalStack before it builds")
	}
}

// TestEveryAlarmHasItsRunbook: each alarm of each stage says its severity
// and names a section of docs/operations.md that exists, and every
// section of the runbook's alarms is named by an alarm (no stale one).
func TestEveryAlarmHasItsRunbook(t *testing.T) {
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok && h != "Before you start" && h != "Routine tasks" {
			sections[strings.TrimSpace(h)] = false
		}
	}
	tail := regexp.MustCompile(`\. Severity: (critical|high|warning)\. Runbook: docs/operations\.md#([a-z0-9-]+)$`)
	for _, stage := range []string{"dev", "prod"} {
		for id, a := range resources(stage, "AWS::CloudWatch::Alarm") {
			desc, _ := props(a)["AlarmDescription"].(string)
			m := tail.FindStringSubmatch(desc)
			if m == nil {
				t.Errorf("%s alarm %s does not end with its severity and runbook: %q", stage, id, desc)
				continue
			}
			if _, ok := sections[m[2]]; !ok {
				t.Errorf("%s alarm %s names docs/operations.md#%s, which has no such section", stage, id, m[2])
				continue
			}
			sections[m[2]] = true
		}
	}
	// That alarm exists only with an alarm address:
	// TestCustomDomainCloudFrontAndBackupCopy checks its runbook.
	sections["alarm-delivery-failures"] = true
	for s, used := range sections {
		if !used {
			t.Errorf("docs/operations.md's section %q is named by no alarm", s)
		}
	}
}

// TestStageSettingsAreKept: a stage's settings come from its entry in
// cdk.json, then a STAGE_SETTINGS file over them, then -c over both; an
// unknown key stops the synth; make synth passes CDK_ARGS on; the
// register's key is never a setting: its URL may carry no credentials, and
// its secret's name reaches only the enrichment worker, which may read
// that secret and no other.
func TestStageSettingsAreKept(t *testing.T) {
	dir := standInCode(t)
	base, err := CDKJSONContext("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]any{"prod": map[string]any{"account": "123456789012", "region": "eu-north-1",
		"alarmEmail": "ops@example.dk", "logLevel": "DEBUG", "domainName": "api.example.dk",
		"certificateArn": "arn:aws:acm:eu-north-1:123456789012:certificate/abc", "companyRegisterUrl": "https://register.example.dk/v1",
		"companyRegisterKeySecret": "practice-api/prod/register-key", "rateLimit": 300}}
	props := func(ctx map[string]any) (*Props, error) {
		full := maps.Clone(base)
		full["stages"] = stages
		maps.Copy(full, ctx)
		full["codeDir"] = dir
		return PropsFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &full}))
	}
	p, err := props(map[string]any{"stage": "prod"})
	if err != nil {
		t.Fatal(err)
	}
	if p.AlarmEmail != "ops@example.dk" || p.LogLevel != "DEBUG" || p.DomainName != "api.example.dk" || p.RateLimit != 300 ||
		p.CompanyRegisterKeySecret != "practice-api/prod/register-key" {
		t.Fatalf("prod's kept settings were not applied: %+v", p)
	}
	file := filepath.Join(t.TempDir(), "prod.json")
	_ = os.WriteFile(file, []byte(`{"logLevel": "WARN", "rateLimit": 600}`), 0o600)
	t.Setenv("STAGE_SETTINGS", file)
	if p, err = props(map[string]any{"stage": "prod"}); err != nil || p.LogLevel != "WARN" || p.RateLimit != 600 || p.AlarmEmail != "ops@example.dk" {
		t.Fatalf("the STAGE_SETTINGS file over cdk.json: %v %+v", err, p)
	}
	if p, err = props(map[string]any{"stage": "prod", "logLevel": "ERROR"}); err != nil || p.LogLevel != "ERROR" || p.RateLimit != 600 {
		t.Fatalf("-c over both: %v %+v", err, p)
	}
	_ = os.WriteFile(file, []byte(`{"logLevle": "WARN"}`), 0o600)
	if _, err = props(map[string]any{"stage": "prod"}); err == nil || !strings.Contains(err.Error(), `"logLevle" is not a setting`) {
		t.Fatalf("an unknown key: %v", err)
	}
	t.Setenv("STAGE_SETTINGS", "")
	if _, err = props(map[string]any{"stage": "prod", "companyRegisterUrl": "https://register.example.dk/v1?key=s3cret"}); err == nil ||
		!strings.Contains(err.Error(), "companyRegisterKeySecret") {
		t.Fatalf("a register URL with its key: %v", err)
	}
	if extra, err := ContextArgs("-c logLevel=DEBUG --context cloudFront=on --context=rateLimit=5"); err != nil ||
		extra["logLevel"] != "DEBUG" || extra["cloudFront"] != "on" || extra["rateLimit"] != "5" {
		t.Fatalf("CDK_ARGS: %v %v", extra, err)
	}
	if _, err := ContextArgs("--require-approval never"); err == nil {
		t.Fatal("make synth took a cdk flag it would ignore")
	}
	mk, _ := os.ReadFile("../Makefile")
	for _, want := range []string{"SYNTH_ARGS='$(CDK_ARGS)' $(GO) run ./infra", "diff: $(CDK_BIN)/cdk\n\t@scripts/lib/check-stage $(STAGE)",
		"$(CDK_BIN)/cdk diff -c stage=$(STAGE)"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("the Makefile lacks %q", want)
		}
	}

	// The template: the secret's name on the enrichment worker alone, and
	// read access to that secret alone.
	ctx := maps.Clone(base)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "out")), Context: &ctx})
	s := NewPracticeStack(app, "PracticeApi-dev", &Props{Stage: "dev", CodeDir: dir, RateLimit: 120,
		CompanyRegisterURL: "https://register.example.dk/v1", CompanyRegisterKeySecret: "practice-api/dev/register-key"})
	out := *assertions.Template_FromStack(s.Stack, nil).ToJSON()
	var readers []string
	for id, r := range out["Resources"].(map[string]any) {
		res := r.(map[string]any)
		raw, _ := json.Marshal(res["Properties"])
		switch res["Type"] {
		case "AWS::Lambda::Function":
			has := strings.Contains(string(raw), "COMPANY_REGISTER_KEY_SECRET")
			if has != strings.HasPrefix(id, "enrichment") {
				t.Errorf("function %s: COMPANY_REGISTER_KEY_SECRET set %v", id, has)
			}
		case "AWS::IAM::Policy":
			if strings.Contains(string(raw), "secretsmanager:GetSecretValue") {
				readers = append(readers, id)
				if !strings.Contains(string(raw), ":secret:practice-api/dev/register-key-??????") {
					t.Errorf("policy %s reads a secret other than the register key's: %s", id, raw)
				}
			}
		}
	}
	if len(readers) != 1 || !strings.HasPrefix(readers[0], "enrichment") {
		t.Errorf("policies that read secrets: %v, want the enrichment worker's alone", readers)
	}
}

// TestLocalStackTargetsSayWhatIsMissing: make local-up stops in one line
// naming what is missing (Docker here, with no Docker on the PATH), and
// make local-test stops when LocalStack's outputs are missing or lack the
// stack's URL or table, instead of testing a devserver of its own; with
// both outputs it goes on.
func TestLocalStackTargetsSayWhatIsMissing(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed (make local-test reads the outputs with it)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	bin := t.TempDir() // a PATH with bash and nothing else: no docker
	_ = os.Symlink(bash, filepath.Join(bin, "bash"))
	cmd := exec.Command("../scripts/lib/check-docker")
	cmd.Env = append(os.Environ(), "PATH="+bin)
	if out, err := cmd.CombinedOutput(); err == nil || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 ||
		!strings.Contains(string(out), "Docker is not installed") || !strings.Contains(string(out), "make local-cloud") {
		t.Errorf("check-docker without docker: %v %q", err, out)
	}
	dir := t.TempDir()
	outputs := filepath.Join(dir, "outputs.json")
	check := func() (string, error) {
		out, err := exec.Command("../scripts/lib/check-local-outputs", outputs).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := check(); err == nil || !strings.Contains(out, "is missing: run make local-up local-deploy") {
		t.Errorf("no outputs: %v %q", err, out)
	}
	_ = os.WriteFile(outputs, []byte(`{"PracticeApi-local":{"ApiUrl":"http://x/api/v1"}}`), 0o644)
	if out, err := check(); err == nil || !strings.Contains(out, "no PracticeApi-local TableName") {
		t.Errorf("no table: %v %q", err, out)
	}
	_ = os.WriteFile(outputs, []byte(`{"PracticeApi-local":{"ApiUrl":"http://x/api/v1","TableName":"t"}}`), 0o644)
	if out, err := check(); err != nil {
		t.Errorf("both outputs: %v %q", err, out)
	}
	mk, _ := os.ReadFile("../Makefile")
	for _, want := range []string{"local-up:\n\t@scripts/lib/check-docker\n", "local-test:\n\t@scripts/lib/check-local-outputs localstack/outputs.json\n"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("the Makefile lacks %q", want)
		}
	}
}

// TestRestoreMovesTheStageOntoARestoredTable: the two steps of a restore
// (docs/operations.md). The import step keeps the stage on its table and
// adds the restored one as a restore leaves it (no stream, TTL,
// point-in-time recovery or deletion protection, retained), so that cdk
// import adopts it with nothing else changing; the deploy after it runs
// every function, the dispatcher's stream and the backups on the restored
// table, under the same logical id, and declares what the restore did not
// bring back, so CloudFormation puts it back. The table the stage leaves is
// retained on a protected stage.
func TestRestoreMovesTheStageOntoARestoredTable(t *testing.T) {
	dir := standInCode(t)
	base, err := CDKJSONContext("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	synth := func(restoring string) map[string]any {
		t.Helper()
		ctx := maps.Clone(base)
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "out-"+restoring)), Context: &ctx})
		s := NewPracticeStack(app, "PracticeApi-staging", &Props{Stage: "staging", CodeDir: dir, RateLimit: 120, AlarmEmail: "ops@example.com",
			TableName: "practice-api-staging-r1", RestoringFrom: restoring})
		return *assertions.Template_FromStack(s.Stack, nil).ToJSON()
	}
	tables := func(tpl map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		for id, r := range tpl["Resources"].(map[string]any) {
			if r.(map[string]any)["Type"] == "AWS::DynamoDB::Table" {
				out[id] = r.(map[string]any)
			}
		}
		return out
	}
	tableEnv := func(tpl map[string]any) map[string]bool {
		refs := map[string]bool{}
		for _, r := range tpl["Resources"].(map[string]any) {
			if r.(map[string]any)["Type"] != "AWS::Lambda::Function" {
				continue
			}
			vars, _ := r.(map[string]any)["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
			if ref, ok := vars["TABLE_NAME"].(map[string]any); ok {
				refs[fmt.Sprint(ref["Ref"])] = true
			}
		}
		return refs
	}
	imp := synth("-")
	ts := tables(imp)
	if len(ts) != 2 {
		t.Fatalf("the import step has %d tables, want the current one and the restored one", len(ts))
	}
	var current, restored string
	for id, r := range ts {
		if p := r["Properties"].(map[string]any); p["TableName"] == "practice-api-staging-r1" {
			restored = id
			if p["StreamSpecification"] != nil || p["TimeToLiveSpecification"] != nil || p["DeletionProtectionEnabled"] == true ||
				p["PointInTimeRecoverySpecification"] != nil || r["DeletionPolicy"] != "Retain" {
				t.Errorf("the restored table is not declared as a restore leaves it: %v, DeletionPolicy %v", p, r["DeletionPolicy"])
			}
			if len(p["GlobalSecondaryIndexes"].([]any)) != len(store.Indexes) {
				t.Errorf("the restored table declares %d indexes", len(p["GlobalSecondaryIndexes"].([]any)))
			}
		} else {
			current = id
		}
	}
	if restored == "" || !strings.HasPrefix(current, "Table") || strings.HasPrefix(current, "Tablepracticeapi") {
		t.Fatalf("tables %v: want the born-with Table and the restored one", slices.Collect(maps.Keys(ts)))
	}
	if refs := tableEnv(imp); len(refs) != 1 || !refs[current] {
		t.Errorf("in the import step the functions run on %v, want the current table %s", refs, current)
	}
	dep := synth("")
	ts = tables(dep)
	if len(ts) != 1 || ts[restored] == nil {
		t.Fatalf("after the import the stage's tables are %v, want %s alone (same logical id as imported)", slices.Collect(maps.Keys(ts)), restored)
	}
	p := ts[restored]["Properties"].(map[string]any)
	if p["StreamSpecification"] == nil || p["TimeToLiveSpecification"] == nil || p["DeletionProtectionEnabled"] != true || p["PointInTimeRecoverySpecification"] == nil {
		t.Errorf("the deploy does not put back what a restore leaves out: %v", p)
	}
	if refs := tableEnv(dep); len(refs) != 1 || !refs[restored] {
		t.Errorf("after the deploy the functions run on %v, want %s", refs, restored)
	}
	raw, _ := json.Marshal(dep["Resources"])
	for _, want := range []string{`"EventSourceArn":{"Fn::GetAtt":["` + restored + `","StreamArn"]}`, `"Fn::GetAtt":["` + restored + `","Arn"]`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the deployed template lacks %s", want)
		}
	}
	if _, err := PropsFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"stage": "dev", "restoring": "-", "codeDir": dir}})); err == nil ||
		!strings.Contains(err.Error(), "set tableName") {
		t.Errorf("restoring without a tableName: %v", err)
	}
}

// TestReleasesShiftGraduallyAndRollBack: every function serves through a
// "live" alias on its current version, and everything that invokes it (the
// routes, the event sources, the sweep's schedule) invokes the alias; a
// CodeDeploy deployment group per function shifts the alias as the stage
// says (dev at once, prod a tenth first for five minutes) and rolls back by
// itself when the function's errors or duration alarm fires; an unknown
// deployment stops the synth.
func TestReleasesShiftGraduallyAndRollBack(t *testing.T) {
	for stage, config := range map[string]string{"dev": "CodeDeployDefault.LambdaAllAtOnce", "prod": "CodeDeployDefault.LambdaCanary10Percent10Minutes"} {
		aliases := resources(stage, "AWS::Lambda::Alias")
		fns := functionIDs(stage)
		byFunction := map[string]string{}
		for id, a := range aliases {
			p := props(a)
			if p["Name"] != "live" || !strings.Contains(fmt.Sprint(p["FunctionVersion"]), "CurrentVersion") {
				t.Errorf("%s alias %s: %v", stage, id, p)
			}
			byFunction[functionBehind(stage, p["FunctionName"])] = id
		}
		if len(byFunction) != len(fns)-2 { // all but the release check and configseed, which CodeDeploy and CloudFormation invoke by name
			t.Errorf("%s: %d functions, %d live aliases", stage, len(fns), len(byFunction))
		}
		for id, r := range resources(stage, "AWS::ApiGatewayV2::Integration") {
			if ref, _ := props(r)["IntegrationUri"].(map[string]any)["Ref"].(string); aliases[ref] == nil {
				t.Errorf("%s integration %s invokes %v, not an alias", stage, id, props(r)["IntegrationUri"])
			}
		}
		for id, r := range resources(stage, "AWS::Lambda::EventSourceMapping") {
			if !strings.Contains(fmt.Sprint(props(r)["FunctionName"]), "live") {
				t.Errorf("%s mapping %s invokes %v, not the live alias", stage, id, props(r)["FunctionName"])
			}
		}
		for id, r := range resources(stage, "AWS::Events::Rule") {
			for _, tg := range props(r)["Targets"].([]any) {
				if ref, _ := tg.(map[string]any)["Arn"].(map[string]any)["Ref"].(string); aliases[ref] == nil {
					t.Errorf("%s rule %s targets %v, not an alias", stage, id, tg)
				}
			}
		}
		// Every release runs the release check before any traffic.
		for id, a := range aliases {
			up, _ := json.Marshal(a["UpdatePolicy"])
			if !strings.Contains(string(up), `"BeforeAllowTrafficHook":{"Ref":"releasecheck`) {
				t.Errorf("%s alias %s: no pre-traffic hook: %s", stage, id, up)
			}
		}
		groups := resources(stage, "AWS::CodeDeploy::DeploymentGroup")
		if len(groups) != len(fns)-2 {
			t.Errorf("%s: %d deployment groups for %d functions", stage, len(groups), len(fns))
		}
		for id, g := range groups {
			p := props(g)
			raw, _ := json.Marshal(p)
			if !strings.Contains(string(raw), config) || !strings.Contains(string(raw), `"DEPLOYMENT_STOP_ON_ALARM"`) ||
				len(p["AlarmConfiguration"].(map[string]any)["Alarms"].([]any)) < 1 {
				t.Errorf("%s deployment group %s: %s", stage, id, raw)
			}
			// Each alarm it watches is of the version being released: a
			// one-minute period, and a Version (or ExecutedVersion) that is
			// the function's current version.
			for _, al := range p["AlarmConfiguration"].(map[string]any)["Alarms"].([]any) {
				a := templates[stage]["Resources"].(map[string]any)[refOf(al.(map[string]any)["Name"])].(map[string]any)
				araw, _ := json.Marshal(a["Properties"])
				if !strings.Contains(string(araw), "CurrentVersion") || (!strings.Contains(string(araw), `"Period":60`) && props(a)["Period"] != 60.0) {
					t.Errorf("%s deployment group %s watches %s, not its new version in one-minute periods", stage, id, araw)
				}
			}
		}
	}
	dir := standInCode(t)
	if _, err := PropsFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"stage": "dev", "deployment": "yolo", "codeDir": dir}})); err == nil ||
		!strings.Contains(err.Error(), "canary10Percent5Minutes") {
		t.Errorf("an unknown deployment: %v", err)
	}
}
