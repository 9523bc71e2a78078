// Package outbox writes business events into the table in the same
// transaction as the change that raises them. Delivery reads them from
// there, so an event that exists is delivered at least once, whatever
// crashes in between.
package outbox

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/practice-api/practice-api/shared/store"
)

// Type is an event's type: the envelope's "event" and the
// Service-Event-Type header. Only the constants below are raised.
type Type string

// Event types of the spec.
const (
	MatterCreated    Type = "matter.created"
	MatterClosed     Type = "matter.closed"
	InvoiceIssued    Type = "invoice.issued"
	InvoicePaid      Type = "invoice.paid"
	DocumentSigned   Type = "document.signed"
	TimeEntryCreated Type = "time_entry.created"
)

// Additions to the spec's types (versioning rule 2: additive), so that
// every change the API or the application makes raises an event: in the
// feed, subscribable and delivered like the spec's. Their payloads hold
// ids and status only, never personal data. docs/api.md's table of
// events says which change raises which; a test holds it to the code.
const (
	MatterUpdated    Type = "matter.updated"     // a matter's status moved (not to closed) or its fields changed
	ClientCreated    Type = "client.created"     // an engagement was created
	ClientUpdated    Type = "client.updated"     // an engagement's KYC changed
	PersonCreated    Type = "person.created"     // a person was created
	CompanyCreated   Type = "company.created"    // a company was created (its enrichment starts)
	CompanyUpdated   Type = "company.updated"    // a company's enrichment recorded an outcome (the register snapshot arrived, or a failure)
	TimeEntryUpdated Type = "time_entry.updated" // a time entry's status moved (submitted, approved, invoiced, …)
	InvoiceCreated   Type = "invoice.created"    // an invoice was created as draft or approved (as sent: invoice.issued)
	InvoiceUpdated   Type = "invoice.updated"    // an invoice's status moved, other than to sent (issued) or paid
	DocumentCreated  Type = "document.created"   // a document was recorded in the register
)

// CompanyEnrich is internal: the job that starts a company's enrichment
// (the company's insert on the table's stream sends it; an operator's
// enrichment resume writes it as an outbox event keyed by id). It is
// never sent to webhook subscribers.
const CompanyEnrich Type = "company.enrich"

// WebhookTest is the event POST /webhooks/{id}/test sends to one endpoint on
// request; it is never raised by a change and never subscribed to.
const WebhookTest Type = "webhook.test"

// WebhookEndpointDisabled is raised when an endpoint is turned off after
// its consecutive failures (an addition to the spec's types): in the feed,
// and delivered to the organisation's other endpoints subscribed to it.
const WebhookEndpointDisabled Type = "webhook_endpoint.disabled"

// Types lists every event type subscribers can choose, and the feed holds.
var Types = []Type{MatterCreated, MatterClosed, InvoiceIssued, InvoicePaid, DocumentSigned, TimeEntryCreated, WebhookEndpointDisabled,
	MatterUpdated, ClientCreated, ClientUpdated, PersonCreated, CompanyCreated, CompanyUpdated, TimeEntryUpdated, InvoiceCreated, InvoiceUpdated, DocumentCreated}

// InFeed reports whether events of typ are in the organisation's feed
// (every type subscribers can choose; not the internal company.enrich).
func InFeed(typ Type) bool { return slices.Contains(Types, typ) }

// ParseType reads an event type an integrator names (a subscription, a
// feed filter, a replay): one of Types, or an error listing them.
func ParseType(name string) (Type, error) {
	if t := Type(name); InFeed(t) {
		return t, nil
	}
	return "", fmt.Errorf("unknown event type %q; known: %s", name, strings.Join(Names(Types), ", "))
}

// Names converts event types to strings, for messages and documents.
func Names(types []Type) []string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = string(t)
	}
	return out
}

// Index is the global secondary index of pending and parked events.
const Index = store.GSI6

// DefaultShards is how many partitions of the sweep index pending events
// are spread over: each takes at most 1,000 index writes a second, and an
// event writes two (pending, dispatched), so 32 shards take 16,000 events
// a second across all organisations.
const DefaultShards = 32

// ShardsOf is the shard count of db's table: the stage's OUTBOX_SHARDS
// (store.Config.OutboxShards), DefaultShards when it has none. It may only
// grow: an event stays in the shard it was written to, and a sweep reads
// shards 0 to ShardsOf(db)-1.
func ShardsOf(db *store.DB) int {
	if db == nil || db.OutboxShards <= 0 {
		return DefaultShards
	}
	return db.OutboxShards
}

// DefaultRetention is how long a dispatched internal event is kept
// (OUTBOX_RETENTION): its item gets a TTL of its creation plus this when
// it is dispatched. An event that was never dispatched (pending, parked)
// has none.
const DefaultRetention = 7 * 24 * time.Hour

// DefaultFeedRetention is how long an event of the feed is kept
// (EVENT_RETENTION): listed by GET /events and replayable that long from
// its creation, then gone (its TTL, set when it is dispatched).
const DefaultFeedRetention = 30 * 24 * time.Hour

// Event is an outbox item. Pending events carry the GSI6 slot
// OUTBOX#PENDING#<shard>; dispatch removes it. An event that cannot be
// dispatched (its sends keep failing, its type is unknown) is parked: its
// slot becomes OUTBOX#PARKED, where operators list and replay it.
//
// An event of the feed is keyed by its sequence (EVT#<16 digits>): the
// organisation's feed is its partition's range of those keys, one Query a
// page, written with the event itself. Internal events (company.enrich
// of an operator's enrichment resume) are keyed by id (EVI#<id>) and are in no feed.
type Event struct {
	store.Keys
	ID        string `dynamodbav:"id"`
	OrgID     string `dynamodbav:"org_id"`
	Type      Type   `dynamodbav:"type"`
	Data      string `dynamodbav:"data"` // JSON of the envelope's data object
	CreatedAt string `dynamodbav:"created_at"`
	// Seq is the event's place in its organisation's feed: unique, and
	// increasing with the order in which the feed shows events (0 for an
	// internal event). Microseconds since 1970 of its commit.
	Seq int64 `dynamodbav:"seq,omitempty"`
	// DispatchAttempts counts the dispatches that claimed it.
	DispatchAttempts int    `dynamodbav:"dispatch_attempts,omitempty"`
	ParkedReason     string `dynamodbav:"parked_reason,omitempty"`
	ParkedAt         string `dynamodbav:"parked_at,omitempty"`
}

// PendingPK is the sweep index partition of a shard.
func PendingPK(shard int) string { return fmt.Sprintf("OUTBOX#PENDING#%d", shard) }

// ParkedPK is the index partition of parked events.
const ParkedPK = "OUTBOX#PARKED"

// pendingPKOf is the sweep partition an event id belongs to, of shards.
func pendingPKOf(id string, shards int) string {
	return PendingPK(ShardOf(id, shards))
}

// ShardOf is the shard of shards an event id belongs to (its pending
// entry's, and its webhook claims').
func ShardOf(id string, shards int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(max(shards, 1)))
}

// SeqSK is the sort key of the feed event with sequence seq.
func SeqSK(seq int64) string { return fmt.Sprintf("EVT#%016d", seq) }

// Add puts ev into tx: an event of the feed keyed by the sequence the
// transaction gives it when it commits (its timestamp too: the feed's
// order is the commit's), an internal one by its id; pending, in its
// shard of the table's (ShardsOf).
func Add(tx *store.TxBuilder, ev Event) int {
	ev = Pending(tx.DB(), ev)
	if !InFeed(ev.Type) {
		return tx.PutNew(ev)
	}
	return tx.PutSequenced(func(seq int64) any {
		e := ev
		e.Seq, e.SK = seq, SeqSK(seq)
		e.CreatedAt = store.FormatTime(time.UnixMicro(seq))
		e.GSI6SK = store.Seq(e.CreatedAt, e.ID)
		return e
	})
}

// Raise builds the event of org whose data object holds key: payload and
// puts it into tx, the transaction of the change that raises it.
func Raise(tx *store.TxBuilder, org string, typ Type, key string, payload any, now time.Time) error {
	ev, err := New(org, typ, key, payload, now)
	if err != nil {
		return err
	}
	Add(tx, ev)
	return nil
}

// Pending is ev as Add writes it to db's table: in its pending shard (of
// ShardsOf(db)), where the sweep finds it. For a writer outside a
// transaction (the admin tool's enrichment resume, a test's bulk load).
func Pending(db *store.DB, ev Event) Event {
	ev.GSI6PK = pendingPKOf(ev.ID, ShardsOf(db))
	return ev
}

// New builds an event of org whose data object holds key: payload; put it
// into its change's transaction with Add (which gives it its pending
// shard: until then it has none; Pending does that alone).
func New(org string, typ Type, key string, payload any, now time.Time) (Event, error) {
	data, err := json.Marshal(map[string]any{key: payload})
	if err != nil {
		return Event{}, fmt.Errorf("outbox: %w", err)
	}
	id := store.NewID()
	created := store.FormatTime(now)
	return Event{
		Keys: store.Keys{PK: store.OrgPK(org), SK: "EVI#" + id, Kind: "event",
			GSI6SK: store.Seq(created, id)},
		ID: id, OrgID: org, Type: typ, Data: string(data), CreatedAt: created,
	}, nil
}
