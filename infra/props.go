package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/practice-api/practice-api/shared/config"
)

// Props are the stage's settings, from CDK context (`-c key=value` or cdk.json).
type Props struct {
	awscdk.StackProps
	// Stage names the deployment ("dev", "staging", "prod"). Stages other
	// than dev keep their table on stack deletion and protect it.
	Stage string
	// CodeDir holds one <function>/bootstrap per Lambda (make build).
	CodeDir string
	// RateLimit is RATE_LIMIT_PER_MINUTE.
	RateLimit int
	// CompanyRegisterURL is COMPANY_REGISTER_URL ("" skips enrichment).
	CompanyRegisterURL string
	// Deployment is how a release shifts each function's traffic (setting
	// deployment, one of Deployments; default DefaultDeployment).
	Deployment string
	// TableName is the physical name of the stage's table (setting
	// tableName): empty for the table the stage was born with; a restored
	// table's name after a restore (docs/operations.md).
	TableName string
	// RestoringFrom, for the import step of a restore only (-c
	// restoring=<the table's current name, or - for the one it was born
	// with>), keeps the stage on that table and adds the restored one for
	// cdk import.
	RestoringFrom string
	// CompanyRegisterKeySecret names the Secrets Manager secret holding the
	// register's API key (COMPANY_REGISTER_KEY_SECRET): its name or ARN,
	// never the key.
	CompanyRegisterKeySecret string
	// AlarmEmail, when set, subscribes to the alarm topic.
	AlarmEmail string
	// PagerURL, when set, subscribes an HTTPS endpoint (a paging
	// service's SNS integration) to the pager topic, which critical alarms
	// notify besides the alarm topic (setting pagerUrl).
	PagerURL string
	// SmokeKeySecret names the Secrets Manager secret holding a key with
	// matters:read for the synthetic check (setting smokeKeySecret): its
	// name or ARN, never the key. Unset, the keyed checks are skipped.
	SmokeKeySecret string
	// ThrottleRate and ThrottleBurst are the stage's peak rate (requests
	// per second) and burst at the gateway (context throttleRate,
	// throttleBurst): every keyed route's throttle is its share of them
	// (ScaledRouteThrottle), so a flood, even of unknown keys, stops there,
	// and one setting moves every route.
	ThrottleRate, ThrottleBurst float64 // 0: DefaultThrottleRate, DefaultThrottleBurst
	// X86 builds the functions for x86_64 (context lambdaArch=amd64): for
	// LocalStack on x86_64 hosts; AWS stages run arm64.
	X86 bool
	// NoReservedConcurrency leaves the workers' reserved concurrency out
	// (context reservedConcurrency=off): for accounts whose concurrency
	// limit is too small to reserve any (new accounts have 10).
	NoReservedConcurrency bool
	// PublicBaseURL is PUBLIC_BASE_URL: the origin of links.next and
	// Location (a custom domain); empty uses API Gateway's domain name.
	PublicBaseURL string
	// AllowPrivateTargets is WEBHOOK_ALLOW_PRIVATE_TARGETS=1 (setting
	// allowPrivateTargets): receivers and the register on loopback and
	// private addresses. The local stage only, whose receivers are on the
	// same machine; never on AWS.
	AllowPrivateTargets bool
	// APIKeyModes is API_KEY_MODES (setting apiKeyModes): the key modes the
	// stage takes; default live on prod, live and test on local, test
	// elsewhere.
	APIKeyModes string
	// DispatcherConcurrency is the dispatcher's reserved concurrency
	// (context dispatcherConcurrency): one poller per stream shard plus the
	// sweep (DefaultDispatcherConcurrency).
	DispatcherConcurrency int
	// RegisterConcurrency bounds company-register lookups in flight
	// (context registerConcurrency, default 5: the register's allowance).
	RegisterConcurrency int
	// LogLevel and SystemLogLevel filter the functions' own and Lambda's
	// log lines (context logLevel, systemLogLevel: DEBUG, INFO, WARN,
	// ERROR); defaults INFO and WARN.
	LogLevel, SystemLogLevel string
	// DomainName and CertificateArn serve the API on a custom domain
	// (context domainName, certificateArn: an ACM certificate in the
	// stage's region); the execute-api endpoint is then turned off.
	DomainName, CertificateArn string
	// BackupCopyVaultArn, on protected stages, copies each daily backup to
	// a vault in another account (context backupCopyVaultArn).
	BackupCopyVaultArn string
	// CloudFront puts a CloudFront distribution in front of the API
	// (context cloudFront=on), and WafWebAclArn attaches a WAF web ACL to
	// it (context wafWebAclArn; a CLOUDFRONT-scope ACL, made in us-east-1):
	// per-IP rate-based rules for those who need them.
	CloudFront   bool
	WafWebAclArn string
	// PublicThrottleRate and PublicThrottleBurst limit the routes that need
	// no key ($default, the document and the reference page), which no
	// per-client limit covers (context publicThrottleRate, publicThrottleBurst).
	PublicThrottleRate, PublicThrottleBurst float64
	// OutboxShards is OUTBOX_SHARDS (context outboxShards, default 32): the
	// sweep index's partitions; it may only grow.
	OutboxShards int
	// OutboxRetentionDays is OUTBOX_RETENTION in days (context
	// outboxRetentionDays, default 7): how long a dispatched event is kept.
	OutboxRetentionDays int
	// EventRetentionDays is EVENT_RETENTION in days (context
	// eventRetentionDays, default 30, at most 90): how long the event feed
	// (GET /events) keeps events, and how far back a replay reaches.
	EventRetentionDays int
	// AccountConcurrency is the account's Lambda concurrency limit (context
	// accountConcurrency, default 1000, AWS's default): an alarm fires at
	// 80 % of it.
	AccountConcurrency int
}

// Defaults of the stage's sizes.
const (
	// DefaultDispatcherConcurrency: Lambda polls each shard of the table's
	// stream with one concurrent invocation (parallelization factor 1); an
	// on-demand table starts with a few shards and splits as it grows.
	// Ten covers eight shards plus the sweep with room; a stage whose
	// stream has more shards raises it (IteratorAge and the dispatcher's
	// throttles show it).
	DefaultDispatcherConcurrency = 10
	DefaultRegisterConcurrency   = 5
	DefaultPublicThrottleRate    = 10
	DefaultPublicThrottleBurst   = 20
)

// defaults fills what a stage did not set.
func (p *Props) defaults() {
	if p.DispatcherConcurrency <= 0 {
		p.DispatcherConcurrency = DefaultDispatcherConcurrency
	}
	if p.RegisterConcurrency <= 0 {
		p.RegisterConcurrency = DefaultRegisterConcurrency
	}
	if p.LogLevel == "" {
		p.LogLevel = "INFO"
	}
	if p.SystemLogLevel == "" {
		p.SystemLogLevel = "WARN"
	}
	if p.PublicThrottleRate <= 0 {
		p.PublicThrottleRate = DefaultPublicThrottleRate
	}
	if p.PublicThrottleBurst <= 0 {
		p.PublicThrottleBurst = DefaultPublicThrottleBurst
	}
	if p.OutboxShards <= 0 {
		p.OutboxShards = 32
	}
	if p.OutboxRetentionDays <= 0 {
		p.OutboxRetentionDays = 7
	}
	if p.EventRetentionDays <= 0 {
		p.EventRetentionDays = 30
	}
	if p.AccountConcurrency <= 0 {
		p.AccountConcurrency = 1000
	}
	if p.Deployment == "" {
		p.Deployment = p.DefaultDeployment()
	}
	if p.DomainName != "" && p.PublicBaseURL == "" {
		p.PublicBaseURL = "https://" + p.DomainName
	}
}

// PlaceholderAccount is the account id committed in cdk.json's stages.
const PlaceholderAccount = "000000000000"

// The gateway's default peak per stage: the traffic model's (ModelPeak),
// from which each keyed route gets three times its share.
const (
	DefaultThrottleRate  = ModelPeak // requests per second, steady
	DefaultThrottleBurst = 2 * ModelPeak
)

var stagePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{1,19}$`)

// SettingKeys are the settings a stage may keep (docs/settings.md): in
// cdk.json's context under "stages": {"<stage>": {…}}, beside its account
// and region; in a JSON file of the same keys that STAGE_SETTINGS names
// (kept outside the repository, for what a team would rather not commit);
// or for one run as `-c key=value`. A -c wins over the file, the file over
// cdk.json. Synth, diff and deploy all read them, so a plain
// `make deploy STAGE=prod` deploys what the last one did.
var SettingKeys = []string{"rateLimit", "companyRegisterUrl", "companyRegisterKeySecret", "alarmEmail", "publicBaseUrl", "logLevel",
	"systemLogLevel", "domainName", "certificateArn", "backupCopyVaultArn", "wafWebAclArn", "cloudFront", "dispatcherConcurrency",
	"registerConcurrency", "tableName", "deployment", "outboxShards", "outboxRetentionDays", "eventRetentionDays", "accountConcurrency", "throttleRate",
	"throttleBurst", "publicThrottleRate", "publicThrottleBurst", "lambdaArch", "reservedConcurrency", "allowPrivateTargets", "apiKeyModes",
	"pagerUrl", "smokeKeySecret"}

// stageSettings are the stage's kept settings: cdk.json's, then the
// STAGE_SETTINGS file's over them. An unknown key is an error (a typo
// would otherwise be a setting quietly not applied).
func stageSettings(app awscdk.App, stage string) (map[string]string, error) {
	out := map[string]string{}
	add := func(from string, m map[string]any) error {
		for k, v := range m {
			if k == "account" || k == "region" {
				continue
			}
			if !slices.Contains(SettingKeys, k) {
				return fmt.Errorf("%s: %q is not a setting of a stage (docs/settings.md lists them)", from, k)
			}
			out[k] = fmt.Sprint(v)
		}
		return nil
	}
	if stages, ok := app.Node().TryGetContext(jsii.String("stages")).(map[string]any); ok {
		if m, ok := stages[stage].(map[string]any); ok {
			if err := add("cdk.json stages."+stage, m); err != nil {
				return nil, err
			}
		}
	}
	if path := os.Getenv("STAGE_SETTINGS"); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("STAGE_SETTINGS: %w", err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("STAGE_SETTINGS %s: %w", path, err)
		}
		if err := add(path, m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// setting is one of a stage's settings: its key (in the context, -c, and
// a stage's kept settings), the variable of config.Vars it sets in the
// functions' environment ("" for a setting of the stack alone), its
// default for the stage p names, and how its value goes into p.
type setting struct {
	key, variable string
	def           func(p *Props) string
	set           func(p *Props, v string) error
}

// fixed is a default that is the same on every stage.
func fixed(v string) func(*Props) string { return func(*Props) string { return v } }

// onLocal is a default of the local stage (which runs black-box suites
// written for the devserver: bursts no real stage would let through) and
// of the others.
func onLocal(local, others string) func(*Props) string {
	return func(p *Props) string {
		if p.Stage == "local" {
			return local
		}
		return others
	}
}

// str sets a string field.
func str(field func(p *Props) *string) func(*Props, string) error {
	return func(p *Props, v string) error { *field(p) = v; return nil }
}

// integer sets an int field from lo to hi (no bound when hi is 0).
func integer(key string, lo, hi int, field func(p *Props) *int) func(*Props, string) error {
	return func(p *Props, v string) error {
		n, err := strconv.Atoi(v)
		switch {
		case hi > 0 && (err != nil || n < lo || n > hi):
			return fmt.Errorf("%s must be an integer from %d to %d", key, lo, hi)
		case err != nil || n < lo:
			return fmt.Errorf("%s must be a positive integer", key)
		}
		*field(p) = n
		return nil
	}
}

// choice sets a field from one of the values of to (named in the error
// as values).
func choice(key, values string, to map[string]func(p *Props)) func(*Props, string) error {
	return func(p *Props, v string) error {
		set, ok := to[v]
		if !ok {
			return fmt.Errorf("%s must be %s, got %q", key, values, v)
		}
		set(p)
		return nil
	}
}

// days is the whole days of d, as a setting's default.
func days(d time.Duration) string { return strconv.Itoa(int(d / (24 * time.Hour))) }

// logLevel sets a level field: DEBUG, INFO, WARN or ERROR.
func logLevel(key string, field func(p *Props) *string) func(*Props, string) error {
	return func(p *Props, v string) error {
		v = strings.ToUpper(v)
		if !slices.Contains([]string{"DEBUG", "INFO", "WARN", "ERROR"}, v) {
			return fmt.Errorf("%s must be DEBUG, INFO, WARN or ERROR, got %q", key, v)
		}
		*field(p) = v
		return nil
	}
}

// settings are a stage's settings, read in this order (a bad one is
// reported before the next is read); the defaults of those that set a
// variable of config.Vars are config.Defaults()'s unless the stage needs
// its own. Stage and the restore's one-off restoring are read first, by
// PropsFromContext itself.
var settings = []setting{
	{"codeDir", "", fixed(".bin/lambda"), str(func(p *Props) *string { return &p.CodeDir })},
	{"deployment", "", fixed(""), str(func(p *Props) *string { return &p.Deployment })},
	{"tableName", "TABLE_NAME", fixed(""), str(func(p *Props) *string { return &p.TableName })},
	{"companyRegisterUrl", "COMPANY_REGISTER_URL", fixed(""), str(func(p *Props) *string { return &p.CompanyRegisterURL })},
	{"companyRegisterKeySecret", "COMPANY_REGISTER_KEY_SECRET", fixed(""), str(func(p *Props) *string { return &p.CompanyRegisterKeySecret })},
	{"alarmEmail", "", fixed(""), str(func(p *Props) *string { return &p.AlarmEmail })},
	{"publicBaseUrl", "PUBLIC_BASE_URL", fixed(""), str(func(p *Props) *string { return &p.PublicBaseURL })},
	{"pagerUrl", "", fixed(""), str(func(p *Props) *string { return &p.PagerURL })},
	{"smokeKeySecret", "SMOKE_KEY_SECRET", fixed(""), str(func(p *Props) *string { return &p.SmokeKeySecret })},
	{"domainName", "", fixed(""), str(func(p *Props) *string { return &p.DomainName })},
	{"certificateArn", "", fixed(""), str(func(p *Props) *string { return &p.CertificateArn })},
	{"backupCopyVaultArn", "", fixed(""), str(func(p *Props) *string { return &p.BackupCopyVaultArn })},
	{"wafWebAclArn", "", fixed(""), str(func(p *Props) *string { return &p.WafWebAclArn })},
	{"dispatcherConcurrency", "", fixed(strconv.Itoa(DefaultDispatcherConcurrency)),
		integer("dispatcherConcurrency", 1, 0, func(p *Props) *int { return &p.DispatcherConcurrency })},
	{"registerConcurrency", "", fixed(strconv.Itoa(DefaultRegisterConcurrency)),
		integer("registerConcurrency", 1, 0, func(p *Props) *int { return &p.RegisterConcurrency })},
	{"outboxShards", "OUTBOX_SHARDS", fixed(strconv.Itoa(config.Defaults().OutboxShards)),
		integer("outboxShards", 1, 1000, func(p *Props) *int { return &p.OutboxShards })},
	{"outboxRetentionDays", "OUTBOX_RETENTION", fixed(days(config.Defaults().OutboxRetention)),
		integer("outboxRetentionDays", 1, 0, func(p *Props) *int { return &p.OutboxRetentionDays })},
	{"eventRetentionDays", "EVENT_RETENTION", fixed(days(config.Defaults().EventRetention)),
		integer("eventRetentionDays", 1, 90, func(p *Props) *int { return &p.EventRetentionDays })},
	{"accountConcurrency", "", fixed("1000"), integer("accountConcurrency", 1, 0, func(p *Props) *int { return &p.AccountConcurrency })},
	{"logLevel", "LOG_LEVEL", fixed(config.Defaults().LogLevel.String()), logLevel("logLevel", func(p *Props) *string { return &p.LogLevel })},
	{"systemLogLevel", "", fixed("WARN"), logLevel("systemLogLevel", func(p *Props) *string { return &p.SystemLogLevel })},
	{"cloudFront", "", fixed("off"), choice("cloudFront", "on or off", map[string]func(*Props){"on": func(p *Props) { p.CloudFront = true }, "off": func(*Props) {}})},
	// LocalStack runs the e2e suite, which imports 2,000 rows
	{"rateLimit", "RATE_LIMIT_PER_MINUTE", onLocal("100000", strconv.Itoa(config.Defaults().RateLimitPerMinute)),
		integer("rateLimit", 1, 0, func(p *Props) *int { return &p.RateLimit })},
	{"throttleRate", "", onLocal("10000", strconv.Itoa(DefaultThrottleRate)), func(p *Props, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return fmt.Errorf("throttleRate must be a positive number of requests per second")
		}
		p.ThrottleRate = f
		return nil
	}},
	{"throttleBurst", "", onLocal("20000", strconv.Itoa(DefaultThrottleBurst)), func(p *Props, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 1 {
			return fmt.Errorf("throttleBurst must be a positive number of requests")
		}
		p.ThrottleBurst = f
		return nil
	}},
	{"publicThrottleRate", "", onLocal("10000", strconv.Itoa(DefaultPublicThrottleRate)), floatOf("publicThrottleRate", func(p *Props) *float64 { return &p.PublicThrottleRate })},
	{"publicThrottleBurst", "", onLocal("20000", strconv.Itoa(DefaultPublicThrottleBurst)), floatOf("publicThrottleBurst", func(p *Props) *float64 { return &p.PublicThrottleBurst })},
	{"lambdaArch", "", fixed("arm64"), choice("lambdaArch", "arm64 or amd64", map[string]func(*Props){"arm64": func(*Props) {},
		"amd64": func(p *Props) { p.X86 = true }, "x86_64": func(p *Props) { p.X86 = true }})},
	{"reservedConcurrency", "", fixed("on"), choice("reservedConcurrency", "on or off", map[string]func(*Props){"on": func(*Props) {},
		"off": func(p *Props) { p.NoReservedConcurrency = true }})},
	{"allowPrivateTargets", "WEBHOOK_ALLOW_PRIVATE_TARGETS", fixed("false"), choice("allowPrivateTargets", "true or false", map[string]func(*Props){
		"true": func(p *Props) { p.AllowPrivateTargets = true }, "false": func(*Props) {}})},
	{"apiKeyModes", "API_KEY_MODES", fixed(""), str(func(p *Props) *string { return &p.APIKeyModes })},
}

// floatOf sets a float field from a positive integer.
func floatOf(key string, field func(p *Props) *float64) func(*Props, string) error {
	return func(p *Props, v string) error {
		var n int
		if err := integer(key, 1, 0, func(*Props) *int { return &n })(p, v); err != nil {
			return err
		}
		*field(p) = float64(n)
		return nil
	}
}

// PropsFromContext reads the stage's settings (the settings table): the
// context's (-c, or cdk.json's top level), then the stage's kept
// settings, then defaults; and checks them together (Props.check).
func PropsFromContext(app awscdk.App) (*Props, error) {
	ctxValue := func(k string) string {
		switch v := app.Node().TryGetContext(jsii.String(k)).(type) {
		case string:
			return v
		case nil:
			return ""
		default:
			return fmt.Sprint(v)
		}
	}
	stage := cmp.Or(ctxValue("stage"), "dev")
	kept, err := stageSettings(app, stage)
	if err != nil {
		return nil, err
	}
	p := &Props{Stage: stage, RestoringFrom: ctxValue("restoring")}
	for _, s := range settings {
		if err := s.set(p, cmp.Or(ctxValue(s.key), kept[s.key], s.def(p))); err != nil {
			return nil, err
		}
	}
	// A tear-down (make destroy: -c teardown=on) synthesizes too, and
	// needs no alarm address.
	if err := p.check(ctxValue("teardown") == "on"); err != nil {
		return nil, err
	}
	env, err := stageEnv(app, p)
	if err != nil {
		return nil, err
	}
	p.Env = env
	return p, nil
}

// check is what no one setting decides: settings that need each other,
// and the stage's own rules.
func (p *Props) check(teardown bool) error {
	if (p.DomainName == "") != (p.CertificateArn == "") {
		return fmt.Errorf("a custom domain needs both domainName and certificateArn (an ACM certificate for it in the stage's region)")
	}
	if p.WafWebAclArn != "" && !p.CloudFront {
		return fmt.Errorf("wafWebAclArn needs cloudFront=on: a WAF web ACL for per-IP limits attaches to the CloudFront distribution")
	}
	if !stagePattern.MatchString(p.Stage) {
		return fmt.Errorf("stage %q: use 2-20 lower-case letters, digits and dashes", p.Stage)
	}
	if p.Protected() && p.AlarmEmail == "" && !teardown {
		return fmt.Errorf("stage %s keeps data, so its alarms must reach someone: pass -c alarmEmail=<address> "+
			"(make deploy STAGE=%s ALARM_EMAIL=<address>)", p.Stage, p.Stage)
	}
	if p.Deployment != "" {
		if err := checkDeployment(p.Deployment); err != nil {
			return err
		}
	}
	if p.RestoringFrom != "" && (p.TableName == "" || p.TableName == p.RestoringFrom) {
		return fmt.Errorf("restoring=%s: set tableName (the stage's settings) to the restored table's name first; restoring names the table the stage runs on now (- for the one it was born with)", p.RestoringFrom)
	}
	if err := p.checkURLs(); err != nil {
		return err
	}
	if p.AllowPrivateTargets && p.Stage != "local" {
		return fmt.Errorf("allowPrivateTargets=true is for the local stage only (receivers on this machine): on AWS a subscriber URL must never reach the VPC, the metadata service or loopback")
	}
	for _, m := range strings.Split(p.KeyModes(), ",") {
		if m != "live" && m != "test" {
			return fmt.Errorf("apiKeyModes must be live, test or live,test, got %q", p.APIKeyModes)
		}
	}
	for _, fn := range Functions {
		if _, err := os.Stat(filepath.Join(p.CodeDir, fn.Name, "bootstrap")); err != nil {
			return fmt.Errorf("%s/%s/bootstrap is missing: run `make build` first", p.CodeDir, fn.Name)
		}
	}
	return nil
}

// checkURLs checks the stage's URL settings.
func (p *Props) checkURLs() error {
	if u, err := url.Parse(p.PagerURL); p.PagerURL != "" && (err != nil || u.Scheme != "https" || u.Host == "") {
		return fmt.Errorf("pagerUrl must be an https URL (SNS delivers to it; a paging service's integration URL)")
	}
	if u, err := url.Parse(p.CompanyRegisterURL); err == nil && (u.User != nil || u.RawQuery != "") {
		return fmt.Errorf("companyRegisterUrl carries credentials or a query: it is in the template and the functions' environment; keep the key in a Secrets Manager secret and name it in companyRegisterKeySecret")
	}
	if p.PublicBaseURL == "" {
		return nil
	}
	u, err := url.Parse(p.PublicBaseURL)
	// http:// only for the local stage on loopback (scripts/localcloud
	// passes its listen address when PUBLIC_BASE_URL asks for it).
	local := p.Stage == "local" && u != nil && u.Scheme == "http" && loopback(u.Hostname())
	if err != nil || (u.Scheme != "https" && !local) || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return fmt.Errorf("publicBaseUrl must be an https origin such as https://api.example.dk")
	}
	return nil
}

// stageEnv is the stage's account and region: pinned in the context's
// "stages" (cdk.json) for protected stages, and synth fails when the
// credentials in use are for another account or region; unpinned stages
// (dev) deploy where the credentials point.
func stageEnv(app awscdk.App, p *Props) (*awscdk.Environment, error) {
	credAcct, credRegion := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	var pinned struct{ Account, Region string }
	if stages, ok := app.Node().TryGetContext(jsii.String("stages")).(map[string]any); ok {
		if s, ok := stages[p.Stage].(map[string]any); ok {
			pinned.Account, _ = s["account"].(string)
			pinned.Region, _ = s["region"].(string)
		}
	}
	switch {
	case pinned.Account == "" || pinned.Region == "":
		if p.Protected() {
			return nil, fmt.Errorf("stage %s keeps data, so its account and region must be pinned: add \"stages\": {\"%s\": {\"account\": \"…\", \"region\": \"…\"}} to the context in cdk.json", p.Stage, p.Stage)
		}
		if credAcct != "" && credRegion != "" {
			return &awscdk.Environment{Account: jsii.String(credAcct), Region: jsii.String(credRegion)}, nil
		}
		return nil, nil
	case pinned.Account == PlaceholderAccount && credAcct != "":
		// Credentials are present: this is a deploy, not an offline synth.
		return nil, fmt.Errorf("cdk.json pins stage %s to the placeholder account %s: set \"stages\": {\"%s\": {\"account\": \"%s\", \"region\": \"%s\"}} in cdk.json (your account id is what `aws sts get-caller-identity --query Account` prints)",
			p.Stage, PlaceholderAccount, p.Stage, credAcct, cmp.Or(credRegion, pinned.Region))
	case credAcct != "" && credAcct != pinned.Account:
		return nil, fmt.Errorf("stage %s is pinned to account %s, but the credentials in use are for account %s", p.Stage, pinned.Account, credAcct)
	case credRegion != "" && credRegion != pinned.Region:
		return nil, fmt.Errorf("stage %s is pinned to region %s, but the credentials in use are for region %s", p.Stage, pinned.Region, credRegion)
	}
	return &awscdk.Environment{Account: jsii.String(pinned.Account), Region: jsii.String(pinned.Region)}, nil
}

// Protected reports whether the stage keeps and protects its data: every
// stage but the throw-away ones (dev, local).
func (p *Props) Protected() bool { return p.Stage != "dev" && p.Stage != "local" }

// LogRetention is how long the stage keeps its logs: a year for protected
// stages, a month otherwise.
func (p *Props) LogRetention() awslogs.RetentionDays {
	if p.Protected() {
		return awslogs.RetentionDays_ONE_YEAR
	}
	return awslogs.RetentionDays_ONE_MONTH
}

// LogRemoval keeps a protected stage's logs when its stack is deleted.
func (p *Props) LogRemoval() awscdk.RemovalPolicy {
	if p.Protected() {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}

// ReserveConcurrency reports whether workers get reserved concurrency.
func (p *Props) ReserveConcurrency() bool { return !p.NoReservedConcurrency }

// Architecture is arm64, or x86_64 for a LocalStack host that is.
func (p *Props) Architecture() awslambda.Architecture {
	if p.X86 {
		return awslambda.Architecture_X86_64()
	}
	return awslambda.Architecture_ARM_64()
}

// loopback reports whether host is this machine's loopback.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// KeyModes is API_KEY_MODES: the apiKeyModes setting, else the stage's
// default (live on prod; live and test on local, which runs the black-box
// suites written for the devserver, and the admin tool mints live keys by
// default; test elsewhere).
func (p *Props) KeyModes() string {
	if p.APIKeyModes != "" {
		return p.APIKeyModes
	}
	return cmp.Or(map[string]string{"prod": "live", "local": "live,test"}[p.Stage], "test")
}
