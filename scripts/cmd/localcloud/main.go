// Command localcloud runs the stack we deploy, locally, with no Docker and
// no AWS account: the synthesized template of the local stage and its own
// bootstrap binaries, each Lambda a process (or several) under an in-repo
// Lambda Runtime API, behind HTTP API routing read from the template, with
// the table's stream, the queues and the schedule wired as the template
// wires them. Its command-line surface is scripts/devserver's, word for
// word (LOCAL-CONTRACT.md); the difference is what serves.
//
// Unless LOCALCLOUD_TEMPLATE names a template (with its assets beside it),
// it builds the bootstraps for this machine's architecture and synthesizes
// the local stage into .bin/localcloud-stack first (again only when the
// functions, infra/ or cdk.json changed).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/practice-api/practice-api/scripts/internal/localrun"
	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/ddblocal"
)

// The account and region the local stack pretends to be in.
const (
	localAccount = "000000000000"
	localRegion  = "us-east-1"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localcloud:", err)
		os.Exit(1)
	}
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run() error {
	app.JSONLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The settings, read and checked once (the functions get theirs from
	// the template and the contract's pass-through below).
	conf, err := config.FromEnv()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", conf.ListenAddr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s for the API (is the port taken? set LISTEN_ADDR): %w", conf.ListenAddr, err)
	}
	tplPath := os.Getenv("LOCALCLOUD_TEMPLATE")
	if tplPath == "" {
		if tplPath, err = synthesize(ctx); err != nil {
			return err
		}
	}
	st, err := loadStack(tplPath)
	if err != nil {
		return err
	}
	if err := checkArch(st); err != nil {
		return err
	}
	if err := checkSettings(st); err != nil {
		return err
	}

	// The engine, as the devserver starts it, and the table the template defines.
	db, cfg, engine, err := localrun.Store(ctx, conf)
	if err != nil {
		return err
	}
	defer engine.Stop()
	streamArn, err := createTable(ctx, db, st.table)
	if err != nil {
		return err
	}

	// The queues, on the in-repo SQS server.
	sqsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sqs := newSQSServer("http://" + sqsLn.Addr().String())
	sqsSrv := &http.Server{Handler: sqs, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = sqsSrv.Serve(sqsLn) }()
	defer sqsSrv.Close()
	queues := map[string]*sqsQueue{}
	var create func(id string) *sqsQueue
	create = func(id string) *sqsQueue {
		if q, ok := queues[id]; ok {
			return q
		}
		spec := st.queues[id]
		var dlq *sqsQueue
		if spec.deadLetter != "" {
			dlq = create(spec.deadLetter)
		}
		queues[id] = sqs.create(spec, dlq)
		return queues[id]
	}
	for id := range st.queues {
		create(id)
	}
	// Kept beside the table's data: a restart on the same folder finds its
	// queued messages, as SQS keeps them (in memory with the engine's data
	// otherwise, both gone at exit).
	if conf.LocalDynamoDBDir != "" {
		if err := sqs.openJournal(filepath.Join(conf.LocalDynamoDBDir, "localcloud-queues.jsonl")); err != nil {
			return err
		}
		defer sqs.journal.close()
		stopCompact := make(chan struct{})
		defer close(stopCompact)
		go sqs.compactEvery(time.Minute, stopCompact)
	}

	// The functions, each with the environment the template gives it, the
	// contract's settings, and where the local services are.
	base := "http://" + ln.Addr().String()
	settings := passedThrough()
	res := &resolver{st: st, table: cfg.TableName, streamArn: streamArn, queues: queues}
	// Each function's calls are checked against its role (iam.go): the
	// queue server checks its own; the functions reach the table through a
	// guard in front of the engine.
	pol, err := loadPolicies(st, res)
	if err != nil {
		return err
	}
	if err := checkSourcePermissions(st, res, pol); err != nil {
		return err
	}
	sqs.pol = pol
	guardLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	guard, err := newDynamoGuard(cfg.Endpoint, sqs.ids, pol, cfg.TableName, tableKeys(st.table.props))
	if err != nil {
		return err
	}
	guardSrv := &http.Server{Handler: guard, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = guardSrv.Serve(guardLn) }()
	defer guardSrv.Close()
	logs := &logWriter{w: os.Stderr}
	maxConc := 10
	fns := map[string]*function{}
	for id, spec := range st.functions {
		env, err := functionEnv(spec, res, settings, "http://"+guardLn.Addr().String(), sqs.base, sqs.credential(spec.name))
		if err != nil {
			return err
		}
		fns[id] = newFunction(spec, env, res.functionArn(id), maxConc, &lineLogger{name: spec.name, w: logs})
	}
	defer func() {
		var wg sync.WaitGroup
		for _, f := range fns {
			wg.Go(f.stop)
		}
		wg.Wait()
	}()

	// The demo organisation, as the devserver makes it.
	if err := seed.DemoLine(ctx, db, os.Stdout, conf.SeedDemo); err != nil {
		return err
	}

	// The event sources.
	srcCtx, stopSources := context.WithCancel(ctx)
	var sources sync.WaitGroup
	defer func() { stopSources(); sources.Wait() }()
	streams := dynamodbstreams.New(dynamodbstreams.Options{Region: localRegion, BaseEndpoint: aws.String(cfg.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	for _, m := range st.streamMappings {
		s := &streamSource{spec: m, fn: fns[m.function], client: streams, streamArn: streamArn}
		if m.onFailure != "" {
			s.onFailure = queues[m.onFailure]
		}
		for _, p := range m.filters {
			f, err := parseFilter(p)
			if err != nil {
				return err
			}
			s.filters = append(s.filters, f)
		}
		sources.Go(func() { s.run(srcCtx) })
	}
	for _, m := range st.queueMappings {
		q := &queueSource{spec: m, fn: fns[m.function], queue: queues[m.queue]}
		for _, p := range m.filters {
			f, err := parseFilter(p)
			if err != nil {
				return err
			}
			q.filters = append(q.filters, f)
		}
		sources.Go(func() { q.run(srcCtx) })
	}
	for _, sp := range st.schedules {
		sch := &schedule{spec: sp}
		for _, t := range sp.targets {
			at := &asyncTarget{fn: fns[t.function], retries: t.retries}
			if c, ok := st.asyncConfigs[t.function]; ok {
				at.retries = c.retries
				if c.onFailure != "" {
					at.onFailure = queues[c.onFailure]
				}
			}
			if t.deadLetter != "" {
				at.deadLetter = queues[t.deadLetter]
			}
			sch.targets = append(sch.targets, at)
		}
		sources.Go(func() { sch.run(srcCtx) })
	}

	gw, err := newGateway(st, fns)
	if err != nil {
		return err
	}
	operator := sqs.credential("operator") // for the runbook's rehearsals (aws --endpoint-url)
	apiSrv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: IntegrationTimeout, IdleTimeout: 2 * time.Minute}
	return localrun.Serve(ctx, apiSrv, ln, engine, base+"/api/v1", func() {
		slog.Info("localcloud ready", "base_url", base+"/api/v1", "template", tplPath, "functions", len(fns), "routes", len(st.routes),
			"queues", len(st.queues), "sqs_endpoint", sqs.base, "sqs_access_key_id", operator, "dynamodb_endpoint", cfg.Endpoint, "table", cfg.TableName)
	})
}

// The contract's settings (docs/settings.md) reach the functions in two
// ways, and never over a value the template gives:
//   - stageSettings: those the template itself sets. localcloud passes
//     them to the synth of the local stage as its settings (defaults as
//     the devserver's), so the template carries them; a template given in
//     LOCALCLOUD_TEMPLATE is run as it is, and a setting that disagrees
//     with it stops localcloud.
//   - passThrough: those the template leaves unset (local test knobs such
//     as short retry schedules), added to the environment of the
//     functions that read settings.
var passThrough = []string{"WEBHOOK_RETRY_SCHEDULE", "WEBHOOK_CA_FILE", "ENRICHMENT_RETRY_SCHEDULE",
	"API_DEPRECATED_SINCE", "API_SUNSET", "API_DEPRECATION_LINK", "EVENT_FEED_SETTLE"}

// stageSetting is a setting the template gives: its variable, the local
// stage's setting that sets it (infra), and localcloud's default (the
// devserver's; "" leaves the stage's own).
type stageSetting struct{ variable, setting, def string }

var stageSettings = []stageSetting{
	{"RATE_LIMIT_PER_MINUTE", "rateLimit", "120"},
	{"WEBHOOK_ALLOW_PRIVATE_TARGETS", "allowPrivateTargets", "1"},
	{"PUBLIC_BASE_URL", "publicBaseUrl", ""},
	{"COMPANY_REGISTER_URL", "companyRegisterUrl", ""},
	{"API_KEY_MODES", "apiKeyModes", ""},
}

// synthContext is the local stage's settings from this environment, for
// the synth: each stageSetting the environment (or localcloud's default)
// sets.
func synthContext() map[string]string {
	ctx := map[string]string{}
	for _, s := range stageSettings {
		if v := getenv(s.variable, s.def); v != "" {
			ctx[s.setting] = s.contextValue(v)
		}
	}
	return ctx
}

// contextValue is the synth setting's value for the variable's v.
func (s stageSetting) contextValue(v string) string {
	if s.setting == "allowPrivateTargets" {
		return map[bool]string{true: "true", false: "false"}[v == "1" || v == "true"]
	}
	return v
}

// checkSettings refuses a template whose settings disagree with what this
// environment asks for (a template given in LOCALCLOUD_TEMPLATE, made with
// other settings): localcloud never sets a variable over the template's.
func checkSettings(st *stack) error {
	for _, spec := range st.functions {
		if _, ok := spec.env["TABLE_NAME"]; !ok {
			continue // a function that reads no settings
		}
		for _, s := range stageSettings {
			want := getenv(s.variable, s.def)
			if want == "" {
				continue
			}
			got, _ := spec.env[s.variable].(string)
			if s.setting == "allowPrivateTargets" {
				want = map[bool]string{true: "1", false: "0"}[want == "1" || want == "true"]
			}
			if got != want {
				return fmt.Errorf("%s=%s, but the template gives function %s %s=%q: localcloud runs the template's settings, never its own over them; "+
					"synthesize the local stage with -c %s=%s (or unset LOCALCLOUD_TEMPLATE: localcloud then synthesizes with it)",
					s.variable, want, spec.name, s.variable, got, s.setting, s.contextValue(want))
			}
		}
	}
	return nil
}

// passedThrough are the passThrough settings this environment sets.
func passedThrough() map[string]string {
	s := map[string]string{}
	for _, k := range passThrough {
		if v := os.Getenv(k); v != "" {
			s[k] = v
		}
	}
	if ca := s["WEBHOOK_CA_FILE"]; ca != "" {
		if abs, err := filepath.Abs(ca); err == nil {
			s["WEBHOOK_CA_FILE"] = abs
		}
	}
	return s
}

// functionEnv is a function's environment: the template's variables
// (intrinsics resolved to the local services), the passed-through settings
// it leaves unset (for functions that read settings), and what Lambda
// itself sets.
func functionEnv(spec *functionSpec, res *resolver, settings map[string]string, dynamo, sqsEndpoint, accessKey string) ([]string, error) {
	env := map[string]string{}
	for k, v := range spec.env {
		s, err := res.resolve(v)
		if err != nil {
			return nil, fmt.Errorf("function %s, variable %s: %w", spec.name, k, err)
		}
		env[k] = s
	}
	if _, ok := env["TABLE_NAME"]; ok {
		for k, v := range settings {
			if _, given := env[k]; !given {
				env[k] = v
			}
		}
	}
	for k, v := range map[string]string{
		"DYNAMODB_ENDPOINT": dynamo, "SQS_ENDPOINT": sqsEndpoint,
		"AWS_REGION": localRegion, "AWS_DEFAULT_REGION": localRegion, "AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_LAMBDA_FUNCTION_NAME": spec.name, "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": fmt.Sprint(spec.memoryMB), "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/" + spec.name,
		"AWS_LAMBDA_LOG_STREAM_NAME": "localcloud", "AWS_LAMBDA_LOG_FORMAT": "JSON", "_HANDLER": "bootstrap",
		"LAMBDA_TASK_ROOT": filepath.Dir(spec.bootstrap), "TZ": ":UTC", "LANG": "en_US.UTF-8", "PATH": "/usr/local/bin:/usr/bin:/bin",
	} {
		env[k] = v
	}
	if spec.appLevel != "" {
		env["AWS_LAMBDA_LOG_LEVEL"] = spec.appLevel
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// resolver turns the template's intrinsic functions into local values.
type resolver struct {
	st        *stack
	table     string
	streamArn string
	queues    map[string]*sqsQueue
}

func (r *resolver) functionArn(id string) string {
	return "arn:aws:lambda:" + localRegion + ":" + localAccount + ":function:" + r.st.functions[id].name
}

func (r *resolver) resolve(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case float64, bool:
		return fmt.Sprint(t), nil
	case map[string]any:
		if id, ok := t["Ref"].(string); ok {
			return r.ref(id)
		}
		if g, ok := t["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			id, _ := g[0].(string)
			attr, _ := g[1].(string)
			return r.getAtt(id, attr)
		}
		if j, ok := t["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			parts, _ := j[1].([]any)
			var out []string
			for _, p := range parts {
				s, err := r.resolve(p)
				if err != nil {
					return "", err
				}
				out = append(out, s)
			}
			return strings.Join(out, sep), nil
		}
	}
	return "", fmt.Errorf("cannot resolve %v locally", v)
}

func (r *resolver) ref(id string) (string, error) {
	switch id {
	case "AWS::Region":
		return localRegion, nil
	case "AWS::AccountId":
		return localAccount, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case r.st.table.id:
		return r.table, nil
	}
	if q, ok := r.queues[id]; ok {
		return q.url, nil
	}
	if f, ok := r.st.functions[id]; ok {
		return f.name, nil
	}
	return "", fmt.Errorf("the local stack has no resource %s (Ref)", id)
}

func (r *resolver) getAtt(id, attr string) (string, error) {
	switch {
	case id == r.st.table.id && attr == "Arn":
		return "arn:aws:dynamodb:" + localRegion + ":" + localAccount + ":table/" + r.table, nil
	case id == r.st.table.id && attr == "StreamArn":
		return r.streamArn, nil
	}
	if q, ok := r.queues[id]; ok {
		switch attr {
		case "Arn":
			return q.arn, nil
		case "QueueName":
			return q.name, nil
		case "QueueUrl":
			return q.url, nil
		}
	}
	if _, ok := r.st.functions[id]; ok && attr == "Arn" {
		return r.functionArn(id), nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s: the local stack has no such attribute", id, attr)
}

// createTable makes the template's table (keys, indexes, stream, TTL), or
// checks the one that is there has its stream; it returns the stream ARN.
func createTable(ctx context.Context, db *store.DB, t tableSpec) (string, error) {
	var def dynamodb.CreateTableInput
	raw, _ := json.Marshal(t.props)
	if err := json.Unmarshal(raw, &def); err != nil {
		return "", fmt.Errorf("table %s: %w", t.id, err)
	}
	def.TableName = aws.String(db.Table)
	def.BillingMode = ddbtypes.BillingModePayPerRequest
	def.SSESpecification, def.Tags, def.DeletionProtectionEnabled, def.ResourcePolicy = nil, nil, nil, nil
	stream := def.StreamSpecification
	if stream != nil {
		stream.StreamEnabled = aws.Bool(true)
	}
	_, err := db.Client.CreateTable(ctx, &def)
	var inUse *ddbtypes.ResourceInUseException
	switch {
	case errors.As(err, &inUse):
		out, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName})
		if err != nil {
			return "", err
		}
		if stream != nil && out.Table.LatestStreamArn == nil {
			if _, err := db.Client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: def.TableName, StreamSpecification: stream}); err != nil {
				return "", fmt.Errorf("turn on the table's stream: %w", err)
			}
		}
	case err != nil:
		return "", fmt.Errorf("create the table %s: %w", db.Table, err)
	}
	if ttl, ok := t.props["TimeToLiveSpecification"].(map[string]any); ok && ttl["Enabled"] == true {
		_, _ = db.Client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: def.TableName,
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(fmt.Sprint(ttl["AttributeName"])), Enabled: aws.Bool(true)}})
	}
	out, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: def.TableName})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.Table.LatestStreamArn), nil
}

// checkArch refuses bootstraps this machine cannot run.
func checkArch(st *stack) error {
	want := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[runtime.GOARCH]
	for _, f := range st.functions {
		if f.arch != want {
			return fmt.Errorf("function %s is built for %s and this machine runs %s: synthesize with -c lambdaArch=%s", f.name, f.arch, want, runtime.GOARCH)
		}
		if _, err := os.Stat(f.bootstrap); err != nil {
			return fmt.Errorf("function %s: its bootstrap is missing from the cloud assembly: %w", f.name, err)
		}
	}
	return nil
}

// repoRoot finds the module's folder from the working directory up, or
// from the binary's (.bin/localcloud) up.
func repoRoot() (string, error) {
	starts := []string{}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for d := dir; ; d = filepath.Dir(d) {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/practice-api/practice-api\n") {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("run localcloud inside the repository (or set LOCALCLOUD_TEMPLATE)")
}

// synthesize builds every function for this machine and synthesizes the
// local stage, with the settings this environment asks for, into
// .bin/localcloud-stack/cdk.out-<hash of the settings>, unless nothing it
// depends on changed since the last time; it returns the template's path. Several
// localclouds starting at once (test packages in parallel) take turns.
func synthesize(ctx context.Context) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(root, ".bin", "localcloud-stack") // .bin/localcloud is this binary
	code := filepath.Join(out, "lambda")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	unlock, err := ddblocal.LockFile(filepath.Join(out, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// One go build for every function (it links them in parallel), into a
	// folder beside; each binary is then renamed into place as
	// <function>/bootstrap: another localcloud may be running the old file
	// (writing over it would fail, text file busy).
	fresh := filepath.Join(out, "build")
	if err := os.RemoveAll(fresh); err != nil {
		return "", err
	}
	slog.Info("localcloud: building the functions' bootstraps", "arch", runtime.GOARCH, "into", code)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w",
		"-o", fresh+string(filepath.Separator), "./functions/...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build functions/...: %v\n%s", err, b)
	}
	built, err := os.ReadDir(fresh)
	if err != nil {
		return "", err
	}
	for _, e := range built {
		if err := os.MkdirAll(filepath.Join(code, e.Name()), 0o755); err != nil {
			return "", err
		}
		if err := os.Rename(filepath.Join(fresh, e.Name()), filepath.Join(code, e.Name(), "bootstrap")); err != nil {
			return "", err
		}
	}
	arch := "arm64"
	if runtime.GOARCH == "amd64" {
		arch = "amd64"
	}
	// The local stage's settings from this environment go into the synth,
	// so the template carries them; each set of settings has its own
	// assembly (a run with other settings does not synthesize over it).
	ctxMap := map[string]string{"stage": "local", "lambdaArch": arch, "codeDir": code}
	settings := synthContext()
	for k, v := range settings {
		ctxMap[k] = v
	}
	ctxJSON, _ := json.Marshal(ctxMap)
	settingsJSON, _ := json.Marshal(settings)
	// A STAGE_SETTINGS file (the stage's kept settings, infra reads it) is
	// part of what the template depends on.
	if path := os.Getenv("STAGE_SETTINGS"); path != "" {
		kept, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("STAGE_SETTINGS: %w", err)
		}
		settingsJSON = append(append(settingsJSON, '\n'), kept...)
	}
	sum := sha256.Sum256(settingsJSON)
	assembly := filepath.Join(out, "cdk.out-"+hex.EncodeToString(sum[:6]))
	fp, err := fingerprint(root, code)
	if err != nil {
		return "", err
	}
	fp += "\n" + string(ctxJSON) + "\n" + string(settingsJSON)
	tpl := filepath.Join(assembly, "PracticeApi-local.template.json")
	stamp := filepath.Join(assembly, "synth.fingerprint")
	if old, err := os.ReadFile(stamp); err == nil && string(old) == fp {
		if _, err := os.Stat(tpl); err == nil {
			return tpl, nil
		}
	}
	slog.Info("localcloud: synthesizing the local stage (cdk synth, offline)", "into", assembly, "settings", settings)
	cmd = exec.CommandContext(ctx, "go", "run", "./infra")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CDK_CONTEXT_JSON="+string(ctxJSON), "SYNTH_OUTDIR="+assembly,
		"JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20",
		"CDK_DEFAULT_ACCOUNT=", "CDK_DEFAULT_REGION=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("synthesize the local stage: %v\n%s", err, b)
	}
	return tpl, os.WriteFile(stamp, []byte(fp), 0o644)
}

// fingerprint hashes what the template depends on: the bootstraps, the
// CDK app and its context.
func fingerprint(root, code string) (string, error) {
	h := sha256.New()
	add := func(path string) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\n", strings.TrimPrefix(path, root))
		_, err = io.Copy(h, f)
		return err
	}
	var files []string
	for _, dir := range []string{code, filepath.Join(root, "infra")} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.HasSuffix(p, "_test.go") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			return "", err
		}
	}
	files = append(files, filepath.Join(root, "cdk.json"), filepath.Join(root, "go.sum"))
	sort.Strings(files)
	for _, f := range files {
		if err := add(f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkSourcePermissions asks of each function's role what Lambda needs to
// create its event sources and destinations (and refuses, as
// CloudFormation's create would fail, when it lacks them): reading the
// stream, receiving and deleting the queue's messages, sending to an
// on-failure destination.
func checkSourcePermissions(st *stack, res *resolver, pol *policies) error {
	name := func(id string) string {
		if f := st.functions[id]; f != nil {
			return f.name
		}
		return "" // not a function of the template: not checked
	}
	for _, m := range st.streamMappings {
		if err := pol.require(name(m.function), res.streamArn, "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"); err != nil {
			return err
		}
		if m.onFailure != "" {
			if err := pol.require(name(m.function), res.queues[m.onFailure].arn, "sqs:SendMessage"); err != nil {
				return err
			}
		}
	}
	for _, m := range st.queueMappings {
		if err := pol.require(name(m.function), res.queues[m.queue].arn, "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"); err != nil {
			return err
		}
	}
	for fn, c := range st.asyncConfigs {
		if c.onFailure != "" {
			if err := pol.require(name(fn), res.queues[c.onFailure].arn, "sqs:SendMessage"); err != nil {
				return err
			}
		}
	}
	return nil
}
