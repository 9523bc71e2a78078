// Package outbox writes business events into the table in the same
// transaction as the change that raises them. Delivery reads them from
// there, so an event that exists is delivered at least once, whatever
// crashes in between.
package outbox

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/store"
)

// Event types of the spec.
const (
	MatterCreated    = "matter.created"
	MatterClosed     = "matter.closed"
	InvoiceIssued    = "invoice.issued"
	InvoicePaid      = "invoice.paid"
	DocumentSigned   = "document.signed"
	TimeEntryCreated = "time_entry.created"
)

// CompanyCreated is internal: it starts the company's enrichment and is
// never sent to webhook subscribers.
const CompanyCreated = "company.created"

// WebhookTest is the event POST /webhooks/{id}/test sends to one endpoint on
// request; it is never raised by a change and never subscribed to.
const WebhookTest = "webhook.test"

// Types lists every event type subscribers can choose.
var Types = []string{MatterCreated, MatterClosed, InvoiceIssued, InvoicePaid, DocumentSigned, TimeEntryCreated}

// Index is the global secondary index of pending and parked events.
const Index = "GSI6"

// DefaultShards is how many partitions of the sweep index pending events
// are spread over: each takes at most 1,000 index writes a second, and an
// event writes two (pending, dispatched), so 32 shards take 16,000 events
// a second across all organisations.
const DefaultShards = 32

// Shards is the stage's shard count (OUTBOX_SHARDS), set once at start,
// before any event is written or swept. It may only grow: an event stays
// in the shard it was written to, and a sweep reads shards 0 to Shards-1.
var Shards = DefaultShards

// DefaultRetention is how long a dispatched event is kept (OUTBOX_RETENTION):
// its item gets a TTL of its creation plus this when it is dispatched. An
// event that was never dispatched (pending, parked) has none.
const DefaultRetention = 7 * 24 * time.Hour

// Event is an outbox item. Pending events carry the GSI6 slot
// OUTBOX#PENDING#<shard>; dispatch removes it. An event that cannot be
// dispatched (its sends keep failing, its type is unknown) is parked: its
// slot becomes OUTBOX#PARKED, where operators list and replay it.
type Event struct {
	store.Keys
	ID        string `dynamodbav:"id"`
	OrgID     string `dynamodbav:"org_id"`
	Type      string `dynamodbav:"type"`
	Data      string `dynamodbav:"data"` // JSON of the envelope's data object
	CreatedAt string `dynamodbav:"created_at"`
	// DispatchAttempts counts the dispatches that claimed it.
	DispatchAttempts int    `dynamodbav:"dispatch_attempts,omitempty"`
	ParkedReason     string `dynamodbav:"parked_reason,omitempty"`
	ParkedAt         string `dynamodbav:"parked_at,omitempty"`
}

// PendingPK is the sweep index partition of a shard.
func PendingPK(shard int) string { return fmt.Sprintf("OUTBOX#PENDING#%d", shard) }

// ParkedPK is the index partition of parked events.
const ParkedPK = "OUTBOX#PARKED"

// pendingPKOf is the sweep partition an event id belongs to.
func pendingPKOf(id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return PendingPK(int(h.Sum32() % uint32(max(Shards, 1))))
}

// New builds an event of org whose data object holds key: payload.
func New(org, typ, key string, payload any, now time.Time) (Event, error) {
	data, err := json.Marshal(map[string]any{key: payload})
	if err != nil {
		return Event{}, fmt.Errorf("outbox: %w", err)
	}
	id := uuid.NewString()
	created := store.FormatTime(now)
	return Event{
		Keys: store.Keys{PK: store.OrgPK(org), SK: "EVT#" + id, Kind: "event",
			GSI6PK: pendingPKOf(id), GSI6SK: store.Seq(created, id)},
		ID: id, OrgID: org, Type: typ, Data: string(data), CreatedAt: created,
	}, nil
}
