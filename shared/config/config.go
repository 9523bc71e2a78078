// Package config is the one place a process's environment is read: at its
// edge (a Lambda's cold start, a command's main), once, into a typed Config
// with defaults, checked as a whole. Everything below takes the Config (or
// the part of it it needs) as an argument; nothing in shared/ reads the
// environment on its own.
//
// Vars is the table of every setting: its name, default, who reads it and
// what it means. docs/settings.md is generated from it (go test
// ./shared/config -update) and a test keeps the two in step.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is every setting of the service's processes.
type Config struct {
	// The store.
	TableName        string
	DynamoDBEndpoint string // "" means AWS's own endpoint resolution
	Stage            string
	// LogLevel is the least level of the process's own log lines; lines
	// that carry metrics are kept at any level (app.JSONLogs).
	LogLevel slog.Level
	// FunctionName and FunctionVersion are the Lambda function and
	// version the process runs (Lambda sets them): the dimensions of the
	// request metrics a release's alarms watch.
	FunctionName, FunctionVersion string

	// The synthetic check.
	SyntheticBaseURL string
	SmokeKeySecret   string

	// The HTTP edge.
	RateLimitPerMinute int
	APIKeyModes        []string
	PublicBaseURL      string // an origin, without /api/v1; "" derives it per request
	DeprecatedSince    time.Time
	Sunset             time.Time
	DeprecationLink    string

	// Events and the outbox.
	OutboxShards    int
	OutboxRetention time.Duration
	EventFeedSettle time.Duration
	EventRetention  time.Duration

	// Workers.
	CompanyRegisterURL         string
	CompanyRegisterKeySecret   string
	SecretsManagerEndpoint     string
	EnrichmentRetrySchedule    []time.Duration
	WebhookRetrySchedule       []time.Duration
	WebhookClaimLease          time.Duration
	WebhookCAFile              string
	WebhookAllowPrivateTargets bool
	WebhookSecretsKeyARN       string
	// WebhookEndpointConcurrency bounds one endpoint's deliveries in
	// flight; WebhookReplaysPerHour one organisation's replayed events an
	// hour.
	WebhookEndpointConcurrency int
	WebhookReplaysPerHour      int
	EnrichmentQueueURL         string
	DeliveryQueueURL           string
	KMSEndpoint                string
	SQSEndpoint                string

	// The local runtimes (scripts/devserver, scripts/localcloud).
	ListenAddr         string
	LocalDynamoDBAddr  string
	LocalDynamoDBDir   string
	LocalDynamoDBLog   string
	LocalDynamoDBJar   string
	LocalDynamoDBJava  []string
	SeedDemo           bool
	RequestReadTimeout time.Duration
	// LocalDynamoDBHangAfter is how long the engine may answer nothing
	// before the runtime restarts it (or stops); 0: never probed.
	LocalDynamoDBHangAfter time.Duration
	// DeliveryWorkers is how many webhook deliveries the devserver sends
	// at once (its stand-in for the delivery function's concurrency).
	DeliveryWorkers int
	// LocalFaults lets a local runtime force a panic through the engine's
	// answers (store.LocalFaultPanic); the store refuses it unless its
	// engine is on loopback (store.ErrLocalFaults).
	LocalFaults bool
}

// Who reads a setting.
const (
	Service = "every process" // Lambdas, the local runtimes, the admin tool
	Workers = "the workers, the webhooks function, the local runtimes"
	Local   = "local runtimes" // scripts/devserver and scripts/localcloud only
	Edge    = "the API's functions, the local runtimes"
)

// Var is one setting: its variable, the default as documented, who reads
// it, what it means, and how its value is put into a Config.
type Var struct {
	Name    string
	Default string
	ReadBy  string
	Doc     string
	set     func(c *Config, v string) error
}

// Vars is every setting, in the order docs/settings.md lists them.
var Vars = []Var{
	{"TABLE_NAME", "`practice-api`", Service, "the DynamoDB table (the local runtimes create it when missing)",
		func(c *Config, v string) error { c.TableName = v; return nil }},
	{"DYNAMODB_ENDPOINT", "unset", Service, "a DynamoDB-compatible endpoint instead of AWS's (`aws` means AWS's); the local runtimes then start no engine",
		func(c *Config, v string) error {
			if v != "aws" {
				c.DynamoDBEndpoint = v
			}
			return nil
		}},
	{"STAGE", "`local`", Service, "the stage's name: the `Stage` dimension of the custom metrics",
		func(c *Config, v string) error { c.Stage = v; return nil }},
	{"LOG_LEVEL", "`INFO`", Service, "the least level of a process's own log lines: `DEBUG`, `INFO`, `WARN` or `ERROR` (on AWS, the stage's `logLevel`); a line that carries metrics is written at any level, so no metric or alarm depends on it",
		func(c *Config, v string) error {
			switch strings.ToUpper(v) {
			case "DEBUG", "TRACE":
				c.LogLevel = slog.LevelDebug
			case "INFO":
				c.LogLevel = slog.LevelInfo
			case "WARN":
				c.LogLevel = slog.LevelWarn
			case "ERROR", "FATAL":
				c.LogLevel = slog.LevelError
			default:
				return fmt.Errorf("want DEBUG, INFO, WARN or ERROR, got %q", v)
			}
			return nil
		}},
	{"AWS_LAMBDA_FUNCTION_NAME", "set by Lambda", Edge, "the function's name: the `Function` dimension of the request metrics (each request's `Requests`, `ServerErrors`, `ClientErrors`, `Latency`, in the access log line)",
		func(c *Config, v string) error { c.FunctionName = v; return nil }},
	{"AWS_LAMBDA_FUNCTION_VERSION", "set by Lambda", Edge, "the version the process runs: the `Version` dimension of the request metrics, which a release's alarms watch",
		func(c *Config, v string) error { c.FunctionVersion = v; return nil }},
	{"SYNTHETIC_BASE_URL", "set by the stack", Workers, "the synthetic check's target: the stage's base URL (`…/api/v1`), checked read-only every minute",
		func(c *Config, v string) error { c.SyntheticBaseURL = v; return nil }},
	{"SMOKE_KEY_SECRET", "unset", Workers, "the name or ARN of a Secrets Manager secret holding a key with `matters:read` for the synthetic check and a release's pre-traffic check (the stage's `smokeKeySecret`); unset, the checks that need a key are skipped",
		func(c *Config, v string) error { c.SmokeKeySecret = v; return nil }},
	{"RATE_LIMIT_PER_MINUTE", "`120`", Service, "requests per minute per API client without a limit of its own (`scripts/admin key set-limit`)",
		func(c *Config, v string) error { return positive(&c.RateLimitPerMinute, v, 1, 1_000_000) }},
	{"API_KEY_MODES", "both", Edge, "`live`, `test` or both (comma-separated): the key modes this stage accepts",
		func(c *Config, v string) error {
			c.APIKeyModes = nil
			for _, m := range strings.Split(v, ",") {
				switch m = strings.TrimSpace(m); m {
				case "":
				case "live", "test":
					c.APIKeyModes = append(c.APIKeyModes, m)
				default:
					return fmt.Errorf("unknown mode %q (live, test)", m)
				}
			}
			return nil
		}},
	{"PUBLIC_BASE_URL", "unset (AWS: the domain API Gateway was called on; locally: the listen address)", Edge,
		"the origin of `links.next` and `Location`, such as `https://api.example.dk`",
		func(c *Config, v string) (err error) { c.PublicBaseURL, err = origin(v); return err }},
	{"API_DEPRECATED_SINCE", "unset", Edge, "RFC 3339: announce this version's deprecation (`Deprecation` on every answer)",
		func(c *Config, v string) (err error) { c.DeprecatedSince, err = rfc3339(v); return err }},
	{"API_SUNSET", "unset", Edge, "RFC 3339, at least six months after `API_DEPRECATED_SINCE`: the `Sunset` of every answer",
		func(c *Config, v string) (err error) { c.Sunset, err = rfc3339(v); return err }},
	{"API_DEPRECATION_LINK", "unset", Edge, "where integrators read how to migrate (`Link: <…>; rel=\"deprecation\"`)",
		func(c *Config, v string) error { c.DeprecationLink = v; return nil }},
	{"OUTBOX_SHARDS", "`32`", Service, "partitions of the outbox's sweep index, 1 to 1000; may only grow (every process that writes or sweeps events must agree)",
		func(c *Config, v string) error { return positive(&c.OutboxShards, v, 1, 1000) }},
	{"OUTBOX_RETENTION", "`168h`", Workers, "how long a dispatched internal event (an operator's `company.enrich`, from `scripts/admin enrichment resume`) is kept, at least `1h`",
		func(c *Config, v string) error { return duration(&c.OutboxRetention, v, time.Hour, 0) }},
	{"EVENT_FEED_SETTLE", "`10s`", Workers, "how far behind now `GET /events` lists (0 to `1m`): at least twice a commit's 5 s deadline for its no-miss rule; lower only for tests",
		func(c *Config, v string) error { return duration(&c.EventFeedSettle, v, 0, time.Minute) }},
	{"EVENT_RETENTION", "`720h`", Workers, "how long the event feed keeps events and how far back a replay reaches (`1h` to `2160h`); on AWS, the stage's `eventRetentionDays`",
		func(c *Config, v string) error { return duration(&c.EventRetention, v, time.Hour, 90*24*time.Hour) }},
	{"COMPANY_REGISTER_URL", "unset", Workers, "the company register for enrichment; unset records enrichment as skipped",
		func(c *Config, v string) error { c.CompanyRegisterURL = v; return nil }},
	{"COMPANY_REGISTER_KEY_SECRET", "unset", Workers, "the name or ARN of a Secrets Manager secret holding the register's API key, read at start and again after an hour, sent as the `key` query parameter; on AWS, the stage's `companyRegisterKeySecret` (the key itself is never in a setting)",
		func(c *Config, v string) error { c.CompanyRegisterKeySecret = v; return nil }},
	{"SECRETS_MANAGER_ENDPOINT", "unset", Workers, "a Secrets Manager endpoint instead of AWS's (LocalStack, moto)",
		func(c *Config, v string) error { c.SecretsManagerEndpoint = v; return nil }},
	{"ENRICHMENT_RETRY_SCHEDULE", "`10s,1m,5m,15m`", Workers, "pauses between a company lookup's retries (Go durations)",
		func(c *Config, v string) (err error) { c.EnrichmentRetrySchedule, err = schedule(v); return err }},
	{"WEBHOOK_RETRY_SCHEDULE", "`30s,2m,8m,30m`", Workers, "pauses between a delivery's attempts (Go durations; four pauses: five attempts)",
		func(c *Config, v string) (err error) { c.WebhookRetrySchedule, err = schedule(v); return err }},
	{"WEBHOOK_CLAIM_LEASE", "`60s`", Workers, "how long a delivery attempt's claim holds (`1s` to `15m`) before the one-minute sweep sends the attempt again: longer than a send (15 s) and a worker's invocation (30 s); lower only for tests",
		func(c *Config, v string) error { return duration(&c.WebhookClaimLease, v, time.Second, 15*time.Minute) }},
	{"WEBHOOK_CA_FILE", "unset", Workers, "PEM file of extra roots to trust in receivers' certificates (a self-signed local receiver); read at start",
		func(c *Config, v string) error { c.WebhookCAFile = v; return nil }},
	{"WEBHOOK_ALLOW_PRIVATE_TARGETS", "`0` (`1` under the local runtimes: the devserver's default, the local stage's `allowPrivateTargets` under localcloud)", Workers,
		"`1` admits receivers (and the company register) on loopback and private addresses, and `http://` receivers on loopback; `0` applies AWS's guard",
		func(c *Config, v string) error { return flag(&c.WebhookAllowPrivateTargets, v) }},
	{"WEBHOOK_SECRETS_KEY_ARN", "unset", Workers, "the KMS key that seals webhook signing secrets (protected stages); unset: a key kept in the table",
		func(c *Config, v string) error { c.WebhookSecretsKeyARN = v; return nil }},
	{"WEBHOOK_ENDPOINT_CONCURRENCY", "`10`", Workers, "deliveries in flight to one endpoint, 1 to 100; a job over it waits in the queue without using an attempt (replays only its lower half, while no live one waits)",
		func(c *Config, v string) error { return positive(&c.WebhookEndpointConcurrency, v, 1, 100) }},
	{"WEBHOOK_REPLAYS_PER_HOUR", "`10000`", Workers, "events one organisation may replay in a clock hour (UTC), 1 to 1,000,000; past it a replay answers 429 with `Retry-After`",
		func(c *Config, v string) error { return positive(&c.WebhookReplaysPerHour, v, 1, 1_000_000) }},
	{"ENRICHMENT_QUEUE_URL", "set by the stack", Workers, "the SQS queue of company enrichment jobs",
		func(c *Config, v string) error { c.EnrichmentQueueURL = v; return nil }},
	{"DELIVERY_QUEUE_URL", "set by the stack", Workers, "the SQS queue of webhook delivery jobs",
		func(c *Config, v string) error { c.DeliveryQueueURL = v; return nil }},
	{"KMS_ENDPOINT", "unset", Workers, "a KMS endpoint instead of AWS's (LocalStack, moto)",
		func(c *Config, v string) error { c.KMSEndpoint = v; return nil }},
	{"SQS_ENDPOINT", "unset", Workers, "an SQS endpoint instead of AWS's (LocalStack, moto, localcloud's queue server)",
		func(c *Config, v string) error { c.SQSEndpoint = v; return nil }},
	{"LISTEN_ADDR", "`127.0.0.1:8080`", Local, "where the API listens; the base URL is `http://LISTEN_ADDR/api/v1`",
		func(c *Config, v string) error { c.ListenAddr = v; return nil }},
	{"LOCAL_DYNAMODB_ADDR", "`127.0.0.1:8000`", Local, "where the DynamoDB Local it starts listens (loopback only), for `scripts/admin` and `aws --endpoint-url`",
		func(c *Config, v string) error { c.LocalDynamoDBAddr = v; return nil }},
	{"LOCAL_DYNAMODB_DIR", "unset (in memory)", Local, "keep the data in this folder across restarts",
		func(c *Config, v string) error { c.LocalDynamoDBDir = v; return nil }},
	{"LOCAL_DYNAMODB_LOG", "a file in the temp folder", Local, "where the engine's own log goes",
		func(c *Config, v string) error { c.LocalDynamoDBLog = v; return nil }},
	{"LOCAL_DYNAMODB_JAR", "the pinned npm package's", Local, "another `DynamoDBLocal.jar` to run",
		func(c *Config, v string) error { c.LocalDynamoDBJar = v; return nil }},
	{"LOCAL_DYNAMODB_JAVA_OPTS", "unset", Local, "more options for the engine's JVM, space-separated (the tests' engines run `-XX:TieredStopAtLevel=1`: less CPU in a run of minutes)",
		func(c *Config, v string) error { c.LocalDynamoDBJava = strings.Fields(v); return nil }},
	{"SEED_DEMO", "`1`", Local, "`1`: make sure a demo organisation exists and print `{\"demo_org_id\",\"demo_key\"}` as the first line on stdout; `0`: do not",
		func(c *Config, v string) error { return flag(&c.SeedDemo, v) }},
	{"WEBHOOK_DELIVERY_WORKERS", "`200`", Local, "the devserver's webhook deliveries at once, 1 to 1000: as AWS's delivery mapping (100 invocations × 2 records)",
		func(c *Config, v string) error { return positive(&c.DeliveryWorkers, v, 1, 1000) }},
	{"REQUEST_READ_TIMEOUT", "`30s`", Local, "a whole request (headers and body) must arrive within this; a trickled body gets a 400 and the connection closed",
		func(c *Config, v string) error { return duration(&c.RequestReadTimeout, v, time.Nanosecond, 0) }},
	{"LOCAL_DYNAMODB_HANG_AFTER", "`30s`", Local, "the runtime probes its DynamoDB engine; when it has answered nothing for this long, the runtime says so in one line and restarts it on its data (`LOCAL_DYNAMODB_DIR`), stops (data in memory), or waits for it (`DYNAMODB_ENDPOINT`'s); `0` never probes",
		func(c *Config, v string) error {
			if v == "0" {
				c.LocalDynamoDBHangAfter = 0
				return nil
			}
			return duration(&c.LocalDynamoDBHangAfter, v, time.Second, 0)
		}},
	{"LOCAL_FAULTS", "`0`", Local + " (localcloud sets it for its functions)", "`1`: a store call whose answer carries the header `X-Local-Fault-Panic` panics, so that a test can force the panic path of a whole runtime from outside it (localcloud's table faults, a proxy before the engine); refused at start unless `DYNAMODB_ENDPOINT` is on loopback, so nothing deployed honours it",
		func(c *Config, v string) error { return flag(&c.LocalFaults, v) }},
}

// Defaults is the Config of an empty environment. The values a domain
// package also keeps as its own default (outbox.DefaultShards,
// webhook.DefaultSchedule, …) are written here as plain values, not
// imported: config sits below every package of the service, so that a
// Lambda reading its settings links no domain package it does not use
// (TestDefaultsAreTheDomainsOwn keeps the two in step).
func Defaults() Config {
	return Config{
		TableName: "practice-api", Stage: "local", RateLimitPerMinute: 120,
		OutboxShards: 32, OutboxRetention: 7 * 24 * time.Hour,
		EventFeedSettle: 10 * time.Second, EventRetention: 30 * 24 * time.Hour,
		EnrichmentRetrySchedule: []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute},
		WebhookRetrySchedule:    []time.Duration{30 * time.Second, 2 * time.Minute, 8 * time.Minute, 30 * time.Minute},
		WebhookClaimLease:       60 * time.Second, WebhookEndpointConcurrency: 10, WebhookReplaysPerHour: 10000,
		ListenAddr: "127.0.0.1:8080", LocalDynamoDBAddr: "127.0.0.1:8000", SeedDemo: true,
		RequestReadTimeout: 30 * time.Second, LocalDynamoDBHangAfter: 30 * time.Second, DeliveryWorkers: 200,
	}
}

// Load reads every setting through lookup (os.LookupEnv at a process's
// edge; a map in tests). An unset or empty variable keeps its default. The
// error names every variable that is wrong, not only the first.
func Load(lookup func(string) (string, bool)) (Config, error) {
	c := Defaults()
	var errs []error
	for _, v := range Vars {
		val, ok := lookup(v.Name)
		if !ok || val == "" {
			continue
		}
		if err := v.set(&c, val); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (got %q)", v.Name, err, val))
		}
	}
	if !c.Sunset.IsZero() && c.DeprecatedSince.IsZero() {
		errs = append(errs, errors.New("API_SUNSET: needs API_DEPRECATED_SINCE"))
	}
	if !c.Sunset.IsZero() && !c.DeprecatedSince.IsZero() && c.Sunset.Before(c.DeprecatedSince.AddDate(0, 6, 0)) {
		errs = append(errs, errors.New("API_SUNSET: must be at least six months after API_DEPRECATED_SINCE (spec: versioning 4)"))
	}
	return c, errors.Join(errs...)
}

// FromEnv is Load on the process's environment.
func FromEnv() (Config, error) { return Load(os.LookupEnv) }

// With returns a lookup that answers from over first, then from lookup:
// a process's own defaults for variables its environment leaves unset
// (the devserver admits private webhook targets unless told otherwise).
func With(lookup func(string) (string, bool), over map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := lookup(k); ok && v != "" {
			return v, true
		}
		v, ok := over[k]
		return v, ok
	}
}

func positive(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("must be an integer from %d to %d", lo, hi)
	}
	*dst = n
	return nil
}

// duration reads a Go duration of at least lo and, when hi > 0, at most hi.
func duration(dst *time.Duration, v string, lo, hi time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || (hi > 0 && d > hi) {
		if hi > 0 {
			return fmt.Errorf("must be a Go duration from %v to %v, such as 30s", lo, hi)
		}
		return fmt.Errorf("must be a Go duration of at least %v, such as 30s", lo)
	}
	*dst = d
	return nil
}

func flag(dst *bool, v string) error {
	switch v {
	case "1", "true":
		*dst = true
	case "0", "false":
		*dst = false
	default:
		return errors.New("must be 1 or 0")
	}
	return nil
}

func rfc3339(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, errors.New("must be an RFC 3339 time such as 2027-01-01T00:00:00Z")
	}
	return t, nil
}

// schedule reads comma-separated Go durations (a pause past SQS's 15-minute
// delay is waited out in several hops).
func schedule(v string) ([]time.Duration, error) {
	var out []time.Duration
	for _, p := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q is not a duration such as 30s or 2m", strings.TrimSpace(p))
		}
		out = append(out, d)
	}
	return out, nil
}

// origin checks an http(s) origin, with no path but an optional /api/v1
// (dropped) and no query.
func origin(v string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSuffix(v, "/"), "/api/v1"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", errors.New("must be an origin such as https://api.example.dk")
	}
	return u.Scheme + "://" + u.Host, nil
}

// Markdown is the settings table of docs/settings.md, from Vars.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| Variable | Default | Read by | What it does |\n|---|---|---|---|\n")
	for _, v := range Vars {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", v.Name, v.Default, v.ReadBy, v.Doc)
	}
	return b.String()
}
