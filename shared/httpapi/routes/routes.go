// Package routes is the single source of truth for the API surface: every
// endpoint's family, method, path pattern and required scope. The devserver
// mounts it, each family's Lambda serves its part, and the CDK app creates
// the HTTP API routes from it. It imports nothing so that all three can.
package routes

// Prefix is the path prefix of this API version.
const Prefix = "/api/v1"

// Families: one Lambda each in AWS.
const (
	Matters     = "matters"
	Parties     = "parties" // clients, people, companies
	TimeEntries = "timeentries"
	Invoices    = "invoices"
	Documents   = "documents"
	Reports     = "reports"
	Webhooks    = "webhooks"
	Meta        = "meta" // the API's own description
)

// Route is one operation of the API.
type Route struct {
	Family string
	Method string
	// Path is relative to Prefix, with {name} wildcards as in net/http
	// patterns and API Gateway route keys alike.
	Path  string
	Scope string
	// Name identifies the operation; a family's handlers are keyed by it.
	Name string
	// Public routes need no key and are not rate limited (Scope is empty).
	Public bool
}

// Pattern is the net/http ServeMux pattern of the route.
func (r Route) Pattern() string { return r.Method + " " + Prefix + r.Path }

// Table lists every operation that is implemented. Later families add their
// rows here, and nowhere else.
var Table = []Route{
	{Family: Matters, Method: "GET", Path: "/matters", Scope: "matters:read", Name: "matters.list"},
	{Family: Matters, Method: "GET", Path: "/matters/{matter}", Scope: "matters:read", Name: "matters.get"},
	{Family: Matters, Method: "POST", Path: "/matters", Scope: "matters:write", Name: "matters.create"},

	{Family: Parties, Method: "GET", Path: "/clients", Scope: "clients:read", Name: "clients.list"},
	{Family: Parties, Method: "GET", Path: "/clients/{client}", Scope: "clients:read", Name: "clients.get"},
	{Family: Parties, Method: "GET", Path: "/people", Scope: "clients:read", Name: "people.list"},
	{Family: Parties, Method: "GET", Path: "/people/{person}", Scope: "clients:read", Name: "people.get"},
	{Family: Parties, Method: "GET", Path: "/companies", Scope: "clients:read", Name: "companies.list"},
	{Family: Parties, Method: "GET", Path: "/companies/{company}", Scope: "clients:read", Name: "companies.get"},
	{Family: Parties, Method: "POST", Path: "/clients", Scope: "clients:write", Name: "clients.create"},
	{Family: Parties, Method: "POST", Path: "/people", Scope: "parties:write", Name: "people.create"},
	{Family: Parties, Method: "POST", Path: "/companies", Scope: "parties:write", Name: "companies.create"},

	{Family: TimeEntries, Method: "GET", Path: "/time-entries", Scope: "time:read", Name: "time_entries.list"},
	{Family: TimeEntries, Method: "POST", Path: "/time-entries", Scope: "time:write", Name: "time_entries.create"},

	{Family: Invoices, Method: "GET", Path: "/invoices", Scope: "invoices:read", Name: "invoices.list"},
	{Family: Invoices, Method: "GET", Path: "/invoices/{invoice}", Scope: "invoices:read", Name: "invoices.get"},

	{Family: Documents, Method: "GET", Path: "/documents", Scope: "documents:read", Name: "documents.list"},
	{Family: Documents, Method: "GET", Path: "/documents/{id}", Scope: "documents:read", Name: "documents.get"},

	{Family: Reports, Method: "GET", Path: "/reports/{type}", Scope: "reports:read", Name: "reports.get"},

	{Family: Webhooks, Method: "GET", Path: "/webhooks", Scope: "webhooks:manage", Name: "webhooks.list"},
	{Family: Webhooks, Method: "GET", Path: "/webhooks/{id}", Scope: "webhooks:manage", Name: "webhooks.get"},
	{Family: Webhooks, Method: "POST", Path: "/webhooks", Scope: "webhooks:manage", Name: "webhooks.create"},
	{Family: Webhooks, Method: "PATCH", Path: "/webhooks/{id}", Scope: "webhooks:manage", Name: "webhooks.update"},
	{Family: Webhooks, Method: "DELETE", Path: "/webhooks/{id}", Scope: "webhooks:manage", Name: "webhooks.delete"},
	// Additive (versioning rule 2): recent attempts, and resending one failed event.
	{Family: Webhooks, Method: "GET", Path: "/webhooks/{id}/deliveries", Scope: "webhooks:manage", Name: "webhooks.deliveries"},
	{Family: Webhooks, Method: "POST", Path: "/webhooks/{id}/deliveries/{delivery}/retry", Scope: "webhooks:manage", Name: "webhooks.retry"},
	// Additive: a signed test event sent now (never counted as a failure); a
	// new signing secret, the old one signing beside it for a grace period.
	{Family: Webhooks, Method: "POST", Path: "/webhooks/{id}/test", Scope: "webhooks:manage", Name: "webhooks.test"},
	{Family: Webhooks, Method: "POST", Path: "/webhooks/{id}/rotate-secret", Scope: "webhooks:manage", Name: "webhooks.rotate_secret"},
	// Additive: every event of the organisation in order (its feed), and
	// the feed's events of a window queued again to one endpoint.
	{Family: Webhooks, Method: "GET", Path: "/events", Scope: "webhooks:manage", Name: "events.list"},
	{Family: Webhooks, Method: "POST", Path: "/webhooks/{id}/replay", Scope: "webhooks:manage", Name: "webhooks.replay"},

	// The OpenAPI document, for tools and integrators before they hold a key.
	{Family: Meta, Method: "GET", Path: "/openapi.json", Name: "openapi", Public: true},
	// The reference page on that document (Scalar), its files and guides.
	{Family: Meta, Method: "GET", Path: "/docs", Name: "docs", Public: true},
	{Family: Meta, Method: "GET", Path: "/docs/{file}", Name: "docs.asset", Public: true},
}

// Indexes lists the global secondary indexes each family's code queries
// (docs/data-model.md): its Lambda is granted those and no others. A test
// drives every route with every filter and holds the list to what the
// code asks of the store.
var Indexes = map[string][]string{
	Matters:     {"GSI1", "GSI2", "GSI3"},
	Parties:     {"GSI1", "GSI2"},
	TimeEntries: {"GSI1", "GSI2", "GSI3", "GSI4"},
	Invoices:    {"GSI1", "GSI2", "GSI3", "GSI5", "GSI7"},
	Documents:   {"GSI1", "GSI2", "GSI3"},
	Reports:     {"GSI1", "GSI4"},
	// A replay held by another: its progress (webhook replays, #40).
	Webhooks: {"GSI6"},
}

// Timeouts is each family's function timeout in seconds: its Lambda's
// (infra holds its table to this one), and what the devserver gives each
// request of the family, so a store that does not answer gets the same
// 503 with Retry-After on both runtimes (lambdahttp.RequestDeadlines).
var Timeouts = map[string]int{
	Matters: 10, Parties: 10, TimeEntries: 10, Invoices: 10, Documents: 10, Webhooks: 10,
	Reports: 25, Meta: 5,
}

// Traffic is the peak the service is built and priced for, in requests per
// second per route: 1,000 a second across 10,000 organisations, 57 %
// single reads, 23 % lists (the event feed's polls among them), 20 %
// creates (docs/cost-model.md). The stage's gateway throttles follow it
// (infra), and make capacity drives it. Routes not named here are rare
// (webhook management, replays).
var Traffic = map[string]float64{
	// single reads: 570/s
	"matters.get": 165, "clients.get": 90, "people.get": 60, "companies.get": 60,
	"invoices.get": 105, "documents.get": 80, "webhooks.get": 5, "reports.get": 5,
	// lists: 230/s; the feed: a fifth of the organisations polling it every
	// minute, say (30/s), throttled at 90/s
	"matters.list": 50, "clients.list": 20, "people.list": 15, "companies.list": 15, "time_entries.list": 50,
	"invoices.list": 25, "documents.list": 20, "webhooks.list": 3, "webhooks.deliveries": 2, "events.list": 30,
	// creates: 200/s
	"companies.create": 15, "people.create": 15, "clients.create": 30, "matters.create": 40, "time_entries.create": 100,
}

// Family returns the routes of one family.
func Family(family string) []Route {
	var out []Route
	for _, r := range Table {
		if r.Family == family {
			out = append(out, r)
		}
	}
	return out
}

// Families returns the family names that have routes, in table order.
func Families() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range Table {
		if !seen[r.Family] {
			seen[r.Family] = true
			out = append(out, r.Family)
		}
	}
	return out
}
