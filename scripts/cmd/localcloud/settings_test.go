package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
)

// TestSettingsNeverOverrideTheTemplate: the settings a template gives are
// the functions' settings. One the environment asks for differently stops
// localcloud with the synth setting that would give it; the pass-through
// settings reach only functions that read settings, and never over a
// value the template gives.
func TestSettingsNeverOverrideTheTemplate(t *testing.T) {
	st := &stack.Stack{Functions: map[string]*stack.Function{
		"Api": {Name: "matters", Bootstrap: "/x/matters/bootstrap", Env: map[string]any{"TABLE_NAME": "t", "RATE_LIMIT_PER_MINUTE": "120",
			"WEBHOOK_ALLOW_PRIVATE_TARGETS": "0", "WEBHOOK_RETRY_SCHEDULE": "9s,9s,9s,9s"}},
		"Meta": {Name: "meta", Bootstrap: "/x/meta/bootstrap", Env: map[string]any{"STAGE": "local"}},
	}}
	t.Setenv("RATE_LIMIT_PER_MINUTE", "120")
	t.Setenv("WEBHOOK_ALLOW_PRIVATE_TARGETS", "0")
	if err := checkSettings(st); err != nil {
		t.Fatalf("settings as the template gives them: %v", err)
	}
	t.Setenv("WEBHOOK_ALLOW_PRIVATE_TARGETS", "1")
	if err := checkSettings(st); err == nil || !strings.Contains(err.Error(), "-c allowPrivateTargets=true") {
		t.Fatalf("a setting the template gives otherwise: %v", err)
	}
	t.Setenv("WEBHOOK_ALLOW_PRIVATE_TARGETS", "")
	if err := checkSettings(st); err == nil {
		t.Fatal("the default (1) over a template that says 0 was accepted")
	}
	if ctx := synthContext(); ctx["allowPrivateTargets"] != "true" || ctx["rateLimit"] != "120" {
		t.Fatalf("the synth's settings by default: %v", ctx)
	}

	t.Setenv("WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s,1s")
	t.Setenv("EVENT_FEED_SETTLE", "2s")
	res := &stack.Resolver{Stack: st}
	api, err := functionEnv(st.Functions["Api"], res, passedThrough(), "http://db", "http://sqs", "LCLTEST")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(api, "WEBHOOK_RETRY_SCHEDULE=9s,9s,9s,9s") || !slices.Contains(api, "EVENT_FEED_SETTLE=2s") || !slices.Contains(api, "WEBHOOK_ALLOW_PRIVATE_TARGETS=0") {
		t.Fatalf("the API function's environment: %v", api)
	}
	meta, err := functionEnv(st.Functions["Meta"], res, passedThrough(), "http://db", "http://sqs", "LCLTEST")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range meta {
		if strings.HasPrefix(v, "EVENT_FEED_SETTLE=") || strings.HasPrefix(v, "PUBLIC_BASE_URL=") {
			t.Fatalf("a function that reads no settings got %s", v)
		}
	}
}
