package metrics

import (
	"cmp"
	"context"
	"log/slog"
	"time"
)

// Request metrics: each request's access log line carries them, one data
// point each (0 or 1 for the counts), per Stage, Function and Version.
const (
	Requests     = "Requests"     // 1 per request
	ServerErrors = "ServerErrors" // 1 when the answer is 5xx
	ClientErrors = "ClientErrors" // 1 when the answer is 4xx
	Latency      = "Latency"      // milliseconds, the edge's own
)

// RequestLog is the access log l, whose "request" lines (one per request,
// from the HTTP edge) also carry the request's metrics in embedded metric
// format when the process runs a version of a function: CloudWatch turns
// the line into Requests, ServerErrors, ClientErrors and Latency of that
// version (d's), with no line of their own.
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
func RequestLog(l *slog.Logger, d Dimensions) *slog.Logger {
	return slog.New(&requestHandler{next: l.Handler(), dims: d})
}

type requestHandler struct {
	next slog.Handler
	dims Dimensions
}

func (h *requestHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}
func (h *requestHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &requestHandler{next: h.next.WithAttrs(a), dims: h.dims}
}
func (h *requestHandler) WithGroup(name string) slog.Handler {
	return &requestHandler{next: h.next.WithGroup(name), dims: h.dims}
}

func (h *requestHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != "request" || h.dims.Function == "" {
		return h.next.Handle(ctx, r)
	}
	status, ms := 0, 0.0
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "status":
			status = int(a.Value.Int64())
		case "duration_ms":
			ms = a.Value.Float64()
		}
		return true
	})
	r = r.Clone()
	r.AddAttrs(RequestAttrs(h.dims, status, ms)...)
	return h.next.Handle(ctx, r)
}

// RequestAttrs are the EMF members of one request's metrics (status and
// latency), under d's Stage, Function and Version.
func RequestAttrs(d Dimensions, status int, latencyMS float64) []slog.Attr {
	flag := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	return []slog.Attr{
		slog.String("Stage", cmp.Or(d.Stage, "local")), slog.String("Function", d.Function), slog.String("Version", d.Version),
		slog.Int(Requests, 1), slog.Int(ServerErrors, flag(status >= 500)), slog.Int(ClientErrors, flag(status >= 400 && status < 500)),
		slog.Float64(Latency, latencyMS),
		slog.Any("_aws", map[string]any{"Timestamp": time.Now().UnixMilli(), "CloudWatchMetrics": []any{map[string]any{
			"Namespace": Namespace, "Dimensions": [][]string{{"Stage", "Function", "Version"}},
			"Metrics": []any{
				map[string]string{"Name": Requests, "Unit": "Count"}, map[string]string{"Name": ServerErrors, "Unit": "Count"},
				map[string]string{"Name": ClientErrors, "Unit": "Count"}, map[string]string{"Name": Latency, "Unit": "Milliseconds"},
			}}}}),
	}
}
