package main

import (
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/outbox"
)

// Function is one Lambda: its directory under functions/, the API family
// it serves (none for workers), its size, and exactly the table actions
// its code performs.
type Function struct {
	Name     string
	Family   string
	MemoryMB float64
	TimeoutS float64
	Table    []string // dynamodb actions on the table
	// WriteKeys, when set, confine the function's writes to items whose
	// partition key matches one of them (dynamodb:LeadingKeys): a function
	// that only reads writes nothing but its requests' counts (APICLIENT#*)
	// and the stage's secrets (CONFIG), so no bug or injected request of
	// its can change an organisation's data.
	WriteKeys []string
	// Indexes are the GSIs it queries (routes.Indexes for the API
	// families): its role may Query those and no others.
	Indexes []string
	// Reserved is the function's reserved concurrency (0: none): a ceiling
	// on what a worker can take from the account's pool, and a floor that
	// keeps it running when the API is busy. The stack may size it from
	// the stage's context (the dispatcher, enrichment).
	Reserved float64
	// Queue access is wired per function in the stack.
	// Hook marks the release check (CodeDeploy's pre-traffic hook of every
	// other function): it has no live alias and no release of its own.
	Hook bool
}

// apiActions are what every API family that creates does: authenticate
// and count (UpdateItem), load the stage's keys (GetItem, PutItem on first
// use), read (GetItem, Query; BatchGetItem for a list's ids), and create
// in one transaction that binds the Idempotency-Key (PutItem, UpdateItem,
// ConditionCheckItem); a matter number is an UpdateItem of its counter.
var apiActions = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem", "dynamodb:Query", "dynamodb:BatchGetItem"}

// readActions are what a read-only family does: authenticate and count,
// load the stage's keys, read; its writes are confined to readWriteKeys.
var readActions = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}

// listActions are a read-only family's whose lists take ids (a
// BatchGetItem).
var listActions = append(append([]string{}, readActions...), "dynamodb:BatchGetItem")

// readWriteKeys are the partitions a read-only family writes: its
// requests' counts, and the stage's secrets on first use.
var readWriteKeys = []string{"APICLIENT#*", "CONFIG"}

// Functions lists every Lambda of the service. Memory sizes come from the
// measured CPU per request (docs/cost-model.md): API functions get 512 MB,
// where a list of 100 answers in ~15 ms for $0.03 per million more than at
// 256 MB, and 10 s, below API Gateway's 30 s and the idempotency claim's
// 30 s lock.
var Functions = []Function{
	{Name: "matters", Family: routes.Matters, MemoryMB: 512, TimeoutS: 10, Table: apiActions, Indexes: routes.Indexes[routes.Matters]},
	{Name: "parties", Family: routes.Parties, MemoryMB: 512, TimeoutS: 10, Table: apiActions, Indexes: routes.Indexes[routes.Parties]},
	{Name: "timeentries", Family: routes.TimeEntries, MemoryMB: 512, TimeoutS: 10, Table: apiActions, Indexes: routes.Indexes[routes.TimeEntries]},
	{Name: "invoices", Family: routes.Invoices, MemoryMB: 512, TimeoutS: 10, Table: listActions, WriteKeys: readWriteKeys, Indexes: routes.Indexes[routes.Invoices]},
	{Name: "documents", Family: routes.Documents, MemoryMB: 512, TimeoutS: 10, Table: listActions, WriteKeys: readWriteKeys, Indexes: routes.Indexes[routes.Documents]},
	// Reports aggregate up to a year of entries in memory: CPU-bound, so the
	// larger CPU share of 1024 MB pays back directly. Reserved concurrency
	// (ReportsConcurrency) caps what they take of the account's.
	{Name: "reports", Family: routes.Reports, MemoryMB: 1024, TimeoutS: 25, Table: readActions, WriteKeys: readWriteKeys, Indexes: routes.Indexes[routes.Reports]},
	// The dispatcher reads the pending index, claims each event and marks it
	// dispatched or parked (conditional UpdateItems). Its sweep also reads
	// the delivery claims in the same index whose worker stopped, reads
	// each claim, its endpoint and its event (GetItem), and queues its job
	// again. Reserved concurrency: Props.DispatcherConcurrency.
	{Name: "dispatcher", MemoryMB: 256, TimeoutS: 60, Table: []string{"dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:GetItem"}, Indexes: []string{outbox.Index}},
	// Enrichment reads and rewrites the company and writes its logo. One
	// record per invocation, at most Props.RegisterConcurrency at once.
	{Name: "enrichment", MemoryMB: 256, TimeoutS: 30, Table: []string{"dynamodb:GetItem", "dynamodb:PutItem"}},
	// Meta serves the OpenAPI document from its binary: no table, no queue.
	{Name: "meta", Family: routes.Meta, MemoryMB: 128, TimeoutS: 5},
	// Webhooks: endpoints and delivery logs live in the organisation's own
	// partition, so it queries no index; deleting an endpoint is a DeleteItem.
	{Name: "webhooks", Family: routes.Webhooks, MemoryMB: 512, TimeoutS: 10, Table: append(append([]string{}, apiActions...), "dynamodb:DeleteItem")},
	// Delivery reads the endpoint, claims each attempt, and records it with
	// the delivery log and the endpoint's count in one transaction.
	// Its timeout covers 5 s to connect and 10 s for the answer, with room.
	{Name: "delivery", MemoryMB: 256, TimeoutS: 30, Table: []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, Reserved: 25},
	// The synthetic check calls the stage every minute as an integrator
	// would, read-only (seven requests of at most 5 s): no table, no queue.
	{Name: "synthetic", MemoryMB: 128, TimeoutS: 50},
	// The release check: before a release shifts any traffic, it runs the
	// smoke checks against the new version (a worker's: an empty batch).
	{Name: "releasecheck", MemoryMB: 128, TimeoutS: 120, Hook: true},
}
