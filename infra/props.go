package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
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
	// AlarmEmail, when set, subscribes to the alarm topic.
	AlarmEmail string
	// ThrottleRate and ThrottleBurst limit every route of the stage, in
	// requests per second, at the gateway (context throttleRate,
	// throttleBurst): a flood, even of unknown keys, stops there.
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
}

// The gateway's default limits per stage: well above what the per-client
// limits let through (120 per minute per client), well below what would
// exhaust the account's Lambda concurrency.
const (
	DefaultThrottleRate  = 100 // requests per second, steady
	DefaultThrottleBurst = 200
)

var stagePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{1,19}$`)

// PropsFromContext reads stage, rateLimit, companyRegisterUrl, alarmEmail
// and codeDir from the app's context.
func PropsFromContext(app awscdk.App) (*Props, error) {
	get := func(k, def string) string {
		if v, ok := app.Node().TryGetContext(jsii.String(k)).(string); ok && v != "" {
			return v
		}
		return def
	}
	p := &Props{Stage: get("stage", "dev"), CodeDir: get("codeDir", ".bin/lambda"),
		CompanyRegisterURL: get("companyRegisterUrl", ""), AlarmEmail: get("alarmEmail", ""), PublicBaseURL: get("publicBaseUrl", "")}
	if !stagePattern.MatchString(p.Stage) {
		return nil, fmt.Errorf("stage %q: use 2-20 lower-case letters, digits and dashes", p.Stage)
	}
	defaultLimit := "120"
	if p.Stage == "local" { // LocalStack runs the e2e suite, which imports 2,000 rows
		defaultLimit = "100000"
	}
	rl, err := strconv.Atoi(get("rateLimit", defaultLimit))
	if err != nil || rl < 1 {
		return nil, fmt.Errorf("rateLimit must be a positive integer")
	}
	p.RateLimit = rl
	rate, err := strconv.ParseFloat(get("throttleRate", strconv.Itoa(DefaultThrottleRate)), 64)
	if err != nil || rate <= 0 {
		return nil, fmt.Errorf("throttleRate must be a positive number of requests per second")
	}
	burst, err := strconv.ParseFloat(get("throttleBurst", strconv.Itoa(DefaultThrottleBurst)), 64)
	if err != nil || burst < 1 {
		return nil, fmt.Errorf("throttleBurst must be a positive number of requests")
	}
	p.ThrottleRate, p.ThrottleBurst = rate, burst
	switch v := get("lambdaArch", "arm64"); v {
	case "arm64":
	case "amd64", "x86_64":
		p.X86 = true
	default:
		return nil, fmt.Errorf("lambdaArch must be arm64 or amd64, got %q", v)
	}
	switch v := get("reservedConcurrency", "on"); v {
	case "on":
	case "off":
		p.NoReservedConcurrency = true
	default:
		return nil, fmt.Errorf("reservedConcurrency must be on or off, got %q", v)
	}
	if p.Protected() && p.AlarmEmail == "" {
		return nil, fmt.Errorf("stage %s keeps data, so its alarms must reach someone: pass -c alarmEmail=<address> "+
			"(make deploy STAGE=%s ALARM_EMAIL=<address>)", p.Stage, p.Stage)
	}
	if p.PublicBaseURL != "" {
		u, err := url.Parse(p.PublicBaseURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return nil, fmt.Errorf("publicBaseUrl must be an https origin such as https://api.example.dk")
		}
	}
	for _, fn := range Functions {
		if _, err := os.Stat(filepath.Join(p.CodeDir, fn.Name, "bootstrap")); err != nil {
			return nil, fmt.Errorf("%s/%s/bootstrap is missing: run `make build` first", p.CodeDir, fn.Name)
		}
	}
	env, err := stageEnv(app, p)
	if err != nil {
		return nil, err
	}
	p.Env = env
	return p, nil
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
