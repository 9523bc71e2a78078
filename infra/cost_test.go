package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
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
	// Each yearly rotation of a key's material adds $1 a month, for the
	// first and the second; later ones add nothing (KMS's pricing since
	// May 2024): from its third year a rotating key costs $3 a month.
	kmsRotationMonth   = 1.00
	kmsPricedRotations = 2
	// An HTTP API stage with detailed metrics publishes these per route:
	// Count, 4xx, 5xx, Latency, IntegrationLatency, DataProcessed.
	routeMetrics = 6
)

// ownMetrics counts the service's own metrics (shared/metrics, EMF, one
// Stage dimension): every name the code emits, read from its source (the
// keys of the map[string]int literals it passes to metrics.Emit and
// metrics.EmitTo).
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
		if err != nil || !strings.Contains(string(src), "metrics.Emit") { // Emit and EmitTo
			return err
		}
		if !strings.Contains(string(src), "metrics.Emit(") && !strings.Contains(string(src), "metrics.EmitTo(") {
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
		{"their rotated key material (yearly; the first two rotations $1 a month each, later ones free: from the third year)", func(stage string) float64 {
			n := 0.0
			for _, k := range resources(stage, "AWS::KMS::Key") {
				if props(k)["EnableKeyRotation"] == true {
					n += kmsPricedRotations
				}
			}
			return n
		}, kmsRotationMonth, "rotation-month"},
		{"the access log's metric filters (a metric each)", func(stage string) float64 {
			n := 0.0
			for _, f := range resources(stage, "AWS::Logs::MetricFilter") {
				n += float64(len(props(f)["MetricTransformations"].([]any)))
			}
			return n
		}, metricMonth, "metric-month"},
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

// What the traffic model's requests cost a month (docs/cost-model.md's
// table between <!-- monthly:begin --> and <!-- monthly:end -->, which
// TestMonthlyCostAtTheTrafficModel keeps equal to this arithmetic; it once
// carried a DynamoDB figure $750 off its own per-request one, and left out
// the functions' logs, SQS, data transfer and the gateway's cheaper tier).
// List prices, eu-north-1, 2026
// (https://aws.amazon.com/api-gateway/pricing/, /dynamodb/pricing/on-demand/,
// /lambda/pricing/, /cloudwatch/pricing/, /sqs/pricing/, /ec2/pricing/on-demand/
// (data transfer), /kms/pricing/).
const (
	hoursPerMonth = 730
	// API Gateway HTTP API: $1.00 a million for the first 300 million
	// requests a month, $0.90 beyond.
	httpAPIFirst, httpAPIFirstTier, httpAPIBeyond = 1.00, 300e6, 0.90
	wruMillion, rruMillion                        = 0.625, 0.125
	// Per request, the load run's mix (make capacity; docs/cost-model.md):
	// 4.62 WRU measured, plus the time entries' fourth index (0.2) and the
	// claims sweep's index entries (0.41) since: 5.23; plus every create's
	// event in its transaction since #37 (4 for a person, company or client,
	// 2 for a time entry's copy by id: 0.44 by routes.Traffic's mix): 5.67;
	// 1.73 RRU measured, plus the authentication's consistent read of the
	// client (1 RRU, since the roles may write nothing of a client but its
	// counts).
	wruPerRequest, rruPerRequest = 5.23 + 0.44, 1.73 + 1
	// Lambda, arm64 at the sizes of infra/functions.go, per million
	// requests: $0.20 of requests and the mix's duration (about 20 ms at
	// 512 MB), blended.
	lambdaMillion = 0.35
	// CloudWatch Logs: $0.50 a GB ingested (uncompressed), $0.03 a GB-month
	// archived (gzip, with 26 bytes of metadata per event), kept 12 months
	// on protected stages; JSON lines like these compress to about a
	// seventh.
	logIngestGB, logArchiveGB, logMonthsKept, logCompressed, logEventMeta = 0.50, 0.03, 12, 0.15, 26
	// The function's request line (shared/httpapi's "request", INFO), as
	// localcloud wrote it: 225–278 bytes without its metrics and 413 with
	// them locally; on AWS the Function dimension is the physical name
	// (about 40 bytes more) and paths carry ids and queries: about 300
	// and 450.
	requestLineBytes, requestMetricBytes = 300.0, 450.0
	// SQS: $0.40 a million requests. A delivery job is about two: its
	// send (a fan-out's jobs go ten to a batch), and its share of the
	// mapping's receive and delete (batches of up to ten): 1.2 to 3, by
	// how full the batches are. 0.14 deliveries a request (the load run).
	sqsMillion, sqsPerJob, jobsPerRequest = 0.40, 2.0, 0.14
	// Data transfer out to the internet: $0.09 a GB (the first 10 TB a
	// month), $0.085 beyond (to 50 TB). About 3 KB a response on average,
	// headers included: single reads and creates under 1 KB, a list page
	// of 50 about 20–30 KB, a feed poll a few KB (an estimate from the
	// response sizes of the mix: 1.8–6.8 KB, so $430–1,560 a month).
	dtoFirst, dtoFirstTB, dtoBeyond, bytesPerResponse = 0.09, 10_000.0, 0.085, 3_000.0
	// Backups: a 20 GB table, 35 daily AWS Backup copies at $0.10 a
	// GB-month and point-in-time recovery at $0.20.
	tableGB, backupGB, pitrGB, backupCopies = 20.0, 0.10, 0.20, 35
)

var monthlyTable = regexp.MustCompile(`(?s)<!-- monthly:begin -->\n.*?<!-- monthly:end -->`)

// accessLogLineBytes is the gateway's access log line for a typical
// request (AccessLogFormat with representative values): a field added to
// the format moves the logs' line of the table.
func accessLogLineBytes() float64 {
	example := map[string]string{
		"$context.requestId": "ZmJlMjdlMmMtOTA2=", "$context.routeKey": "GET /api/v1/matters/{matter}", "$context.status": "200",
		"$context.integrationErrorMessage": "-", "$context.integrationStatus": "200", "$context.responseLatency": "14",
		"$context.integrationLatency": "12", "$context.httpMethod": "GET", "$context.identity.sourceIp": "203.0.113.17",
		"$context.requestTimeEpoch": "1795747408", "$context.apiId": "a1b2c3d4e5", "$context.integration.requestId": "ee9705d8-606d-4a4c-97a4-68c8113652d2",
	}
	line := map[string]string{}
	for k, v := range AccessLogFormat {
		line[k] = example[v]
		if _, ok := example[v]; !ok {
			line[k] = v // a variable without an example: its own length
		}
	}
	b, _ := json.Marshal(line)
	return float64(len(b))
}

// TestMonthlyCostAtTheTrafficModel keeps docs/cost-model.md's table of
// what a month at the traffic model (routes.Traffic: 1,000 requests a
// second) costs equal to this file's arithmetic (UPDATE_COST_MODEL=1
// rewrites it), each line from its price and its per-request measure.
func TestMonthlyCostAtTheTrafficModel(t *testing.T) {
	perSecond := 0.0
	for _, rps := range routes.Traffic {
		perSecond += rps
	}
	requests := perSecond * 3600 * hoursPerMonth
	m := requests / 1e6
	gb := func(bytes float64) float64 { return bytes / 1e9 }
	access := accessLogLineBytes()
	logsGB := gb(requests * (access + requestLineBytes + requestMetricBytes))
	archived := logMonthsKept * (logsGB*logCompressed + gb(2*requests*logEventMeta))
	dtoGB := gb(requests * bytesPerResponse)
	dto := min(dtoGB, dtoFirstTB)*dtoFirst + max(dtoGB-dtoFirstTB, 0)*dtoBeyond
	type row struct {
		what, measure string
		dollars       float64
	}
	rows := []row{
		{"DynamoDB (on demand)", fmt.Sprintf("%.2f WRU and %.2f RRU a request: $%.2f a million", wruPerRequest, rruPerRequest, wruPerRequest*wruMillion+rruPerRequest*rruMillion),
			m * (wruPerRequest*wruMillion + rruPerRequest*rruMillion)},
		{"API Gateway (HTTP API)", fmt.Sprintf("$%.2f a million for the first %.0f million, $%.2f beyond", httpAPIFirst, httpAPIFirstTier/1e6, httpAPIBeyond),
			min(requests, httpAPIFirstTier)/1e6*httpAPIFirst + max(requests-httpAPIFirstTier, 0)/1e6*httpAPIBeyond},
		{"Lambda", fmt.Sprintf("$%.2f a million (requests and duration, arm64, the mix)", lambdaMillion), m * lambdaMillion},
		{"logs: the gateway's access log", fmt.Sprintf("%.0f bytes a line: %.0f GB ingested", access, gb(requests*access)), gb(requests*access) * logIngestGB},
		{"logs: the functions' request lines", fmt.Sprintf("about %.0f bytes a line: %.0f GB ingested", requestLineBytes, gb(requests*requestLineBytes)), gb(requests*requestLineBytes) * logIngestGB},
		{"logs: the request metrics in those lines (EMF)", fmt.Sprintf("about %.0f bytes more a line: %.0f GB ingested", requestMetricBytes, gb(requests*requestMetricBytes)), gb(requests*requestMetricBytes) * logIngestGB},
		{"logs: kept a year (protected stages)", fmt.Sprintf("%.0f GB archived once a year's logs are kept (compressed, with each event's metadata)", archived), archived * logArchiveGB},
		{"SQS", fmt.Sprintf("%.2f delivery jobs a request, about %.0f requests each: %.0f million", jobsPerRequest, sqsPerJob, m*jobsPerRequest*sqsPerJob), m * jobsPerRequest * sqsPerJob * sqsMillion},
		{"data transfer out", fmt.Sprintf("about %.0f KB a response: %.1f TB", bytesPerResponse/1000, dtoGB/1000), dto},
		{"backups and point-in-time recovery", fmt.Sprintf("a %.0f GB table: %d daily copies, and PITR", tableGB, backupCopies), tableGB*backupCopies*backupGB + tableGB*pitrGB},
		{"X-Ray", "off (nothing is instrumented); it cost about $660 at 5 % sampling", 0},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- monthly:begin -->\n| at %.0f requests a second (%.2f billion a month) | measure | $/month |\n|---|---|---|\n", perSecond, requests/1e9)
	total := 0.0
	for _, r := range rows {
		total += r.dollars
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.what, r.measure, thousands(r.dollars))
	}
	fmt.Fprintf(&b, "| **total**, beside the fixed costs above | $%.2f a million requests | **%s** |\n<!-- monthly:end -->", total/m, thousands(total))
	const doc = "../docs/cost-model.md"
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	switch cur := monthlyTable.Find(raw); {
	case cur == nil:
		t.Fatalf("%s has no table between <!-- monthly:begin --> and <!-- monthly:end -->", doc)
	case string(cur) == b.String():
	case os.Getenv("UPDATE_COST_MODEL") == "1":
		if err := os.WriteFile(doc, monthlyTable.ReplaceAllLiteral(raw, []byte(b.String())), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Errorf("%s's monthly costs differ from the arithmetic; run UPDATE_COST_MODEL=1 go test ./infra -run TestMonthlyCostAtTheTrafficModel\nwant:\n%s", doc, b.String())
	}
}

// thousands renders whole dollars with a thousands separator.
func thousands(d float64) string {
	s := fmt.Sprintf("%.0f", d)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return "$" + s
}
