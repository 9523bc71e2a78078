package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/webhook"
)

// TestDefaultsAreTheDomainsOwn: config writes its defaults as plain values
// (it imports no domain package, so that a Lambda reading its settings
// links none it does not use); each must still be the value its domain
// package falls back on when the setting is zero.
func TestDefaultsAreTheDomainsOwn(t *testing.T) {
	t.Parallel()
	d := config.Defaults()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"OUTBOX_SHARDS", d.OutboxShards, outbox.DefaultShards},
		{"OUTBOX_RETENTION", d.OutboxRetention, outbox.DefaultRetention},
		{"EVENT_FEED_SETTLE", d.EventFeedSettle, outbox.DefaultSettle},
		{"EVENT_RETENTION", d.EventRetention, outbox.DefaultFeedRetention},
		{"ENRICHMENT_RETRY_SCHEDULE", d.EnrichmentRetrySchedule, party.DefaultEnrichSchedule},
		{"WEBHOOK_RETRY_SCHEDULE", d.WebhookRetrySchedule, webhook.DefaultSchedule},
		{"WEBHOOK_CLAIM_LEASE", d.WebhookClaimLease, webhook.ClaimLease},
		{"WEBHOOK_ENDPOINT_CONCURRENCY", d.WebhookEndpointConcurrency, webhook.DefaultEndpointConcurrency},
		{"WEBHOOK_REPLAYS_PER_HOUR", d.WebhookReplaysPerHour, webhook.DefaultReplaysPerHour},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Fatalf("config.Defaults() has %v, the domain package %v", c.got, c.want)
			}
		})
	}
}

// TestTheDocumentedDefaultsAreTheDefaults: a default Vars documents as a
// plain value (`120`) is Defaults()'s: read as a setting, it changes
// nothing. Defaults() is the one place a default is written; the table
// only shows it.
func TestTheDocumentedDefaultsAreTheDefaults(t *testing.T) {
	t.Parallel()
	n := 0
	for _, v := range config.Vars {
		def, quoted := strings.CutPrefix(v.Default, "`")
		def, closed := strings.CutSuffix(def, "`")
		if !quoted || !closed || strings.Contains(def, "`") {
			continue
		}
		n++
		t.Run(v.Name, func(t *testing.T) {
			c, err := config.Load(func(k string) (string, bool) { return def, k == v.Name })
			if err != nil || !reflect.DeepEqual(c, config.Defaults()) {
				t.Errorf("%s=%s (its documented default) gives %+v, %v; Defaults() is %+v", v.Name, def, c, err, config.Defaults())
			}
		})
	}
	if n < 10 {
		t.Fatalf("only %d documented defaults checked", n)
	}
}
