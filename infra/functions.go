package main

import (
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/outbox"
)

// Function is one Lambda: its directory under functions/, the API family
// it serves (none for workers), its size, exactly the table actions its
// code performs, and what it may write.
type Function struct {
	Name     string
	Family   string
	MemoryMB float64
	TimeoutS float64
	// Table are its dynamodb actions on the table: the reads (GetItem,
	// Query, ConditionCheckItem) on any item, the writes (PutItem,
	// UpdateItem, DeleteItem) only as Writes allows them.
	Table []string
	// Writes are the writes its role allows, each on some partitions
	// (dynamodb:LeadingKeys) and, where DynamoDB allows it, some
	// attributes (dynamodb:Attributes): no write reaches anything else.
	// Every write action of Table is in one of them (grantTable checks).
	Writes []Write
	// ReadKeys, when set, confine its reads to those partitions too.
	ReadKeys []Partition
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
	// Deploy marks a function CloudFormation alone invokes, at deploy (a
	// custom resource's handler): no live alias, release or alarms (a
	// failure fails the deploy, which is where it is seen).
	Deploy bool
}

// Partition is a kind of partition of the table (docs/data-model.md):
// what IAM can tell items apart by, as dynamodb:LeadingKeys holds a
// write's partition key and no condition key holds its sort key.
type Partition string

// The table's partitions.
const (
	// OrgPartition is an organisation's own partition, O#<org>: its
	// resources, events, idempotency records, counters and endpoints.
	OrgPartition Partition = "O#<org>"
	// EndpointPartition is a webhook endpoint's, O#<org>#WH#<endpoint>:
	// its delivery log, per-event deliveries and replay lock.
	EndpointPartition Partition = "O#<org>#WH#<endpoint>"
	// ClientPartition is an API client's, APICLIENT#<client>: its scopes,
	// secrets' hashes, mode, expiry, revocation and request counts.
	ClientPartition Partition = "APICLIENT#<client>"
	// ConfigPartition holds the stage's secrets (the id HMAC key, the
	// cursor key, the local webhook-secrets key): seeded at deploy.
	ConfigPartition Partition = "CONFIG"
)

// Pattern is the partition's dynamodb:LeadingKeys pattern (StringLike).
// O#* also matches the endpoints' partitions: grantTable denies those to a
// role that may write an organisation's partition but not its endpoints'.
func (p Partition) Pattern() string {
	switch p {
	case OrgPartition:
		return "O#*"
	case EndpointPartition:
		return "O#*#WH#*"
	case ClientPartition:
		return "APICLIENT#*"
	}
	return string(p)
}

// Write is one kind of write a role may make: Actions on items in
// Partitions, touching only Attributes when they are set.
type Write struct {
	Actions    []string
	Partitions []Partition
	// Attributes, when set, are the only top-level attributes the write may
	// name (dynamodb:Attributes, StringLike: the keys PK and SK among them,
	// as AWS requires); ReturnValues is then held to NONE, UPDATED_OLD or
	// UPDATED_NEW, as AWS requires for the attributes' limit to hold.
	Attributes []string
}

// counting is every API family's one write outside its own data: the
// request's count on its API client (the rl_<minute> attributes), never
// the client's scopes, secrets, mode, organisation, expiry or revocation.
var counting = Write{Actions: []string{"dynamodb:UpdateItem"}, Partitions: []Partition{ClientPartition}, Attributes: []string{"PK", "SK", "rl_*"}}

// apiActions are what every API family that creates does: authenticate
// (GetItem) and count (UpdateItem), read the stage's keys (GetItem), read
// (GetItem, Query; BatchGetItem for a list's ids), and create in one
// transaction that binds the Idempotency-Key (PutItem, UpdateItem,
// ConditionCheckItem); a matter number is an UpdateItem of its counter.
var apiActions = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem", "dynamodb:Query", "dynamodb:BatchGetItem"}

// orgWrites are a creating family's writes: its organisation's partition
// (O#<org>), and its requests' counts.
var orgWrites = []Write{{Actions: []string{"dynamodb:PutItem", "dynamodb:UpdateItem"}, Partitions: []Partition{OrgPartition}}, counting}

// readActions are what a read-only family does: authenticate and count,
// read the stage's keys, read; its one write is the count.
var readActions = []string{"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query"}

// listActions are a read-only family's whose lists take ids (a
// BatchGetItem).
var listActions = append(append([]string{}, readActions...), "dynamodb:BatchGetItem")

// Functions lists every Lambda of the service. Memory sizes come from the
// measured CPU per request (docs/cost-model.md): API functions get 512 MB,
// where a list of 100 answers in ~15 ms for $0.03 per million more than at
// 256 MB, and 10 s, below API Gateway's 30 s and the idempotency claim's
// 30 s lock.
var Functions = []Function{
	{Name: "matters", Family: routes.Matters, MemoryMB: 512, TimeoutS: 10, Table: apiActions, Writes: orgWrites, Indexes: routes.Indexes[routes.Matters]},
	{Name: "parties", Family: routes.Parties, MemoryMB: 512, TimeoutS: 10, Table: apiActions, Writes: orgWrites, Indexes: routes.Indexes[routes.Parties]},
	{Name: "timeentries", Family: routes.TimeEntries, MemoryMB: 512, TimeoutS: 10, Table: apiActions, Writes: orgWrites, Indexes: routes.Indexes[routes.TimeEntries]},
	{Name: "invoices", Family: routes.Invoices, MemoryMB: 512, TimeoutS: 10, Table: listActions, Writes: []Write{counting}, Indexes: routes.Indexes[routes.Invoices]},
	{Name: "documents", Family: routes.Documents, MemoryMB: 512, TimeoutS: 10, Table: listActions, Writes: []Write{counting}, Indexes: routes.Indexes[routes.Documents]},
	// Reports aggregate up to a year of entries in memory: CPU-bound, so the
	// larger CPU share of 1024 MB pays back directly. Reserved concurrency
	// (ReportsConcurrency) caps what they take of the account's.
	{Name: "reports", Family: routes.Reports, MemoryMB: 1024, TimeoutS: 25, Table: readActions, Writes: []Write{counting}, Indexes: routes.Indexes[routes.Reports]},
	// The dispatcher reads the pending index, claims each event and marks it
	// dispatched or parked (conditional UpdateItems). Its sweep also reads
	// the delivery claims in the same index whose worker stopped, reads
	// each claim, its endpoint and its event (GetItem), and queues its job
	// again. Reserved concurrency: Props.DispatcherConcurrency.
	{Name: "dispatcher", MemoryMB: 256, TimeoutS: 60, Table: []string{"dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:GetItem"}, Indexes: []string{string(outbox.Index)},
		// Events are in the organisation's partition, claims in the endpoint's.
		Writes: []Write{{Actions: []string{"dynamodb:UpdateItem"}, Partitions: []Partition{OrgPartition, EndpointPartition}}}},
	// Enrichment reads and rewrites the company and writes its logo. One
	// record per invocation, at most Props.RegisterConcurrency at once.
	{Name: "enrichment", MemoryMB: 256, TimeoutS: 30, Table: []string{"dynamodb:GetItem", "dynamodb:PutItem"},
		Writes: []Write{{Actions: []string{"dynamodb:PutItem"}, Partitions: []Partition{OrgPartition}}}},
	// Meta serves the OpenAPI document from its binary: no table, no queue.
	{Name: "meta", Family: routes.Meta, MemoryMB: 128, TimeoutS: 5},
	// Webhooks: endpoints and delivery logs live in the organisation's own
	// partition; it queries GSI6 only, where a replay that finds another
	// holding its URL counts that one's progress; deleting an endpoint (and
	// a replay's lock that queued nothing, in the endpoint's partition) is
	// a DeleteItem.
	{Name: "webhooks", Family: routes.Webhooks, MemoryMB: 512, TimeoutS: 10, Table: append(append([]string{}, apiActions...), "dynamodb:DeleteItem"), Indexes: routes.Indexes[routes.Webhooks],
		Writes: []Write{{Actions: []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, Partitions: []Partition{OrgPartition, EndpointPartition}}, counting}},
	// Delivery reads the endpoint, claims each attempt, and records it with
	// the delivery log and the endpoint's count in one transaction.
	// Its timeout covers 5 s to connect and 10 s for the answer, with room.
	// Its attempts are in the endpoint's partition; the endpoint's count,
	// its disabling and that event in the organisation's.
	// Reserved: its queue mapping's 100 invocations at once, and 5 more
	// (as 25 were for 20).
	{Name: "delivery", MemoryMB: 256, TimeoutS: 30, Table: []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, Reserved: 105,
		Writes: []Write{{Actions: []string{"dynamodb:PutItem", "dynamodb:UpdateItem"}, Partitions: []Partition{OrgPartition, EndpointPartition}}}},
	// The synthetic check calls the stage every minute as an integrator
	// would, read-only (seven requests of at most 5 s): no table, no queue.
	{Name: "synthetic", MemoryMB: 128, TimeoutS: 50},
	// The release check: before a release shifts any traffic, it runs the
	// smoke checks against the new version (a worker's: an empty batch).
	{Name: "releasecheck", MemoryMB: 128, TimeoutS: 120, Hook: true},
	// The stage's secrets (CONFIG: the id HMAC key, the cursor key, the
	// local webhook-secrets key), made once at deploy by a custom resource
	// (each only where none is: never replaced); no other role may write
	// them, so no function can change how ids are derived or cursors
	// sealed. It also stores the stage's default rate limit (per_minute),
	// which scripts/admin counts keys against ceilings at.
	{Name: "configseed", MemoryMB: 128, TimeoutS: 60, Table: []string{"dynamodb:GetItem", "dynamodb:PutItem"}, Deploy: true,
		ReadKeys: []Partition{ConfigPartition},
		Writes:   []Write{{Actions: []string{"dynamodb:PutItem"}, Partitions: []Partition{ConfigPartition}, Attributes: []string{"PK", "SK", "value", "per_minute"}}}},
}
