// Package logs makes the service's loggers: JSON lines, with every CPR
// number redacted at the logger itself, whatever logs it. A request's
// path, its query, an error's text, a panic's value, a stored value quoted
// in a message, the log package's lines (aws-lambda-go's own) and the
// lines of every process (the functions, the devserver, localcloud): one
// handler sees them all before they are written, so no call site has to
// remember to redact (issue #38: the "store unavailable" and "internal
// error" lines carried /people/010190-1234 in clear, beside an access
// line that was redacted by hand).
//
// What is redacted: the message, every string attribute, every error and
// fmt.Stringer (by its text), and any other value by its JSON form (a map
// keeps its shape; only values holding a CPR change), at any depth of
// groups, and the names of attributes and groups. Numbers, booleans,
// times and durations are the service's own counts and clocks and are
// written as they are: a ten-digit number that looks like a date (a Unix
// time in seconds of some weeks of 2027) would otherwise be lost.
package logs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/practice-api/practice-api/shared/cpr"
)

// JSON is a logger writing JSON lines to w through Redacting: what every
// process of the service logs with (app.JSONLogs makes it slog's default).
func JSON(w io.Writer) *slog.Logger {
	return slog.New(Redacting(slog.NewJSONHandler(w, nil)))
}

// Redacting wraps next so that no record reaches it with a CPR in clear:
// see the package doc for what is redacted.
func Redacting(next slog.Handler) slog.Handler {
	if r, ok := next.(*handler); ok {
		return r // redacting twice changes nothing
	}
	return &handler{next: next}
}

type handler struct{ next slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = Attr(a)
	}
	return &handler{next: h.next.WithAttrs(out)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(cpr.Redact(name))}
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, cpr.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(Attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// Attr is a with every CPR in its name or value redacted.
func Attr(a slog.Attr) slog.Attr {
	a.Key = cpr.Redact(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(cpr.Redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, ga := range g {
			out[i] = Attr(ga)
		}
		a.Value = slog.GroupValue(out...)
	case slog.KindAny:
		a.Value = anyValue(v.Any())
	default: // numbers, booleans, times, durations
		a.Value = v
	}
	return a
}

// anyValue is v as the JSON handler would write it, without a CPR.
func anyValue(v any) slog.Value {
	switch t := v.(type) {
	case nil:
		return slog.AnyValue(nil)
	case error:
		return slog.StringValue(cpr.Redact(t.Error()))
	case fmt.Stringer:
		return slog.StringValue(cpr.Redact(t.String()))
	case []byte:
		return slog.StringValue(cpr.Redact(string(t)))
	}
	raw, err := marshal(v)
	if err != nil {
		return slog.StringValue(cpr.Redact(fmt.Sprintf("%+v", v)))
	}
	if !cpr.Find(string(raw)) {
		return slog.AnyValue(v) // the usual case: written as it is (an EMF map keeps its shape)
	}
	var decoded any
	if json.Unmarshal(raw, &decoded) != nil {
		return slog.StringValue(cpr.Redact(string(raw)))
	}
	clean, _ := cpr.Scrub(decoded)
	if raw, err := marshal(clean); err != nil || cpr.Find(string(raw)) {
		return slog.StringValue(cpr.Marker) // only the whole held it: drop the lot
	}
	return slog.AnyValue(clean)
}

// marshal is v's JSON as the handler writes it: & < > as they are (the
// detector reads &#48; as an entity, not \u0026#48;).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
}
