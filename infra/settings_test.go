package main

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/practice-api/practice-api/shared/config"
)

// notSettings are the variables the template gives a function that are
// not settings of config.Vars, each with why.
var notSettings = map[string]string{
	"RELEASE_FUNCTIONS": "the release check's map of functions, read by app.StartReleaseCheck alone (the stack's own wiring)",
	"RELEASE_GROUPS":    "the release check's map of deployment groups, read by app.StartReleaseCheck alone",
}

// TestInfraTakesItsVariablesFromConfig: the stage's settings table names
// only variables of config.Vars and keys of SettingKeys; every variable
// the templates give a function is one of config.Vars (or notSettings
// says why not); and a stage that sets nothing gets config.Defaults() for
// every setting that has a variable, so the stack and the processes have
// one default.
func TestInfraTakesItsVariablesFromConfig(t *testing.T) {
	names := map[string]bool{}
	for _, v := range config.Vars {
		names[v.Name] = true
	}
	for _, s := range settings {
		if s.variable != "" && !names[s.variable] {
			t.Errorf("setting %s sets %s, which config.Vars does not have", s.key, s.variable)
		}
		if s.key != "codeDir" && !slices.Contains(SettingKeys, s.key) {
			t.Errorf("setting %s is read but not in SettingKeys (a stage could not keep it)", s.key)
		}
	}
	for _, k := range SettingKeys {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.key == k }) {
			t.Errorf("SettingKeys has %s, which the settings table does not read", k)
		}
	}
	for _, stage := range []string{"dev", "prod"} {
		for id, fn := range resources(stage, "AWS::Lambda::Function") {
			env, _ := props(fn)["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			for k := range vars {
				if _, ok := notSettings[k]; !names[k] && !ok {
					t.Errorf("%s: function %s is given %s, which is not in config.Vars", stage, id, k)
				}
			}
		}
	}

	ctx := map[string]any{"stage": "dev", "codeDir": standInCode(t)}
	p, err := PropsFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}))
	if err != nil {
		t.Fatal(err)
	}
	d := config.Defaults()
	for _, c := range []struct {
		variable  string
		got, want any
	}{
		{"RATE_LIMIT_PER_MINUTE", p.RateLimit, d.RateLimitPerMinute},
		{"OUTBOX_SHARDS", p.OutboxShards, d.OutboxShards},
		{"OUTBOX_RETENTION", time.Duration(p.OutboxRetentionDays) * 24 * time.Hour, d.OutboxRetention},
		{"EVENT_RETENTION", time.Duration(p.EventRetentionDays) * 24 * time.Hour, d.EventRetention},
		{"LOG_LEVEL", p.LogLevel, d.LogLevel.String()},
		{"WEBHOOK_ALLOW_PRIVATE_TARGETS", p.AllowPrivateTargets, d.WebhookAllowPrivateTargets},
	} {
		if c.got != c.want {
			t.Errorf("%s: the dev stage's default is %v, config.Defaults()'s %v", c.variable, c.got, c.want)
		}
	}
}
