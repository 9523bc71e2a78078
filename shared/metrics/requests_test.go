package metrics

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
)

// TestRequestLinesCarryTheirVersionsMetrics: an access log line of a
// function's version carries its request's metrics in embedded metric
// format (every metric the directive names is a member of the line, with
// the three dimensions), a 5xx counts as a server error, a 401 as a client
// error, and other lines and processes outside Lambda are left alone.
func TestRequestLinesCarryTheirVersionsMetrics(t *testing.T) {
	var buf bytes.Buffer
	l := RequestLog(slog.New(slog.NewJSONHandler(&buf, nil)), Dimensions{Stage: "prod", Function: "matters-fn", Version: "7"})
	for _, c := range []struct {
		status         int
		server, client float64
	}{{200, 0, 0}, {503, 1, 0}, {401, 0, 1}} {
		buf.Reset()
		l.Info("request", "status", c.status, "duration_ms", 12.5)
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line["ServerErrors"] != c.server || line["ClientErrors"] != c.client || line["Requests"] != 1.0 || line["Latency"] != 12.5 ||
			line["Function"] != "matters-fn" || line["Version"] != "7" || line["Stage"] != "prod" {
			t.Errorf("%d: %v", c.status, line)
		}
		d := line["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		for _, m := range d["Metrics"].([]any) {
			if _, ok := line[m.(map[string]any)["Name"].(string)]; !ok {
				t.Errorf("metric %v is not a member of the line", m)
			}
		}
		for _, dim := range d["Dimensions"].([]any)[0].([]any) {
			if _, ok := line[dim.(string)]; !ok {
				t.Errorf("dimension %v is not a member of the line", dim)
			}
		}
	}
	buf.Reset()
	l.Info("something else", "status", 500)
	if bytes.Contains(buf.Bytes(), []byte("_aws")) {
		t.Errorf("another line got metrics: %s", buf.Bytes())
	}
	l = RequestLog(slog.New(slog.NewJSONHandler(&buf, nil)), Dimensions{Stage: "prod"})
	buf.Reset()
	l.Info("request", "status", 500, "duration_ms", 1.0)
	if bytes.Contains(buf.Bytes(), []byte("_aws")) {
		t.Errorf("a line outside Lambda got metrics: %s", buf.Bytes())
	}
}
