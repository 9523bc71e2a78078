package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/metrics"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// DispatcherHandler is the dispatcher Lambda: invoked by the table's stream
// it dispatches the pending events in the records themselves (no read of
// the eventually consistent pending index, so a new event goes out at once);
// invoked by the schedule it sweeps the index for anything left behind.
// Either way each event is claimed before it is sent, so the two running
// at once send it once, and an event that fails does not hold back others.
// The schedule's sweep also queues again the webhook delivery attempts
// whose worker stopped and whose job is gone (claims, when not nil).
// Its metrics go to m.
func DispatcherHandler(d *outbox.Dispatcher, claims ClaimSweeper, m Metrics) func(context.Context, json.RawMessage) error {
	return func(ctx context.Context, raw json.RawMessage) error {
		var stream events.DynamoDBEvent
		if json.Unmarshal(raw, &stream) == nil && len(stream.Records) > 0 {
			age := streamAge(stream.Records, d.Now())
			n, err := DispatchRecords(ctx, d, stream.Records)
			dispatchMetrics(ctx, m, "stream", n, err, "iterator_age_ms", age.Milliseconds())
			// Events that failed stay pending for the sweep; failing the
			// invocation would make Lambda retry the whole batch and hold
			// the shard's later events back. A company whose enrichment
			// could not start has no other trigger: the batch fails, and
			// Lambda retries it (the events in it were claimed and are not
			// sent again).
			var ce *CompanyTriggerError
			if errors.As(err, &ce) {
				return err
			}
			return nil
		}
		n, err := d.Sweep(ctx, 0)
		dispatchMetrics(ctx, m, "sweep", n, err)
		if claims != nil {
			SweepClaims(ctx, claims, m)
		}
		// Failed and parked events are counted (the alarms watch the
		// metrics); an error here would only send the schedule's event to
		// the dead-letter queue, which is kept for invocations that crashed
		// or timed out.
		return nil
	}
}

// Metrics is where a worker writes its own metrics (EMF lines): the
// process's logger (slog's default when nil) and its Stage dimension
// (STAGE), given when the worker is wired (NewWorkers).
type Metrics struct {
	Log   *slog.Logger
	Stage string
}

func (m Metrics) log() *slog.Logger {
	if m.Log != nil {
		return m.Log
	}
	return slog.Default()
}

// ClaimSweeper queues again the delivery attempts whose worker stopped
// (webhook.Deliverer).
type ClaimSweeper interface {
	SweepClaims(ctx context.Context) (int, error)
}

// SweepClaims runs one sweep of stale delivery claims and logs its EMF
// line, WebhookClaimsSwept (jobs queued again) and
// WebhookClaimSweepFailures: at WARN when it found any, as each is a
// worker that stopped mid-send and a job its queue no longer had; on m.
func SweepClaims(ctx context.Context, claims ClaimSweeper, m Metrics) {
	n, err := claims.SweepClaims(ctx)
	level, failures := slog.LevelInfo, 0
	if err != nil {
		failures = 1
	}
	if n > 0 || err != nil {
		level = slog.LevelWarn
	}
	metrics.EmitTo(ctx, m.log(), m.Stage, level, "webhook claims swept", map[string]int{"WebhookClaimsSwept": n, "WebhookClaimSweepFailures": failures}, "err", err)
}

// SweepClaimsEvery sweeps stale delivery claims every interval on c (the
// wall clock when nil) until ctx ends: the devserver's stand-in for the
// schedule's sweep; metrics on m.
func SweepClaimsEvery(ctx context.Context, claims ClaimSweeper, c clock.Clock, interval time.Duration, m Metrics) {
	t, tick := clock.Or(c).NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			SweepClaims(ctx, claims, m)
		}
	}
}

// DispatchRecords dispatches the pending outbox events among stream
// records, and starts the enrichment of companies inserted; it returns how
// many it sent.
func DispatchRecords(ctx context.Context, d *outbox.Dispatcher, records []events.DynamoDBEventRecord) (int, error) {
	var evs []outbox.Event
	unreadable, companies := 0, 0
	var companyErr error
	for _, r := range records {
		img := r.Change.NewImage
		if r.EventName == "INSERT" && img["kind"].DataType() == events.DataTypeString && img["kind"].String() == "company" {
			if err := dispatchCompany(ctx, d, img); err != nil {
				companyErr = errors.Join(companyErr, err)
			} else {
				companies++
			}
			continue
		}
		if r.EventName == "REMOVE" || img["GSI6PK"].DataType() != events.DataTypeString || img["kind"].DataType() != events.DataTypeString || img["kind"].String() != "event" {
			continue
		}
		var ev outbox.Event
		if err := store.Unmarshal(fromStream(img), &ev); err != nil || ev.ID == "" {
			unreadable++ // left pending: the next sweep parks it
			continue
		}
		evs = append(evs, ev)
	}
	n, err := d.DispatchAll(ctx, evs)
	n += companies
	if companyErr != nil {
		// The stream retries the batch (and bisects it to the record at
		// fault): a company's insert is its only trigger.
		return n, &CompanyTriggerError{Err: companyErr}
	}
	if unreadable > 0 {
		var fe *outbox.FailedEvents
		if !errors.As(err, &fe) {
			fe = &outbox.FailedEvents{First: err}
			err = fe
		}
		fe.Count += unreadable
	}
	return n, err
}

// streamAge is a stream batch's iterator age as Lambda's IteratorAge
// metric has it, the age of its last record when the dispatcher starts on
// it, from the commit time of the newest outbox event in it (its sequence,
// in microseconds; 0 when it holds none): the line a stream falling behind
// shows in.
func streamAge(records []events.DynamoDBEventRecord, now time.Time) time.Duration {
	var newest int64
	for _, r := range records {
		if v, ok := r.Change.NewImage["seq"]; ok && v.DataType() == events.DataTypeNumber {
			if n, err := v.Int64(); err == nil && n > newest {
				newest = n
			}
		}
	}
	if newest == 0 {
		return 0
	}
	return max(now.Sub(time.UnixMicro(newest)), 0)
}

// CompanyTriggerError reports companies whose enrichment could not be
// started from their insert.
type CompanyTriggerError struct{ Err error }

func (e *CompanyTriggerError) Error() string { return "start enrichment: " + e.Err.Error() }
func (e *CompanyTriggerError) Unwrap() error { return e.Err }

// dispatchCompany starts the enrichment of the company in a stream image.
func dispatchCompany(ctx context.Context, d *outbox.Dispatcher, img map[string]events.DynamoDBAttributeValue) error {
	str := func(name string) string {
		if v, ok := img[name]; ok && v.DataType() == events.DataTypeString {
			return v.String()
		}
		return ""
	}
	org, ok := strings.CutPrefix(str("PK"), "O#")
	if !ok || str("id") == "" {
		return nil // not a company item of ours: nothing to start
	}
	return d.DispatchCompany(ctx, org, str("id"), str("cvr"), str("created_at"))
}

// dispatchMetrics logs one EMF line: OutboxDispatched,
// OutboxDispatchFailures (sends that failed; those events stay pending),
// OutboxEventsParked (events given up on: they wait for an operator) and,
// of those, OutboxUnknownTypes; for the dashboard and the alarms.
func dispatchMetrics(ctx context.Context, m Metrics, how string, n int, err error, attrs ...any) {
	var fe outbox.FailedEvents
	var got *outbox.FailedEvents
	if errors.As(err, &got) {
		fe = *got
	} else if err != nil {
		fe.Count = 1 // the round itself failed
	}
	level := slog.LevelInfo
	switch {
	case fe.Parked > 0:
		level = slog.LevelError
	case fe.Count > 0: // they stay pending for the sweep, but whoever reads the log must see why
		level = slog.LevelWarn
	}
	metrics.EmitTo(ctx, m.log(), m.Stage, level, "outbox "+how, map[string]int{"OutboxDispatched": n, "OutboxDispatchFailures": fe.Count,
		"OutboxEventsParked": fe.Parked, "OutboxUnknownTypes": fe.UnknownTypes}, append([]any{"err", err}, attrs...)...)
}

// fromStream converts a stream image to the SDK's attribute values.
func fromStream(img map[string]events.DynamoDBAttributeValue) map[string]ddbtypes.AttributeValue {
	out := make(map[string]ddbtypes.AttributeValue, len(img))
	for k, v := range img {
		if av := streamValue(v); av != nil {
			out[k] = av
		}
	}
	return out
}

func streamValue(v events.DynamoDBAttributeValue) ddbtypes.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &ddbtypes.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &ddbtypes.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBoolean:
		return &ddbtypes.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeBinary:
		return &ddbtypes.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeNull:
		return &ddbtypes.AttributeValueMemberNULL{Value: true}
	case events.DataTypeStringSet:
		return &ddbtypes.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &ddbtypes.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeMap:
		return &ddbtypes.AttributeValueMemberM{Value: fromStream(v.Map())}
	case events.DataTypeList:
		var l []ddbtypes.AttributeValue
		for _, e := range v.List() {
			if av := streamValue(e); av != nil {
				l = append(l, av)
			}
		}
		return &ddbtypes.AttributeValueMemberL{Value: l}
	}
	return nil
}
