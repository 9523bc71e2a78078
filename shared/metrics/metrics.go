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

// Dimensions are the values of a process's metric dimensions, given to
// what writes metrics when it is built (from config.Config): its Stage
// (STAGE; "local" when empty), and the Function and Version it runs
// (Lambda's AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_FUNCTION_VERSION,
// empty outside Lambda), the dimensions of the request metrics, which a
// release's alarms watch per version.
type Dimensions struct {
	Stage, Function, Version string
}

// EmitTo logs msg at level on l (the component's logger) with counts as
// metrics (name → value, unit Count) and the Stage dimension stage
// ("local" when empty), besides attrs.
func EmitTo(ctx context.Context, l *slog.Logger, stage string, level slog.Level, msg string, counts map[string]int, attrs ...any) {
	var defs []any
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		defs = append(defs, map[string]string{"Name": name, "Unit": "Count"})
		attrs = append(attrs, name, counts[name])
	}
	attrs = append(attrs, "Stage", cmp.Or(stage, "local"),
		"_aws", map[string]any{"Timestamp": time.Now().UnixMilli(), "CloudWatchMetrics": []any{map[string]any{
			"Namespace": Namespace, "Dimensions": [][]string{{"Stage"}}, "Metrics": defs}}})
	l.Log(ctx, level, msg, attrs...)
}

// KeepMetrics is the handler every process writes its log lines through:
// a line below level is dropped unless it carries metrics (an "_aws"
// member: embedded metric format), which is written whatever level the
// stage logs at, and at least at INFO, so that neither the process's level
// nor Lambda's own filter (which the stack sets to INFO at most) can drop
// a metric or the alarm that reads it. (A metric line below INFO is
// written only when level admits it, as Enabled cannot see attributes: the
// service writes none.) next should take every level (the choice is made
// here).
func KeepMetrics(next slog.Handler, level slog.Leveler) slog.Handler {
	return &keepMetrics{next: next, level: level}
}

type keepMetrics struct {
	next  slog.Handler
	level slog.Leveler
	// metric: a member added by With carries metrics
	metric bool
}

// Enabled implements slog.Handler: a line at INFO or above may carry
// metrics, so it is built (and dropped in Handle when it carries none).
func (h *keepMetrics) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || l >= h.level.Level()
}

// Handle implements slog.Handler.
func (h *keepMetrics) Handle(ctx context.Context, r slog.Record) error {
	carries := h.metric
	if !carries {
		r.Attrs(func(a slog.Attr) bool {
			carries = a.Key == "_aws"
			return !carries
		})
	}
	if !carries {
		if r.Level < h.level.Level() {
			return nil
		}
		return h.next.Handle(ctx, r)
	}
	if r.Level < slog.LevelInfo {
		r = r.Clone()
		r.Level = slog.LevelInfo
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *keepMetrics) WithAttrs(as []slog.Attr) slog.Handler {
	m := h.metric
	for _, a := range as {
		m = m || a.Key == "_aws"
	}
	return &keepMetrics{next: h.next.WithAttrs(as), level: h.level, metric: m}
}

// WithGroup implements slog.Handler.
func (h *keepMetrics) WithGroup(name string) slog.Handler {
	return &keepMetrics{next: h.next.WithGroup(name), level: h.level, metric: h.metric}
}
