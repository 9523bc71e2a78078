package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/config"
)

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
var passThrough = []string{"WEBHOOK_RETRY_SCHEDULE", "WEBHOOK_CLAIM_LEASE", "WEBHOOK_CA_FILE", "ENRICHMENT_RETRY_SCHEDULE",
	"API_DEPRECATED_SINCE", "API_SUNSET", "API_DEPRECATION_LINK", "EVENT_FEED_SETTLE", "WEBHOOK_ENDPOINT_CONCURRENCY", "WEBHOOK_REPLAYS_PER_HOUR"}

// stageSetting is a setting the template gives: its variable, the local
// stage's setting that sets it (infra), and localcloud's default (the
// devserver's; "" leaves the stage's own).
type stageSetting struct{ variable, setting, def string }

var stageSettings = []stageSetting{
	{"RATE_LIMIT_PER_MINUTE", "rateLimit", strconv.Itoa(config.Defaults().RateLimitPerMinute)},
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
func checkSettings(st *stack.Stack) error {
	for _, spec := range st.Functions {
		if _, ok := spec.Env["TABLE_NAME"]; !ok {
			continue // a function that reads no settings
		}
		for _, s := range stageSettings {
			want := getenv(s.variable, s.def)
			if want == "" {
				continue
			}
			got, _ := spec.Env[s.variable].(string)
			if s.setting == "allowPrivateTargets" {
				want = map[bool]string{true: "1", false: "0"}[want == "1" || want == "true"]
			}
			if got != want {
				return fmt.Errorf("%s=%s, but the template gives function %s %s=%q: localcloud runs the template's settings, never its own over them; "+
					"synthesize the local stage with -c %s=%s (or unset LOCALCLOUD_TEMPLATE: localcloud then synthesizes with it)",
					s.variable, want, spec.Name, s.variable, got, s.setting, s.contextValue(want))
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
func functionEnv(spec *stack.Function, res *stack.Resolver, settings map[string]string, dynamo, sqsEndpoint, accessKey string) ([]string, error) {
	env := map[string]string{}
	for k, v := range spec.Env {
		s, err := res.Resolve(v)
		if err != nil {
			return nil, fmt.Errorf("function %s, variable %s: %w", spec.Name, k, err)
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
		"AWS_REGION": stack.Region, "AWS_DEFAULT_REGION": stack.Region, "AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_LAMBDA_FUNCTION_NAME": spec.Name, "AWS_LAMBDA_FUNCTION_VERSION": "1",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": fmt.Sprint(spec.MemoryMB), "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/" + spec.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME": "localcloud", "AWS_LAMBDA_LOG_FORMAT": "JSON", "_HANDLER": "bootstrap",
		"LAMBDA_TASK_ROOT": filepath.Dir(spec.Bootstrap), "TZ": ":UTC", "LANG": "en_US.UTF-8", "PATH": "/usr/local/bin:/usr/bin:/bin",
		// The table faults' panic (store.LocalFaultPanic), honoured on
		// this loopback DYNAMODB_ENDPOINT only; no deployed function has it.
		"LOCAL_FAULTS": "1",
	} {
		env[k] = v
	}
	if spec.AppLevel != "" {
		env["AWS_LAMBDA_LOG_LEVEL"] = spec.AppLevel
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}
