package build

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/report"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/webhook"
	"github.com/practice-api/practice-api/shared/workflow"
)

// op is the documentation of one operation beyond what the route table says.
type op struct {
	path        string // when one route is documented as several paths
	id          string // operationId; default the route's name
	summary     string
	description string
	params      []M
	pathParam   M        // path parameters that are not ids, by name
	body        string   // request body schema
	optional    bool     // the body may be left out
	media       []string // a 2xx without a JSON schema carries text of these types (the reference page)
	ok          []resp
	errs        []int // error statuses besides 401, 403, 429, 500, 503
}

type resp struct {
	status  int
	desc    string
	schema  string // "" for no body
	headers []string
}

// rateHeaders are on every answer to an authenticated request that was
// counted (with Cache-Control: no-store, as they carry the organisation's data).
var rateHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit", "Cache-Control"}

// always are on every answer: the request id and a deprecation's announcement.
var always = []string{"X-Request-Id", "Deprecation", "Sunset", "Link"}

var errorResponse = map[int]string{
	304: "NotModified", 400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
	413: "PayloadTooLarge", 422: "Unprocessable", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

func (o op) render(rt routes.Route) M {
	id := o.id
	if id == "" {
		id = rt.Name
	}
	out := M{"operationId": id, "summary": o.summary, "tags": []string{familyTag[rt.Family]}}
	desc := o.description
	if !rt.Public {
		// The scope is said in words and in x-required-scope: an http
		// bearer scheme has no scopes to list, and client generators
		// trip on a requirement naming some (Spectral's
		// oas3-operation-security-defined).
		desc = strings.TrimSpace(desc + " Requires the scope `" + rt.Scope + "`.")
	}
	if desc != "" {
		out["description"] = desc
	}
	path := o.path
	if path == "" {
		path = rt.Path
	}
	var params []M
	for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
		if p, ok := o.pathParam[m[1]]; ok {
			params = append(params, p.(M))
			continue
		}
		params = append(params, M{"name": m[1], "in": "path", "required": true,
			"description": "A malformed id answers the same 404 as an absent one or another organisation's.",
			"schema":      M{"type": "string", "format": "uuid"}})
	}
	params = append(params, o.params...)
	if len(params) > 0 {
		out["parameters"] = params
	}
	if o.body != "" {
		out["requestBody"] = M{"required": !o.optional, "content": M{"application/json": M{"schema": schemaRef(o.body)}}}
	}
	responses := M{}
	for _, r := range o.ok {
		hs := M{}
		names := append(append([]string{}, always...), r.headers...)
		if !rt.Public {
			names = append(names, rateHeaders...)
		}
		for _, h := range names {
			hs[h] = ref("headers", h)
		}
		body := M{"description": r.desc, "headers": hs}
		if r.schema != "" {
			body["content"] = M{"application/json": M{"schema": schemaRef(r.schema)}}
		}
		if r.schema == "" && r.status < 300 && len(o.media) > 0 {
			content := M{}
			for _, m := range o.media {
				content[m] = M{"schema": M{"type": "string", "maxLength": maxPageFile}}
			}
			body["content"] = content
		}
		responses[strconv.Itoa(r.status)] = body
	}
	errs := o.errs
	if rt.Public {
		out["security"] = []M{}
	} else {
		out["security"] = []M{{"bearerAuth": []string{}}}
		out["x-required-scope"] = rt.Scope
		errs = append(errs, 401, 403, 429, 503)
	}
	// The edge refuses a body over 1 MiB before anything else, whatever the
	// operation (a GET with a body included).
	if !slices.Contains(errs, 413) {
		errs = append(errs, 413)
	}
	if o.body != "" {
		errs = append(errs, 400)
	}
	errs = append(errs, 500)
	for _, status := range errs {
		name := errorResponse[status]
		if rt.Public && status == http.StatusNotFound {
			name = "NotFoundPublic" // no key, so no rate-limit headers
		}
		responses[strconv.Itoa(status)] = ref("responses", name)
	}
	out["responses"] = responses
	return out
}

// Kinds of operation.

func list(summary, description, schema string, filters ...M) func(routes.Route) []op {
	return func(routes.Route) []op {
		return []op{{summary: summary, description: description,
			params: append(filters, ref("parameters", "ids"), ref("parameters", "per_page"), ref("parameters", "cursor")),
			ok:     []resp{{200, "A page.", schema + "List", nil}},
			errs:   []int{422}}}
	}
}

func get(summary, schema string) func(routes.Route) []op {
	return func(routes.Route) []op {
		return []op{{summary: summary,
			params: []M{ref("parameters", "If-None-Match")},
			ok:     []resp{{200, "The record.", schema + "Response", []string{"ETag"}}},
			errs:   []int{304, 404}}}
	}
}

func create(summary, description, schema string, location bool) func(routes.Route) []op {
	return func(routes.Route) []op {
		created := []string{}
		if location {
			created = append(created, "Location")
		}
		replayed := append([]string{"Idempotent-Replayed"}, created...)
		return []op{{summary: summary, description: description,
			params: []M{ref("parameters", "Idempotency-Key")},
			body:   schema + "Create",
			ok: []resp{
				{201, "Created.", schema + "Response", created},
				{200, "Replay: the same Idempotency-Key with the same body; the resource as created, nothing created again.", schema + "Response", replayed},
			},
			errs: []int{409, 413, 422}}}
	}
}

// filter is an optional query filter; an empty value is the same as none.
func filter(name, desc string, schema M) M {
	return M{"name": name, "in": "query", "description": strings.TrimSpace(desc + " An empty value is the same as none."),
		"schema": schema, "allowEmptyValue": true}
}

func uuidFilter(name, desc string) M {
	return filter(name, desc+" Another organisation's id gives an empty page.", M{"type": "string", "format": "uuid"})
}

func enumFilter[S ~string](name string, values ...S) M {
	return filter(name, "", M{"type": "string", "enum": workflow.Strings(values)})
}

func dateFilter(name, desc string) M {
	return filter(name, desc, M{"type": "string", "format": "date"})
}

func updatedSince() M { return ref("parameters", "updated_since") }

// operations documents every route by name.
func operations() map[string]func(routes.Route) []op {
	return map[string]func(routes.Route) []op{
		"matters.list": list("List matters", "Ordered by last change (`updated_at`, then `id`).", "Matter",
			uuidFilter("client_id", "Matters of this client engagement."), enumFilter("status", matter.Statuses...), updatedSince()),
		"matters.get": get("Read a matter", "Matter"),
		"matters.create": create("Import a matter",
			"Needs an existing client engagement. Without `matter_number` the service assigns `SAG-<n>`. Raises `matter.created`.", "Matter", true),

		"clients.list": list("List client engagements", "Ordered by last change.", "Client",
			enumFilter("type", party.TypeCompany, party.TypePerson), updatedSince()),
		"clients.get": get("Read a client engagement", "Client"),
		"clients.create": create("Import a client engagement",
			"Exactly one of `company_id` and `person_id`; one engagement per party (a second is 422 naming the first). `kyc_status` opens at `pending`.", "Client", true),
		"people.list":   list("List people", "Ordered by last change.", "Person", updatedSince()),
		"people.get":    get("Read a person", "Person"),
		"people.create": create("Import a person", "The first import step for a person party.", "Person", true),
		"companies.list": list("List companies", "Ordered by last change.", "Company", updatedSince(),
			filter("cvr", "Exact match after removing non-digits; a value without digits is 422.", M{"type": "string", "pattern": "[0-9]", "maxLength": party.MaxCVRParam})),
		"companies.get": get("Read a company", "Company"),
		"companies.create": create("Import a company",
			"The first import step for a company party. The register snapshot and logo are fetched in the background (`enrichment`).", "Company", true),

		"time_entries.list": list("List time entries", "Ordered by entry date, then id; with `updated_since` and no `matter_id`, `client_id` or `user_id`, by last change, then id (catch up after a gap: [guide]("+routes.Prefix+"/docs/guide.html#catching-up-after-a-gap-updated_since)). A created entry is found again with `matter_id` and a date range.", "TimeEntry",
			uuidFilter("matter_id", ""), uuidFilter("client_id", "Entries on the matters of this engagement."),
			uuidFilter("user_id", ""), dateFilter("date_from", "Inclusive."), dateFilter("date_to", "Inclusive; before `date_from` is 422."),
			enumFilter("status", timeentry.Statuses...), updatedSince()),
		"time_entries.create": create("Import a time entry",
			"Opens at `draft`; `amount` is derived. No `Location`: there is no single-entry read; find it with `matter_id` and a date range. Raises `time_entry.created`.", "TimeEntry", false),

		"invoices.list": list("List invoices", "Without `lines`; ordered by issue date, then id; with `updated_since` and no `matter_id` or `client_id`, by last change, then id (catch up after a gap: [guide]("+routes.Prefix+"/docs/guide.html#catching-up-after-a-gap-updated_since)).", "Invoice",
			uuidFilter("client_id", ""), uuidFilter("matter_id", ""), enumFilter("status", billing.Statuses...),
			dateFilter("issue_date_from", "Inclusive."), dateFilter("issue_date_to", "Inclusive; before `issue_date_from` is 422."), updatedSince()),
		"invoices.get": get("Read an invoice with its lines", "InvoiceDetail"),

		"documents.list": list("List document metadata", "Metadata only, never bytes, URLs or previews; ordered by last change.", "Document",
			uuidFilter("matter_id", ""), filter("folder", "Exact folder name.", M{"type": "string", "maxLength": document.MaxName}), updatedSince()),
		"documents.get": get("Read a document's metadata", "Document"),

		"reports.get": reports,

		"webhooks.list": func(routes.Route) []op {
			return []op{{summary: "List webhook endpoints",
				params: []M{ref("parameters", "ids"), ref("parameters", "per_page"), ref("parameters", "cursor")},
				ok:     []resp{{200, "A page.", "WebhookEndpointList", nil}}, errs: []int{422}}}
		},
		"webhooks.get": get("Read a webhook endpoint", "WebhookEndpoint"),
		"webhooks.create": func(routes.Route) []op {
			return []op{{summary: "Register a webhook endpoint",
				description: fmt.Sprintf("The answer holds the signing `secret` beside `data`: shown only here. At most 50 endpoints per organisation. Event types: %s.", eventNames()),
				body:        "WebhookCreate",
				ok:          []resp{{201, "Registered.", "WebhookEndpointCreated", []string{"Location"}}},
				errs:        []int{413, 422}}}
		},
		"webhooks.update": func(routes.Route) []op {
			return []op{{summary: "Change a webhook endpoint",
				description: "`is_active: true` resumes a disabled endpoint and resets `consecutive_failures`. With `replay_since` (an addition) it also queues what the endpoint missed: the feed's events from then on, of the types it takes, as a replay (see `POST /webhooks/{id}/replay`), answered in `replay`. " +
					"The replay's budget is checked and its URL held before the endpoint is turned on: 429 (`replay_budget_exhausted`) when the organisation's replays of the hour are spent, 409 when another replay to the URL is running, each with nothing changed.",
				body: "WebhookUpdate",
				ok:   []resp{{200, "The updated endpoint; with `replay_since`, the replay too.", "WebhookEndpointUpdated", nil}},
				errs: []int{404, 409, 413, 422}}}
		},
		"webhooks.replay": func(routes.Route) []op {
			return []op{{summary: "Replay a window of events to an endpoint",
				description: fmt.Sprintf("An addition to the spec. Queues every event of the organisation's feed from `since` (inclusive) to `until` (exclusive; default now) of `event_types` (default: the types the endpoint takes) to this endpoint again: "+
					"new deliveries of the same events (same `id` and envelope: receivers deduplicate as for any retry), each with up to 5 attempts on the usual schedule, sent even if the event was delivered before, marked `replay_id` in the delivery log and `Service-Replay-Id` on the request. "+
					"Events are kept %s: an older `since` is 422. At most %d events a call: a longer window answers `truncated` with `next_since`, the `since` of the next call. "+
					"One replay per URL of an organisation at a time, whichever of its endpoints names the URL: until each of its events has had its first attempt, another is 409 (with `Retry-After`). "+
					"An organisation replays at most %d events a clock hour (UTC): a replay that finds part of that left queues that part (`truncated`, `next_since`), one that finds none is 429 with the code `replay_budget_exhausted` and `Retry-After` (the next hour). "+
					"Replayed deliveries queue apart from the organisation's live ones and take a slot of their endpoint only while fewer than half are in use and no live delivery waits, so a replay delays neither. "+
					"A disabled endpoint is 409: re-enable it with `PATCH` `is_active: true` and `replay_since` instead.",
					"30 days", webhook.ReplayMax, webhook.DefaultReplaysPerHour),
				body: "WebhookReplay",
				ok:   []resp{{202, "Queued.", "WebhookReplayResponse", nil}},
				errs: []int{404, 409, 413, 422}}}
		},
		"events.list": func(routes.Route) []op {
			return []op{{summary: "List the organisation's events (the event feed)",
				description: "An addition to the spec: every event of the organisation, whatever endpoints exist, oldest first, each as it is delivered (same `id`, envelope and `data`) with its `sequence`: unique in the organisation and increasing in the order the feed lists events. " +
					"Page with `after`: the `meta.next_after` of the page before (or the sequence of the last event you have); on the last page `next_after` is where to poll from next. A reader that pages this way while events are being written misses none and sees none twice: " +
					"the feed lists an event about 10 seconds after it happened (the settle time; webhooks deliver at once), when every event before it in sequence order is there too. " +
					"Events are kept 30 days, then gone from the feed (an older `after` starts at the oldest kept). One page is one read of the store; with `event_types` a page may come back short of `per_page` with `has_more` true: go on from `next_after`.",
				params: []M{
					M{"name": "after", "in": "query", "description": "Resume after this sequence (exclusive); absent or 0: the oldest event kept. At most 9007199254740991 (2^53 − 1): a larger one is 422.",
						"schema": M{"type": "integer", "format": "int64", "minimum": 0}},
					ref("parameters", "per_page"),
					withExample(filter("event_types", "Comma-separated event names: only these.", M{"type": "string", "maxLength": webhook.MaxTypesParam}), "matter.created,invoice.paid"),
				},
				ok:   []resp{{200, "A page.", "EventList", nil}},
				errs: []int{422}}}
		},
		"webhooks.test": func(routes.Route) []op {
			return []op{{summary: "Send a test event to an endpoint",
				description: "Sends one signed `webhook.test` event to the endpoint now, through the same delivery path as real events: the same headers, `Service-Signature` and envelope (see the `webhook.test` webhook). Answers the attempt (`succeeded`, `status_code`, `duration_ms`, `error`), which the delivery log keeps. It works on an inactive endpoint too, so a receiver can be fixed before turning the endpoint back on, and it never counts towards the 20 consecutive failures. The service waits at most 8 s for the receiver.",
				ok:          []resp{{200, "The attempt.", "WebhookDeliveryResponse", nil}},
				errs:        []int{404}}}
		},
		"webhooks.rotate_secret": func(routes.Route) []op {
			return []op{{summary: "Rotate an endpoint's signing secret",
				description: "Returns a new `secret` beside `data`, shown only here. For a grace period (24 hours unless `grace_period_seconds` says otherwise; at most a week) the old secret keeps signing too: each delivery's `Service-Signature` then carries two `v1=` signatures, one per secret, and a receiver verifies with whichever secret it holds (`signature.Verify` accepts any matching `v1`). Switch the receiver to the new secret within the grace period. `previous_secret_expires_at` says when the old one stops. A rotation replaces exactly the secret it found: of two rotations at the same time one wins and the other gets 409 with nothing changed, so every secret handed out is one that signs. Each keeps signing through its own grace: while the previous secret is in its grace period, a rotation with a grace period is 409 (with `Retry-After`, nothing changed); one with `grace_period_seconds` 0 retires the current secret at once and leaves the previous one its grace.",
				body:        "WebhookRotateSecret", optional: true,
				ok:   []resp{{200, "The endpoint with its new secret.", "WebhookEndpointCreated", nil}},
				errs: []int{404, 409, 413, 422}}}
		},
		"webhooks.delete": func(routes.Route) []op {
			return []op{{summary: "Delete a webhook endpoint", description: "Deliveries to it stop.",
				ok: []resp{{204, "Deleted.", "", nil}}, errs: []int{404}}}
		},
		"webhooks.deliveries": func(routes.Route) []op {
			return []op{{summary: "List an endpoint's delivery attempts", description: "Newest first; attempts are kept 30 days.",
				params: []M{ref("parameters", "per_page"), ref("parameters", "cursor")},
				ok:     []resp{{200, "A page.", "WebhookDeliveryList", nil}}, errs: []int{404, 422}}}
		},
		"webhooks.retry": func(routes.Route) []op {
			return []op{{summary: "Resend a failed attempt's event",
				description: "Sends the event again, once, now, outside the automatic series, numbered after the attempts before it (`Service-Delivery-Attempt` one more than the event's attempts to this endpoint so far; the answer's `attempt`). Any success of the event, this one or an automatic attempt's, cancels the attempts still scheduled for it, so the event does not arrive twice. 409 when the attempt succeeded, the event has been delivered since, the endpoint is disabled, or the attempt was a `webhook.test` (send a new test instead).",
				ok:          []resp{{202, "Queued.", "DeliveryRetryResponse", nil}}, errs: []int{404, 409}}}
		},

		"docs": func(routes.Route) []op {
			return []op{{summary: "The API reference page",
				description: "Scalar's API reference on this document, served from the API itself: a sidebar with search, a quickstart, every operation with its scope, parameters, answers and error shapes and code samples (curl, Go, Python, Node), the webhook events with their signature headers, and a console (*Test Request*) that sends requests to this server with a bearer key typed into the page. It links the guide pages (`docs/guide.html`, `docs/api.html`, `docs/receivers.html`). No authentication, not rate limited.",
				params:      []M{ref("parameters", "If-None-Match")},
				media:       []string{"text/html"},
				ok: []resp{{200, "The page.", "", []string{"ETag", "Cache-Control", "Content-Security-Policy"}},
					{304, "Not modified.", "", []string{"ETag"}}}}}
		},
		"docs.asset": func(routes.Route) []op {
			return []op{{summary: "A file of the reference page",
				description: "`scalar.js` (Scalar's bundle), `docs.js`, `docs.css` or `LICENSE-scalar`, named by the page with a content hash and cached for a year; or a guide page (`guide.html`, `api.html`, `receivers.html`), revalidated on every load.",
				pathParam:   M{"file": M{"name": "file", "in": "path", "required": true, "schema": M{"type": "string", "maxLength": 100}}},
				params:      []M{ref("parameters", "If-None-Match")},
				media:       []string{"text/javascript", "text/css", "text/plain", "text/html"},
				ok: []resp{{200, "The file.", "", []string{"ETag", "Cache-Control", "Vary", "Content-Encoding"}},
					{304, "Not modified.", "", []string{"ETag"}}},
				errs: []int{404}}}
		},
		"openapi": func(routes.Route) []op {
			return []op{{summary: "This document", description: "OpenAPI 3.1; no authentication, not rate limited.",
				params: []M{ref("parameters", "If-None-Match")},
				ok: []resp{{200, "The document.", "OpenAPIDocument", []string{"ETag", "Cache-Control", "Access-Control-Allow-Origin"}},
					{304, "Not modified.", "", []string{"ETag"}}}}}
		},
	}
}

// eventNames are the types an endpoint may subscribe to (not webhook.test,
// which is sent on request only).
func eventNames() string {
	var names []string
	for _, t := range outbox.Types {
		names = append(names, "`"+string(t)+"`")
	}
	return strings.Join(names, ", ") + " (`webhook.test` is sent on request, by `POST /webhooks/{id}/test`, and cannot be subscribed to)"
}

// reports documents each report type as its own path, so each gets its
// parameters and answer; any other type is 404.
func reports(routes.Route) []op {
	doc := map[string]op{
		"time-summary": {summary: "Time summary",
			description: fmt.Sprintf("Minutes and amounts of the entries dated in the range, in total and by status, user and matter. One Query of the entries index over the range; the range may span at most %d days.", report.MaxSpanDays),
			params: []M{
				withRequired(dateFilter("date_from", "Inclusive.")),
				withRequired(dateFilter("date_to", fmt.Sprintf("Inclusive; at most %d days after `date_from`.", report.MaxSpanDays-1))),
			},
			ok: []resp{{200, "The report.", "TimeSummaryReportResponse", nil}}, errs: []int{422}},
		"wip": {summary: "Work in progress",
			description: "Unbilled time (`draft`, `submitted`, `approved`) per matter, largest first. One Query per unbilled status.",
			ok:          []resp{{200, "The report.", "WipReportResponse", nil}}},
		"receivables-aging": {summary: "Receivables aging",
			description: "Open invoices by days past due. One Query of the open-invoice index.",
			params:      []M{dateFilter("as_of", "Default: today (UTC).")},
			ok:          []resp{{200, "The report.", "ReceivablesAgingReportResponse", nil}}, errs: []int{422}},
	}
	var out []op
	for _, typ := range report.Types {
		o, ok := doc[typ]
		if !ok {
			panic("report type " + typ + " is not documented in shared/openapi/build")
		}
		o.path = "/reports/" + typ
		o.id = "reports." + typ
		out = append(out, o)
	}
	// The route is one pattern: a key is checked before the type is.
	return append(out, op{path: "/reports/{type}", id: "reports.unknown", summary: "Any other report type",
		description: "There is no such report: 404 naming the known types (after the key and its scope are checked).",
		pathParam: M{"type": M{"name": "type", "in": "path", "required": true, "schema": M{"type": "string", "maxLength": 100},
			"description": "Known: " + strings.Join(report.Types, ", ") + "."}},
		errs: []int{404}})
}

func withRequired(p M) M { p["required"] = true; return p }

func withExample(p M, example string) M { p["example"] = example; return p }

func parameters() M {
	return M{
		"ids": M{"name": "ids", "in": "query", "style": "form", "explode": false, "allowEmptyValue": true,
			"description": "A batch read: comma-separated ids (UUIDs), at most 100, each read once. The answer is one page of the records with those ids that also match the other filters (AND), in the order of `ids`; " +
				"an id that names nothing of your organisation (absent, or another organisation's) is left out, as a filter leaves out what it does not match. No `cursor` (422 with one): `links.next` is null and `meta.per_page` is the number of ids. " +
				"One read of the store, however many ids: fetch what a page of events names in one request. An empty value is the same as none.",
			"schema": M{"type": "array", "items": M{"type": "string", "format": "uuid"}, "maxItems": httpapi.MaxIDs}},
		"per_page": M{"name": "per_page", "in": "query", "description": "Page size; anything but an integer from 1 to 100 is 422.",
			"schema": M{"type": "integer", "minimum": 1, "maximum": httpapi.MaxPerPage, "default": httpapi.DefaultPerPage}},
		"cursor": M{"name": "cursor", "in": "query", "allowEmptyValue": true,
			"description": "Opaque, from the previous page's `links.next`. Send it alone or with the same filters (other filters are 422); a tampered cursor is 422. Empty: the first page.",
			"schema":      M{"type": "string", "maxLength": httpapi.MaxCursor}},
		"updated_since": M{"name": "updated_since", "in": "query", "allowEmptyValue": true,
			"description": "Inclusive (>=). A date (midnight UTC) or a date-time with `Z` or an offset; send `+` as `%2B` (an unencoded `+` arrives as a space and is 422). An empty value is the same as none.",
			"schema":      M{"type": "string", "maxLength": maxDateTime, "pattern": `^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2}))?$`}},
		"Idempotency-Key": M{"name": "Idempotency-Key", "in": "header", "required": true,
			"description": "Your key for this create, e.g. derived from the source row id. Missing, empty or longer than 255 characters is 422.",
			"schema":      M{"type": "string", "minLength": 1, "maxLength": httpapi.MaxIdempotencyKey}},
		"If-None-Match": M{"name": "If-None-Match", "in": "header",
			"description": "An `ETag` from an earlier read (or `*`): 304 without a body when it still matches.",
			"schema":      M{"type": "string", "maxLength": maxHeader}},
	}
}

func header(desc string, schema M, required bool) M {
	h := M{"description": desc, "schema": schema}
	if required {
		h["required"] = true
	}
	return h
}

func headers() M {
	intS := M{"type": "integer", "minimum": 0}
	strS := func(max int) M { return M{"type": "string", "maxLength": max} }
	return M{
		"X-Request-Id":                header("Id of this request in the service's logs; quote it when reporting a problem.", strS(128), true),
		"X-RateLimit-Limit":           header("Requests allowed per minute to this API client.", intS, true),
		"X-RateLimit-Remaining":       header("Requests left in the current window.", intS, true),
		"X-RateLimit-Reset":           header("Unix time (seconds) when the current window ends and the count starts again.", intS, true),
		"RateLimit-Policy":            header("IETF draft: `\"default\";q=<limit>;w=60`.", M{"type": "string", "pattern": `^"default";q=[0-9]+;w=60$`, "maxLength": 100}, true),
		"RateLimit":                   header("IETF draft: `\"default\";r=<remaining>;t=<seconds until the reset>`.", M{"type": "string", "pattern": `^"default";r=[0-9]+;t=[0-9]+$`, "maxLength": 100}, true),
		"Retry-After":                 header("Seconds to wait before retrying.", M{"type": "integer", "minimum": 1}, true),
		"Retry-After-Optional":        header("On a 409 for a request still running: seconds after which retrying may succeed. Absent when the body differs: not retryable as sent.", M{"type": "integer", "minimum": 1}, false),
		"WWW-Authenticate":            header("`Bearer realm=\"api\"`.", M{"type": "string", "enum": []string{`Bearer realm="api"`}}, true),
		"ETag":                        header("Strong validator of the representation.", M{"type": "string", "pattern": `^"[0-9a-f]{32}"$`, "maxLength": 34}, true),
		"Location":                    header("URL of the created resource.", M{"type": "string", "format": "uri-reference", "maxLength": 2048}, true),
		"Idempotent-Replayed":         header("`true` on a replay; absent on the original 201.", M{"type": "string", "enum": []string{"true"}}, true),
		"Cache-Control":               header("How the answer may be cached: `no-store` on every answer to a key (it holds the organisation's data) and on every error; the public documents say how long they keep.", strS(100), true),
		"Content-Security-Policy":     header("The reference page runs only this server's scripts and talks only to this server.", strS(1000), true),
		"Vary":                        header("`Accept-Encoding`: the file is sent gzipped to clients that accept it.", M{"type": "string", "enum": []string{"Accept-Encoding"}}, true),
		"Content-Encoding":            header("`gzip` when the client accepts it.", M{"type": "string", "enum": []string{"gzip"}}, false),
		"Access-Control-Allow-Origin": header("`*`: documentation tools on other origins may fetch the document.", M{"type": "string", "const": "*"}, true),
		"Deprecation":                 header("RFC 9745, `@<unix seconds>`: this version is deprecated since then. Absent while the version is current.", M{"type": "string", "pattern": "^@[0-9]+$", "maxLength": 21}, false),
		"Sunset":                      header("RFC 8594 HTTP-date when this version will be removed; at least six months after `Deprecation`.", strS(29), false),
		"Link":                        header("`<url>; rel=\"deprecation\"`: migration notes, with `Deprecation`.", strS(2100), false),
	}
}

func responses() M {
	errResp := func(desc, schema string, names ...string) M {
		hs := M{}
		for _, h := range append(append([]string{}, always...), names...) {
			key := h
			if h == "Retry-After-Optional" {
				key = "Retry-After"
			}
			hs[key] = ref("headers", h)
		}
		r := M{"description": desc, "headers": hs}
		if schema != "" {
			r["content"] = M{"application/json": M{"schema": schemaRef(schema)}}
		}
		return r
	}
	counted := func(extra ...string) []string { return append(append([]string{}, rateHeaders...), extra...) }
	out := M{
		"NotModified": errResp("Not modified: `If-None-Match` matched the current `ETag`. No body.", "", counted("ETag")...),
		"Unauthorized": errResp("Authorization missing or not Bearer, or the key unknown, revoked or expired (one message for the three). Not counted against any rate limit.",
			errorSchemaOf(401), "WWW-Authenticate"),
		"Forbidden":      errResp("The key lacks this operation's scope.", errorSchemaOf(403), counted()...),
		"NotFound":       errResp("No such record in this organisation (including malformed ids and other organisations' ids).", errorSchemaOf(404), counted()...),
		"NotFoundPublic": errResp("No such file.", errorSchemaOf(404)),
		"Conflict": errResp("For a create: the Idempotency-Key was used with a different body, or its first request is still running (then with `Retry-After`). For other operations, the operation's description says when.",
			errorSchemaOf(409), counted("Retry-After-Optional")...),
		"BadRequest": errResp("The request body could not be read in full: it ended before its `Content-Length`, or arrived too slowly. Nothing was written and the Idempotency-Key stays unused; send it again.",
			errorSchemaOf(400), counted()...),
		"PayloadTooLarge":    errResp("The body exceeds 1 MiB (1,048,576 bytes): refused before anything else, on any path and method. Not counted.", errorSchemaOf(413)),
		"Unprocessable":      errResp("Invalid filters, parameters, headers or body; every problem is listed. Nothing was written and the Idempotency-Key stays unused.", errorSchemaOf(422), counted()...),
		"TooManyRequests":    errResp("Rate limit exceeded.", errorSchemaOf(429), counted("Retry-After")...),
		"InternalError":      errResp("A bug: the message names the request id. Nothing was half-written; a create may be retried with the same key.", errorSchemaOf(500)),
		"ServiceUnavailable": errResp("The data store is temporarily unavailable; nothing was written. Retry (with the same Idempotency-Key).", errorSchemaOf(503), "Retry-After"),
	}
	// Each status's own example, with exactly the fields it carries (the
	// Error schema lists every field any error may have).
	for name, r := range out {
		if content, ok := r.(M)["content"].(M); ok {
			content["application/json"].(M)["example"] = errorExamples[name]
		}
	}
	return out
}

// webhooks documents the deliveries subscribers receive (OpenAPI 3.1).
func webhooks() M {
	hdr := func(name, desc string, schema M) M {
		return M{"name": name, "in": "header", "required": true, "description": desc, "schema": schema}
	}
	out := M{}
	for _, ev := range events {
		params := []M{}
		if ev.name != outbox.WebhookTest {
			seq := hdr("Service-Event-Sequence", "The body's `sequence`: the event's place in the organisation's feed (`GET /events`), for ordering and spotting gaps.", M{"type": "string", "pattern": "^[0-9]+$", "maxLength": 16})
			replay := hdr("Service-Replay-Id", "Present on a replay's delivery (`POST /webhooks/{id}/replay`): the replay's id.", M{"type": "string", "format": "uuid"})
			replay["required"] = false
			params = append(params, seq, replay)
		}
		name := string(ev.name)
		out[name] = M{"post": M{
			"summary":     ev.summary,
			"description": "Delivered to every active endpoint subscribed to `" + name + "`. At least once and unordered, as the spec says: deduplicate on the event id, and order by `sequence` where order matters (a gap is an event still to come, or one to fetch from `GET /events`). Up to 5 attempts, pauses 30 s, 2 min, 8 min, 30 min; 5 s to connect, 10 s for the answer.",
			"operationId": "webhook." + name,
			// No bearer key: the Service-Signature header authenticates.
			"security": []M{},
			"parameters": append([]M{
				hdr("Service-Signature", "`t=<unix seconds>,v1=<hex HMAC-SHA256 of \"{t}.{raw body}\" keyed with the endpoint's secret>`. Hash the raw bytes; compare in constant time; reject t more than 300 s from your clock. During a secret rotation's grace period a second `,v1=` follows, made with the previous secret: accept the delivery when any `v1` matches the secret you hold.",
					M{"type": "string", "pattern": "^t=[0-9]+(,v1=[0-9a-f]{64}){1,2}$", "maxLength": 160}),
				hdr("Service-Event-Id", "Equal to the body's `id`; the same on every attempt.", M{"type": "string", "format": "uuid"}),
				hdr("Service-Event-Type", "The event name.", M{"type": "string", "enum": []string{name}}),
				hdr("Service-Delivery-Attempt", "Attempt number, from 1: the automatic series is 1 to 5; a manual retry is numbered after every attempt of the event to the endpoint before it, so it may be higher.", M{"type": "integer", "minimum": 1}),
				hdr("User-Agent", "", M{"type": "string", "enum": []string{"Service-Webhook/1.0"}}),
				hdr("webhook-id", "Standard Webhooks: the event id (equal to `Service-Event-Id`).", M{"type": "string", "format": "uuid"}),
				hdr("webhook-timestamp", "Standard Webhooks: Unix seconds of the attempt (the `t` of `Service-Signature`).", M{"type": "string", "pattern": "^[0-9]+$", "maxLength": 20}),
				hdr("webhook-signature", "Standard Webhooks: `v1,<base64 HMAC-SHA256 of \"{webhook-id}.{webhook-timestamp}.{raw body}\">`, one per signing secret (two during a rotation's grace period), space-separated. The key is the secret's part after `whsec_`, base64-decoded: any Standard Webhooks library verifies it with the secret as shown.",
					M{"type": "string", "pattern": "^v1,[A-Za-z0-9+/=]{44}( v1,[A-Za-z0-9+/=]{44})?$", "maxLength": 100}),
			}, params...),
			"requestBody": M{"required": true, "content": M{"application/json": M{"schema": schemaRef(ev.schema)}}},
			"responses": M{
				"2XX":     M{"description": "Received. Any 2xx counts; only the first 4 KiB of the answer is read."},
				"default": M{"description": "Anything else (or no answer, or a redirect) is a failed attempt and is retried; an event whose 5 attempts all fail is a failed delivery, and 20 consecutive failed deliveries turn the endpoint off."},
			},
		}}
	}
	return out
}
