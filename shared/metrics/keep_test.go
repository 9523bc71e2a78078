package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/metrics"
)

// TestMetricLinesKeptAtEveryLevel: at every process level, a line that
// carries metrics (an "_aws" member, as EmitTo and the request line write
// it, or given by With) is written, and at INFO at least (Lambda's filter,
// which the stack holds at INFO, then keeps it too); any other line is
// written only at the level or above. Issue #38: at WARN the INFO request
// lines (every version's request metrics) were dropped, at ERROR the WARN
// OutboxDispatchFailures line its alarm reads.
func TestMetricLinesKeptAtEveryLevel(t *testing.T) {
	emf := map[string]any{"CloudWatchMetrics": []any{}}
	for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		var out bytes.Buffer
		var level slog.LevelVar
		level.Set(lv)
		log := slog.New(metrics.KeepMetrics(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}), &level))
		ctx := context.Background()
		log.Debug("debug line")
		log.Info("info line")
		log.Warn("warn line")
		log.Error("error line")
		log.Info("request", "_aws", emf)                                    // the request line
		log.Warn("outbox stream", "OutboxDispatchFailures", 1, "_aws", emf) // the dispatcher's failures
		log.With("_aws", emf).Info("with metrics")
		log.Log(ctx, slog.LevelDebug, "debug, with metrics", "_aws", emf)
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: %q: %v", lv, line, err)
			}
			got[m["msg"].(string)] = m["level"].(string)
		}
		want := map[string]string{"request": "INFO", "outbox stream": "WARN", "with metrics": "INFO"}
		for msg, l := range map[string]slog.Level{"debug line": slog.LevelDebug, "info line": slog.LevelInfo, "warn line": slog.LevelWarn, "error line": slog.LevelError} {
			if l >= lv {
				want[msg] = l.String()
			}
		}
		if lv <= slog.LevelDebug { // below INFO, the level decides (Enabled sees no attributes): written, at INFO
			want["debug, with metrics"] = "INFO"
		}
		if len(got) != len(want) {
			t.Errorf("at %s: lines %v, want %v", lv, got, want)
		}
		for msg, l := range want {
			if got[msg] != l {
				t.Errorf("at %s: %q written at %q, want %q", lv, msg, got[msg], l)
			}
		}
	}
}
