// Package metrics writes the service's own CloudWatch metrics as embedded
// metric format (EMF) log lines: CloudWatch turns each line into data
// points, in namespace PracticeApi, per stage (dev and prod in one account
// must not trip each other's alarms).
package metrics

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"
)

// Namespace holds the service's metrics (infra's alarms watch it).
const Namespace = "PracticeApi"

// Stage is the value of every metric's Stage dimension: the process's
// STAGE, set once at start (app.Apply); "local" otherwise.
var Stage = "local"

// Emit logs msg at level with counts as metrics (name → value, unit Count)
// and the Stage dimension, besides attrs.
func Emit(ctx context.Context, level slog.Level, msg string, counts map[string]int, attrs ...any) {
	var defs []any
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		defs = append(defs, map[string]string{"Name": name, "Unit": "Count"})
		attrs = append(attrs, name, counts[name])
	}
	attrs = append(attrs, "Stage", cmp.Or(Stage, "local"),
		"_aws", map[string]any{"Timestamp": time.Now().UnixMilli(), "CloudWatchMetrics": []any{map[string]any{
			"Namespace": Namespace, "Dimensions": [][]string{{"Stage"}}, "Metrics": defs}}})
	slog.Log(ctx, level, msg, attrs...)
}
