package config_test

import (
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/config"
)

var update = flag.Bool("update", false, "rewrite docs/settings.md's table from config.Vars")

func lookup(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestAnEmptyEnvironmentGivesTheDefaults(t *testing.T) {
	t.Parallel()
	c, err := config.Load(lookup(nil))
	if err != nil || !reflect.DeepEqual(c, config.Defaults()) {
		t.Fatalf("%v\n%+v", err, c)
	}
	if c.RateLimitPerMinute != 120 || c.OutboxShards != 32 || c.EventFeedSettle != 10*time.Second || c.WebhookAllowPrivateTargets || !c.SeedDemo {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestSettingsAreRead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, value string
		check       func(config.Config) bool
	}{
		{"TABLE_NAME", "t1", func(c config.Config) bool { return c.TableName == "t1" }},
		{"DYNAMODB_ENDPOINT", "aws", func(c config.Config) bool { return c.DynamoDBEndpoint == "" }},
		{"DYNAMODB_ENDPOINT", "http://127.0.0.1:8000", func(c config.Config) bool { return c.DynamoDBEndpoint == "http://127.0.0.1:8000" }},
		{"RATE_LIMIT_PER_MINUTE", "7", func(c config.Config) bool { return c.RateLimitPerMinute == 7 }},
		{"API_KEY_MODES", "test", func(c config.Config) bool { return reflect.DeepEqual(c.APIKeyModes, []string{"test"}) }},
		{"PUBLIC_BASE_URL", "https://api.example.dk/api/v1/", func(c config.Config) bool { return c.PublicBaseURL == "https://api.example.dk" }},
		{"WEBHOOK_RETRY_SCHEDULE", "1s, 2s", func(c config.Config) bool {
			return reflect.DeepEqual(c.WebhookRetrySchedule, []time.Duration{time.Second, 2 * time.Second})
		}},
		{"WEBHOOK_ALLOW_PRIVATE_TARGETS", "1", func(c config.Config) bool { return c.WebhookAllowPrivateTargets }},
		{"SEED_DEMO", "0", func(c config.Config) bool { return !c.SeedDemo }},
		{"EVENT_RETENTION", "48h", func(c config.Config) bool { return c.EventRetention == 48*time.Hour }},
		{"REQUEST_READ_TIMEOUT", "2s", func(c config.Config) bool { return c.RequestReadTimeout == 2*time.Second }},
	}
	for _, tc := range cases {
		c, err := config.Load(lookup(map[string]string{tc.name: tc.value}))
		if err != nil || !tc.check(c) {
			t.Errorf("%s=%s: %v %+v", tc.name, tc.value, err, c)
		}
	}
}

// TestEveryBadSettingIsNamed: one error names every wrong variable, not
// only the first, and says what a good value looks like.
func TestEveryBadSettingIsNamed(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"RATE_LIMIT_PER_MINUTE": "0", "API_KEY_MODES": "prod", "PUBLIC_BASE_URL": "ftp://x", "OUTBOX_SHARDS": "1001",
		"OUTBOX_RETENTION": "5m", "EVENT_FEED_SETTLE": "2m", "EVENT_RETENTION": "91d", "WEBHOOK_RETRY_SCHEDULE": "1s,soon",
		"WEBHOOK_ALLOW_PRIVATE_TARGETS": "yes", "SEED_DEMO": "2", "API_DEPRECATED_SINCE": "2027-01-01", "REQUEST_READ_TIMEOUT": "0s",
	}
	_, err := config.Load(lookup(bad))
	if err == nil {
		t.Fatal("accepted")
	}
	for name := range bad {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("%s is not named in %v", name, err)
		}
	}
	_, err = config.Load(lookup(map[string]string{"API_DEPRECATED_SINCE": "2027-01-01T00:00:00Z", "API_SUNSET": "2027-03-01T00:00:00Z"}))
	if err == nil || !strings.Contains(err.Error(), "six months") {
		t.Fatalf("a sunset under six months: %v", err)
	}
	// The local runtimes' panic fault (the store refuses it off loopback:
	// store.ErrLocalFaults).
	if c, err := config.Load(lookup(map[string]string{"LOCAL_FAULTS": "1"})); err != nil || !c.LocalFaults {
		t.Errorf("LOCAL_FAULTS=1: %v %v", c.LocalFaults, err)
	}
	if _, err := config.Load(lookup(map[string]string{"LOCAL_FAULTS": "yes"})); err == nil || !strings.Contains(err.Error(), "LOCAL_FAULTS:") {
		t.Errorf("LOCAL_FAULTS=yes: %v", err)
	}
}

func TestWithGivesAProcessItsOwnDefaults(t *testing.T) {
	t.Parallel()
	over := map[string]string{"WEBHOOK_ALLOW_PRIVATE_TARGETS": "1"}
	c, _ := config.Load(config.With(lookup(nil), over))
	if !c.WebhookAllowPrivateTargets {
		t.Fatal("the process default was not applied")
	}
	c, _ = config.Load(config.With(lookup(map[string]string{"WEBHOOK_ALLOW_PRIVATE_TARGETS": "0"}), over))
	if c.WebhookAllowPrivateTargets {
		t.Fatal("the environment's 0 was overridden")
	}
}

// TestSettingsPageFollowsTheVars: docs/settings.md lists exactly the
// settings config reads, as config.Vars says (go test ./shared/config
// -update rewrites its table).
func TestSettingsPageFollowsTheVars(t *testing.T) {
	t.Parallel()
	const path, begin, end = "../../docs/settings.md", "<!-- settings:begin (generated from shared/config.Vars) -->\n", "<!-- settings:end -->\n"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated table's markers", path)
	}
	want := config.Markdown()
	if got := doc[i+len(begin) : j]; got != want {
		if *update {
			if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("%s's table is not config.Vars': run go test ./shared/config -run TestSettingsPage -update\nwant:\n%s", path, want)
	}
}
