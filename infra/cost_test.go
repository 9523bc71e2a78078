package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What a stage costs to have running, before any request: the priced
// resources of its template, counted, at AWS's list prices (eu-north-1,
// 2026; https://aws.amazon.com/cloudwatch/pricing/, /kms/pricing/,
// /secrets-manager/pricing/). The per-request costs are
// docs/cost-model.md's, measured in shared/families.
const (
	alarmMonth     = 0.10 // a standard-resolution alarm, per metric it reads
	metricMonth    = 0.30 // a metric published (first 10,000)
	dashboardMonth = 3.00 // beyond the account's first three
	kmsKeyMonth    = 1.00 // a customer-managed key
	// An HTTP API stage with detailed metrics publishes these per route:
	// Count, 4xx, 5xx, Latency, IntegrationLatency, DataProcessed.
	routeMetrics = 6
)

// ownMetrics counts the service's own metrics (shared/metrics, EMF, one
// Stage dimension): every name the code emits, read from its source (the
// keys of the map[string]int literals it passes to metrics.Emit).
func ownMetrics(t *testing.T) float64 {
	t.Helper()
	names := map[string]bool{}
	literal := regexp.MustCompile(`(?s)map\[string\]int\{(.*?)\}`)
	key := regexp.MustCompile(`"([A-Z][A-Za-z]+)":`)
	err := filepath.WalkDir("../shared", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(src), "metrics.Emit(") {
			return err
		}
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			for _, k := range key.FindAllStringSubmatch(m[1], -1) {
				names[k[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 7 { // OutboxDispatched, …Failures, …EventsParked, …UnknownTypes, WebhookEndpointsDisabled, WebhookClaimsSwept, WebhookClaimSweepFailures
		t.Fatalf("found only the metrics %v in shared/: the scan is broken", names)
	}
	return float64(len(names))
}

var fixedCostsTable = regexp.MustCompile(`(?s)<!-- fixed-costs:begin -->\n.*?<!-- fixed-costs:end -->`)

// TestFixedCostsFollowTheTemplate keeps docs/cost-model.md's table of
// fixed monthly costs equal to what the dev and prod templates hold
// (UPDATE_COST_MODEL=1 rewrites it): a new alarm, route, key or dashboard
// moves the table, and the test says so.
func TestFixedCostsFollowTheTemplate(t *testing.T) {
	type row struct {
		what  string
		count func(stage string) float64
		price float64
		unit  string
	}
	count := func(typ string) func(string) float64 {
		return func(stage string) float64 { return float64(len(resources(stage, typ))) }
	}
	own := ownMetrics(t)
	alarmMetrics := func(stage string) float64 {
		n := 0.0
		for _, a := range resources(stage, "AWS::CloudWatch::Alarm") {
			if m, ok := props(a)["Metrics"].([]any); ok { // metric math: each metric it reads
				for _, q := range m {
					if q.(map[string]any)["MetricStat"] != nil {
						n++
					}
				}
				continue
			}
			n++
		}
		return n
	}
	rows := []row{
		{"alarms (per metric each reads)", alarmMetrics, alarmMonth, "metric-month"},
		{"route metrics (6 per route, detailed)", func(s string) float64 { return routeMetrics * count("AWS::ApiGatewayV2::Route")(s) }, metricMonth, "metric-month"},
		{"the service's own metrics", func(string) float64 { return own }, metricMonth, "metric-month"},
		{"request metrics per live version (4 per API function: Requests, ServerErrors, ClientErrors, Latency)", func(string) float64 { return 4 * apiFunctions() }, metricMonth, "metric-month"},
		{"dashboards", count("AWS::CloudWatch::Dashboard"), dashboardMonth, "month"},
		{"KMS keys (table, webhook secrets)", count("AWS::KMS::Key"), kmsKeyMonth, "month"},
	}
	var b strings.Builder
	b.WriteString("<!-- fixed-costs:begin -->\n| what | dev | prod | price | prod $/month |\n|---|---|---|---|---|\n")
	total := map[string]float64{}
	for _, r := range rows {
		dev, prod := r.count("dev"), r.count("prod")
		total["dev"] += dev * r.price
		total["prod"] += prod * r.price
		fmt.Fprintf(&b, "| %s | %g | %g | $%.2f per %s | %.2f |\n", r.what, dev, prod, r.price, r.unit, prod*r.price)
	}
	fmt.Fprintf(&b, "| **total** (dev: $%.2f) | | | | **%.2f** |\n<!-- fixed-costs:end -->", total["dev"], total["prod"])
	const doc = "../docs/cost-model.md"
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	cur := fixedCostsTable.Find(raw)
	switch {
	case cur == nil:
		t.Fatalf("%s has no table between <!-- fixed-costs:begin --> and <!-- fixed-costs:end -->", doc)
	case string(cur) == b.String():
	case os.Getenv("UPDATE_COST_MODEL") == "1":
		if err := os.WriteFile(doc, fixedCostsTable.ReplaceAllLiteral(raw, []byte(b.String())), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Errorf("%s's fixed costs differ from the templates; run UPDATE_COST_MODEL=1 go test ./infra -run TestFixedCostsFollowTheTemplate\nwant:\n%s", doc, b.String())
	}
}

// apiFunctions counts the functions that serve routes: each publishes its
// live version's request metrics (shared/metrics, in the access log's
// lines); during a release the new version's are billed too, by the hour.
func apiFunctions() float64 {
	n := 0.0
	for _, fn := range Functions {
		if fn.Family != "" {
			n++
		}
	}
	return n
}
