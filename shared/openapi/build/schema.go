package build

import (
	"fmt"
	"maps"
	"slices"

	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/body"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/report"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/webhook"
	"github.com/practice-api/practice-api/shared/workflow"
)

// M is a JSON object of the document.
type M = map[string]any

func ref(kind, name string) M { return M{"$ref": "#/components/" + kind + "/" + name} }
func schemaRef(name string) M { return ref("schemas", name) }

func withDesc(s M, desc string) M {
	out := maps.Clone(s)
	if desc != "" {
		out["description"] = desc
	}
	return out
}

func str(max int, desc string) M {
	return withDesc(M{"type": "string", "maxLength": max}, desc)
}
func integer(desc string) M  { return withDesc(M{"type": "integer"}, desc) }
func boolean(desc string) M  { return withDesc(M{"type": "boolean"}, desc) }
func uuidS(desc string) M    { return withDesc(M{"type": "string", "format": "uuid"}, desc) }
func date(desc string) M     { return withDesc(M{"type": "string", "format": "date"}, desc) }
func dateTime(desc string) M { return withDesc(M{"type": "string", "format": "date-time"}, desc) }
func enum[S ~string](desc string, v ...S) M {
	return withDesc(M{"type": "string", "enum": workflow.Strings(v)}, desc)
}
func array(items M, max int, desc string) M {
	return withDesc(M{"type": "array", "items": items, "maxItems": max}, desc)
}

// money is an amount in minor units (øre): never a decimal.
func money(desc string) M {
	return withDesc(M{"type": "integer", "minimum": 0}, desc+" Integer minor units (øre): 1250 means 12.50 DKK.")
}

// rate is an hourly rate: money, at most httpapi.MaxHourlyRate.
func rate(desc string) M {
	m := money(desc + " At most 10000000 (100,000.00 DKK an hour).")
	m["maximum"] = 10_000_000
	return m
}

// orNull lets a schema's value also be JSON null (OpenAPI 3.1 type arrays).
func orNull(s M) M {
	out := maps.Clone(s)
	out["type"] = []string{s["type"].(string), "null"}
	return out
}

// object is an object schema; required names must be among props.
func object(desc string, required []string, props M) M {
	s := M{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return withDesc(s, desc)
}

// closed refuses properties the schema does not list (write bodies: the
// service answers 422 for an unknown field).
func closed(s M) M {
	out := maps.Clone(s)
	out["additionalProperties"] = false
	return out
}

// timestamps are created_at and updated_at, UTC with microseconds.
func timestamps(props M) M {
	props["created_at"] = dateTime("When the record was created (UTC, microseconds).")
	props["updated_at"] = dateTime("When the record last changed (UTC, microseconds); lists and `updated_since` use it.")
	return props
}

const currencyDesc = "ISO 4217 currency of every amount of the record; `DKK`."

func currency() M { return enum(currencyDesc, "DKK") }

// errorSchemas are the error bodies, one schema per status, each with
// the codes that status carries (httpapi.Codes) as its `code`'s enum: so a
// client generated from the document narrows an error on its code (in
// TypeScript, `if (e.code === "invalid_request") e.field` compiles), and
// the conformance check holds every answer to its status's codes.
var errorSchemas = []struct {
	name   string
	status int
	desc   string
}{
	{"MalformedBodyError", 400, "400: the request body could not be read in full; nothing was written."},
	{"UnauthenticatedError", 401, "401: no key, a malformed `Authorization` header, or a key that is unknown, revoked or expired (one message for the three)."},
	{"ScopeError", 403, "403: the key lacks the operation's scope. Scopes are fixed when a key is minted: ask for a new key."},
	{"NotFoundError", 404, "404: no such record in your organisation (`not_found`; malformed ids and other organisations' ids alike), or no such path (`no_such_endpoint`)."},
	{"ConflictError", 409, "409: an `Idempotency-Key` reused with another body or still running, records changed by other requests at the same time, or a state that does not allow the request."},
	{"PayloadTooLargeError", 413, "413: the body exceeds 1 MiB."},
	{"ValidationError", 422, "422: invalid filters, parameters, headers or body; every problem is listed."},
	{"RateLimitError", 429, "429: the key's requests per minute are spent (`Retry-After`)."},
	{"ServerError", 500, "500: a fault of the service; the message names the request id."},
	{"UnavailableError", 503, "503: the data store is briefly unavailable and nothing was written; retry (`Retry-After`)."},
}

// errorSchemaOf is the name of the error schema of status.
func errorSchemaOf(status int) string {
	for _, e := range errorSchemas {
		if e.status == status {
			return e.name
		}
	}
	panic(fmt.Sprintf("no error schema for status %d", status))
}

// errorCode is the code of an error body of the given status: the codes
// httpapi.Codes gives that status.
func errorCode(status int) M {
	var codes []httpapi.Code
	desc := "The kind of problem, stable (new codes may be added; none is renamed or reused):\n\n| code | meaning |\n|---|---|\n"
	for _, c := range httpapi.Codes {
		if c.Status == status {
			codes = append(codes, c.Code)
			desc += fmt.Sprintf("| `%s` | %s |\n", c.Code, c.Meaning)
		}
	}
	if len(codes) == 0 {
		panic(fmt.Sprintf("no code has status %d", status))
	}
	return enum(desc+"\nEvery code of every status: the **Errors** section of the introduction.", codes...)
}

// schemas are the document's named schemas.
func schemas() M {
	s := M{}
	for _, e := range errorSchemas {
		props := M{
			"code":    errorCode(e.status),
			"message": str(httpapi.MaxMessage, "What went wrong and, where the caller can act, what to do."),
		}
		required := []string{"code", "message"}
		switch e.status {
		case 403:
			props["required_scope"] = str(maxScope, "The scope the operation requires and the key lacks.")
			required = append(required, "required_scope")
		case 422:
			props["existing_id"] = uuidS("`already_exists`: the record that holds the unique value, as its id (a duplicate CVR's company, e-mail's person, party's engagement, matter number's matter).")
			props["message"] = str(httpapi.MaxMessage, "The first problem (and how many more there are).")
			props["field"] = str(httpapi.MaxField, "The field of the first problem (repeats `errors[0].field`).")
			props["errors"] = withDesc(M{"type": "array", "items": schemaRef("FieldError"), "minItems": 1, "maxItems": body.MaxProblems}, "Every problem found, up to 50.")
			props["errors_total"] = integer("How many problems there were, present when `errors` lists only the first 50.")
			required = append(required, "field", "errors")
		}
		s[e.name] = object(e.desc, required, props)
	}
	s["FieldError"] = object("One problem with one field, header or parameter.", []string{"field", "message"}, M{
		"field":   str(httpapi.MaxField, "Body field, query parameter or header (`Idempotency-Key`) at fault; `body` for a body that is not one JSON object."),
		"message": str(httpapi.MaxMessage, "What is wrong with it."),
	})
	s["CursorMeta"] = object("Page metadata.", []string{"per_page", "count", "has_more", "next_cursor"}, M{
		"per_page":    perPage(),
		"count":       pageCount("Items on this page."),
		"has_more":    boolean("Whether another page follows; keep following `links.next` until it is null."),
		"next_cursor": orNull(str(httpapi.MaxCursor, "Opaque cursor of the next page (the `cursor` in `links.next`); null on the last page.")),
	})
	s["CursorLinks"] = object("Continuation links.", []string{"next"}, M{
		"next": orNull(withDesc(M{"type": "string", "format": "uri"},
			"Absolute URL of the next page, carrying the filters; null on the last page.")),
	})

	s["Matter"] = object("A case, always on one client engagement.",
		[]string{"id", "client_id", "matter_number", "status", "hourly_rate", "currency", "created_at", "updated_at"},
		timestamps(M{
			"id":            uuidS(""),
			"client_id":     uuidS("The client engagement the matter belongs to."),
			"matter_number": str(matter.MaxNumber, "Unique in the organisation: the one imported, or `SAG-<n>` assigned by the service (numbers may have gaps)."),
			"title":         str(matter.MaxTitle, "Present when set."),
			"status":        enum("", matter.Statuses...),
			"hourly_rate":   orNull(rate("Default rate of the matter's time entries; null when the matter has none.")),
			"currency":      currency(),
			"closed_at":     dateTime("Present once the matter is closed or archived."),
		}))
	s["Client"] = object("An engagement on exactly one party (company or person); it holds no party data of its own.",
		[]string{"id", "type", "kyc_status", "created_at", "updated_at"},
		timestamps(M{
			"id":             uuidS(""),
			"type":           enum("The kind of party engaged; `company_id` or `person_id` is present accordingly.", party.TypeCompany, party.TypePerson),
			"company_id":     uuidS("Present when `type` is `company`."),
			"person_id":      uuidS("Present when `type` is `person`."),
			"kyc_status":     enum("Opens at `pending` on every imported engagement; the application moves it.", party.KYCStatuses...),
			"kyc_expires_at": dateTime("Present when the KYC case has an expiry."),
		}))
	s["Person"] = object("A person party. There is no CPR field, in any spelling: it is never accepted or returned.",
		[]string{"id", "name", "email", "created_at", "updated_at"},
		timestamps(M{
			"id":    uuidS(""),
			"name":  str(party.MaxName, ""),
			"email": withDesc(M{"type": "string", "format": "email"}, "Unique among the organisation's people, compared as people read it (Unicode NFKC, case-folded, the domain as Unicode): ＢＯＢ@ and bob@ are one address. Stored and returned as sent, in NFC."),
			"phone": str(party.MaxPhone, "Present when set."),
		}))
	s["Company"] = object("A company party. After creation the service fetches its register snapshot and logo in the background (`enrichment`).",
		[]string{"id", "name", "cvr", "created_at", "updated_at"},
		timestamps(M{
			"id":         uuidS(""),
			"name":       str(party.MaxName, ""),
			"cvr":        withDesc(M{"type": "string", "pattern": "^[0-9]{8}$", "minLength": 8, "maxLength": 8}, "Danish CVR number, digits only; unique in the organisation."),
			"enrichment": schemaRef("Enrichment"),
		}))
	s["Enrichment"] = object("Outcome of the background fetch from the company register. Each change moves the company's `updated_at`.",
		[]string{"status"}, M{
			"status": enum("`pending`: queued or waiting for a retry; `done`; `failed`: unknown CVR or retries exhausted; `skipped`: no register configured.",
				party.EnrichmentPending, party.EnrichmentDone, party.EnrichmentFailed, party.EnrichmentSkipped),
			"attempts":   integer("Fetch attempts made so far."),
			"register":   M{"type": "object", "description": "The register's snapshot of the company, as the register answered."},
			"logo":       schemaRef("Logo"),
			"error":      str(party.MaxEnrichmentError, "Why the last attempt failed."),
			"updated_at": dateTime("When the enrichment last changed."),
		})
	s["Logo"] = object("The stored logo (its bytes are not served).", []string{"content_type", "size", "sha256"}, M{
		"content_type": str(maxMediaType, "An `image/*` media type."),
		"size":         withDesc(M{"type": "integer", "minimum": 0, "maximum": party.MaxLogoBytes}, "Bytes."),
		"sha256":       withDesc(M{"type": "string", "pattern": "^[0-9a-f]{64}$", "minLength": 64, "maxLength": 64}, "Hex SHA-256 of the bytes."),
	})
	s["TimeEntry"] = object("Time logged on a matter. `amount` is derived on every save: duration_minutes × hourly_rate / 60, rounded half up to whole øre.",
		[]string{"id", "matter_id", "client_id", "user_id", "date", "duration_minutes", "hourly_rate", "amount", "currency", "status", "created_at", "updated_at"},
		timestamps(M{
			"id":               uuidS(""),
			"matter_id":        uuidS(""),
			"client_id":        uuidS("The matter's client engagement."),
			"user_id":          uuidS("Who logged the time: the one imported, else the id of the API client that logged it."),
			"date":             date("The entry date."),
			"duration_minutes": withDesc(M{"type": "integer", "minimum": 1, "maximum": 1440}, "Whole minutes."),
			"hourly_rate":      rate("The rate the entry was priced at."),
			"amount":           money("Derived: duration_minutes × hourly_rate / 60, rounded half up."),
			"currency":         currency(),
			"status":           enum("Opens at `draft`; the application moves it (`invoiced` only through an invoice).", timeentry.Statuses...),
			"description":      str(timeentry.MaxDescription, "Present when set."),
			"invoice_id":       uuidS("Present while the entry is billed by an invoice."),
		}))
	invoiceProps := func() M {
		return timestamps(M{
			"id":         uuidS(""),
			"number":     withDesc(M{"type": "string", "pattern": "^INV-[0-9]+$", "maxLength": 24}, "Unique invoice number."),
			"matter_id":  uuidS(""),
			"client_id":  uuidS(""),
			"status":     enum("", billing.Statuses...),
			"issue_date": date(""),
			"due_date":   date(""),
			"currency":   currency(),
			"total":      money("The sum of the lines."),
			"sent_at":    dateTime("Present once sent."),
			"paid_at":    dateTime("Present once paid."),
		})
	}
	invoiceRequired := []string{"id", "number", "matter_id", "client_id", "status", "issue_date", "due_date", "currency", "total", "created_at", "updated_at"}
	s["Invoice"] = object("An invoice as listed: without `lines` (read one invoice for them).", invoiceRequired, invoiceProps())
	detail := invoiceProps()
	detail["lines"] = withDesc(M{"type": "array", "items": schemaRef("InvoiceLine"), "maxItems": billing.MaxLines}, "The invoice's lines.")
	s["InvoiceDetail"] = object("An invoice with its `lines`.", append(invoiceRequired, "lines"), detail)
	s["InvoiceLine"] = object("", []string{"description", "amount"}, M{
		"description":   str(billing.MaxLineDescription, ""),
		"amount":        withDesc(M{"type": "integer", "minimum": -maxInt64, "maximum": maxInt64}, "Integer minor units (øre); negative on a credit line."),
		"time_entry_id": uuidS("Present when the line bills a time entry."),
	})
	s["Document"] = object("A document register entry: metadata only. The service holds no bytes, download URLs or previews, so no field can carry them.",
		[]string{"id", "matter_id", "name", "filename", "mime_type", "size_bytes", "folder", "created_at", "updated_at"},
		timestamps(M{
			"id":              uuidS(""),
			"matter_id":       uuidS(""),
			"name":            str(document.MaxName, "Display name."),
			"filename":        str(document.MaxName, ""),
			"mime_type":       str(maxMediaType, "Media type, e.g. `application/pdf`."),
			"size_bytes":      withDesc(M{"type": "integer", "minimum": 0}, "Size of the file in bytes."),
			"folder":          str(document.MaxName, "Folder within the matter (exact-match filter)."),
			"signing_flow_id": uuidS("Present once a signing flow was sealed."),
			"signed_at":       dateTime("Present once signed."),
		}))

	s["WebhookEndpoint"] = object("A subscriber of events. After 20 consecutive failed deliveries (events whose 5 attempts all failed: a receiver down for minutes is not turned off) it is turned off (`is_active` false); PATCH `is_active: true` resumes it.",
		[]string{"id", "url", "event_types", "is_active", "consecutive_failures", "created_at", "updated_at"},
		timestamps(M{
			"id":                         uuidS(""),
			"url":                        withDesc(M{"type": "string", "format": "uri", "pattern": "^https?://", "maxLength": webhook.MaxURL}, "`https://` (an `http://` URL on loopback only on a local server)."),
			"event_types":                withDesc(M{"type": "array", "items": enum("", outbox.Types...), "minItems": 1, "maxItems": len(outbox.Types)}, ""),
			"is_active":                  boolean(""),
			"consecutive_failures":       withDesc(M{"type": "integer", "minimum": 0}, "Failed deliveries (events whose 5 attempts all failed) since the last success."),
			"disabled_at":                dateTime("Present when the service turned the endpoint off."),
			"previous_secret_expires_at": dateTime("After a secret rotation: until then deliveries are also signed with the previous secret."),
		}))
	s["WebhookDelivery"] = object("One delivery attempt, kept 30 days.",
		[]string{"id", "endpoint_id", "event_id", "event_type", "attempt", "succeeded", "duration_ms", "attempted_at"}, M{
			"id":           uuidS(""),
			"endpoint_id":  uuidS(""),
			"event_id":     uuidS("Equal to the delivered body's `id` and `Service-Event-Id`."),
			"event_type":   enum("", append(slices.Clone(outbox.Types), outbox.WebhookTest)...),
			"attempt":      withDesc(M{"type": "integer", "minimum": 1}, "Attempt number of the event, from 1."),
			"succeeded":    boolean("Whether the receiver answered 2xx."),
			"status_code":  withDesc(M{"type": "integer", "minimum": 100, "maximum": 599}, "The receiver's HTTP status, when it answered."),
			"error":        str(webhook.MaxAttemptError, "Why the attempt failed, when it did."),
			"duration_ms":  withDesc(M{"type": "integer", "minimum": 0}, ""),
			"attempted_at": dateTime(""),
			"manual":       boolean("Present (true) on an attempt a manual retry made: one attempt, outside the automatic series."),
			"replay_id":    uuidS("Present on an attempt of a replay (`POST /webhooks/{id}/replay`, or `PATCH` with `replay_since`): the replay's id."),
		})
	s["Replay"] = object("A replay: the feed's events of a window, queued to one endpoint again as new deliveries of the same events.",
		[]string{"id", "endpoint_id", "since", "until", "event_types", "queued", "truncated", "next_since"}, M{
			"id":          uuidS("The replay's id: `replay_id` of its attempts in the delivery log, `Service-Replay-Id` on its requests."),
			"endpoint_id": uuidS(""),
			"since":       dateTime("Inclusive."),
			"until":       dateTime("Exclusive: the `until` sent, or the time of the call."),
			"event_types": withDesc(M{"type": "array", "items": enum("", outbox.Types...), "maxItems": len(outbox.Types)}, "The types replayed: those sent, or those the endpoint takes."),
			"queued":      withDesc(M{"type": "integer", "minimum": 0}, "Events queued: each a new delivery with its own attempts."),
			"truncated":   boolean("Whether the window held more than one call queues (1000 events)."),
			"next_since":  orNull(dateTime("When truncated: the `since` of the call that replays the rest; otherwise null.")),
		})
	s["EventsMeta"] = object("Page metadata of the event feed.", []string{"per_page", "count", "has_more", "next_after"}, M{
		"per_page":   perPage(),
		"count":      pageCount("Events on this page."),
		"has_more":   boolean("Whether more events are there now: ask again with `after` = `next_after` (or follow `links.next`)."),
		"next_after": withDesc(M{"type": "integer", "format": "int64", "minimum": 0}, "The `after` of the next call: of the next page, or, on the last, of your next poll (every event up to it has been listed)."),
	})
	var feedEvents []any
	for _, ev := range events {
		if ev.name != outbox.WebhookTest {
			feedEvents = append(feedEvents, schemaRef(ev.schema))
		}
	}
	s["Event"] = M{"description": "An event as the feed lists it: the same envelope as its deliveries.", "oneOf": feedEvents}
	s["EventList"] = object("A page of the event feed, oldest first.", []string{"data", "meta", "links"}, M{
		"data":  array(schemaRef("Event"), httpapi.MaxPerPage, ""),
		"meta":  schemaRef("EventsMeta"),
		"links": schemaRef("CursorLinks"),
	})
	s["WebhookReplayResponse"] = object("", []string{"data"}, M{"data": schemaRef("Replay")})
	s["WebhookEndpointUpdated"] = object("The updated endpoint; with `replay_since`, the replay it queued.", []string{"data"}, M{
		"data":   schemaRef("WebhookEndpoint"),
		"replay": schemaRef("Replay"),
	})
	s["DeliveryRetry"] = object("A resend of a failed attempt's event: one attempt, queued now, outside the automatic series (which stops once any attempt of the event succeeds).",
		[]string{"event_id", "endpoint_id", "status", "attempt"}, M{
			"event_id":    uuidS(""),
			"endpoint_id": uuidS(""),
			"status":      enum("", "queued"),
			"attempt":     withDesc(M{"type": "integer", "minimum": 2}, "Its `Service-Delivery-Attempt`: numbered after every attempt of the event to this endpoint before it."),
		})

	s["ReportTotals"] = object("", []string{"entries", "minutes", "amount"}, M{
		"entries": integer("Time entries counted."),
		"minutes": integer(""),
		"amount":  integer("Integer minor units (øre)."),
	})
	group := timeTotals(M{"key": str(maxUUID, "The status, user id or matter id of the group.")})
	s["ReportGroup"] = object("Totals of one group.", []string{"key", "entries", "minutes", "amount"}, group)
	s["TimeSummaryReport"] = object("Minutes and amounts of the time entries dated in the range.",
		[]string{"type", "date_from", "date_to", "currency", "totals", "by_status", "by_user", "by_matter"}, M{
			"type":      enum("", "time-summary"),
			"date_from": date(""),
			"date_to":   date(""),
			"currency":  currency(),
			"totals":    schemaRef("ReportTotals"),
			"by_status": array(schemaRef("ReportGroup"), len(timeentry.Statuses), "By time-entry status."),
			"by_user":   array(schemaRef("ReportGroup"), report.MaxGroups, "By user_id."),
			"by_matter": array(schemaRef("ReportGroup"), report.MaxGroups, "By matter_id."),
		})
	s["WipMatter"] = object("Unbilled time of one matter.",
		[]string{"matter_id", "client_id", "oldest_date", "amount_by_status", "entries", "minutes", "amount"},
		timeTotals(M{
			"matter_id":   uuidS(""),
			"client_id":   uuidS(""),
			"oldest_date": date("Date of the oldest unbilled entry."),
			"amount_by_status": withDesc(M{"type": "object", "additionalProperties": M{"type": "integer"}},
				"Amount (minor units) per unbilled status (`draft`, `submitted`, `approved`)."),
		}))
	s["WipReport"] = object("Work in progress: time not yet invoiced or written off, per matter, largest first.",
		[]string{"type", "currency", "totals", "matters"}, M{
			"type":     enum("", "wip"),
			"currency": currency(),
			"totals":   schemaRef("ReportTotals"),
			"matters":  array(schemaRef("WipMatter"), report.MaxGroups, ""),
		})
	s["AgingBucket"] = object("", []string{"bucket", "invoices", "total"}, M{
		"bucket":   enum("Days past due.", "current", "1-30", "31-60", "61-90", "90+"),
		"invoices": integer(""),
		"total":    integer("Integer minor units (øre)."),
	})
	s["ReceivablesAgingReport"] = object("Open invoices (sent, partially paid, overdue) by days past their due date. A partially paid invoice counts at its full total.",
		[]string{"type", "as_of", "currency", "invoices", "total", "buckets"}, M{
			"type":     enum("", "receivables-aging"),
			"as_of":    date(""),
			"currency": currency(),
			"invoices": integer(""),
			"total":    integer("Integer minor units (øre)."),
			"buckets":  withDesc(M{"type": "array", "items": schemaRef("AgingBucket"), "minItems": 5, "maxItems": 5}, "Always the five buckets, in order."),
		})

	writeBodies(s)
	eventSchemas(s)
	for _, name := range []string{"Matter", "Client", "Person", "Company", "TimeEntry", "Invoice", "Document", "WebhookEndpoint", "WebhookDelivery"} {
		s[name+"List"] = object("A page of "+name+" records.", []string{"data", "meta", "links"}, M{
			"data":  array(schemaRef(name), httpapi.MaxPerPage, ""),
			"meta":  schemaRef("CursorMeta"),
			"links": schemaRef("CursorLinks"),
		})
	}
	for _, name := range []string{"Matter", "Client", "Person", "Company", "TimeEntry", "InvoiceDetail", "Document", "WebhookEndpoint", "WebhookDelivery", "DeliveryRetry",
		"TimeSummaryReport", "WipReport", "ReceivablesAgingReport"} {
		s[name+"Response"] = object("", []string{"data"}, M{"data": schemaRef(name)})
	}
	s["OpenAPIDocument"] = M{"type": "object", "description": "An OpenAPI 3.1 document.", "required": []string{"openapi", "info", "paths"}}
	s["WebhookEndpointCreated"] = object("The new endpoint and, beside it, its signing secret: shown here only, never again.",
		[]string{"data", "secret"}, M{
			"data":   schemaRef("WebhookEndpoint"),
			"secret": withDesc(M{"type": "string", "pattern": "^whsec_[A-Za-z0-9+/=]+$", "maxLength": webhook.MaxSecret}, "HMAC-SHA256 key of `Service-Signature`, the whole string, `whsec_` prefix included. Store it now."),
		})
	addExamples(s)
	return s
}

func timeTotals(props M) M {
	props["entries"] = integer("Time entries counted.")
	props["minutes"] = integer("")
	props["amount"] = integer("Integer minor units (øre).")
	return props
}

// writeBodies are the create and update bodies. Unknown, derived and
// assigned fields are refused with 422; a null is the same as absent.
func writeBodies(s M) {
	moneyIn := func(desc string) M {
		return orNull(withDesc(M{"type": "integer", "minimum": 0, "maximum": 10_000_000_000},
			desc+" Integer minor units (øre): `1250` means 12.50 DKK; `1250.00`, `12.5` and `\"1250\"` are refused (422), never rounded."))
	}
	rateIn := func(desc string) M {
		m := moneyIn(desc + " At most `10000000` (100,000.00 DKK an hour).")
		m["maximum"] = 10_000_000
		return m
	}
	text := func(max int, desc string) M {
		return withDesc(M{"type": "string", "maxLength": max}, desc)
	}
	s["PersonCreate"] = closed(object("A person party. Any CPR field (`cpr`, `CPR`, `cpr_number`, `personnummer`, …, at any depth) and any CPR-like value are refused with 422.",
		[]string{"name", "email"}, M{
			"name":  text(200, ""),
			"email": text(254, "Unique among the organisation's people, compared as people read it (Unicode NFKC, case-folded, the domain as Unicode): a duplicate is 422 already_exists. An invisible or direction-changing character (zero-width, soft hyphen, byte order mark, bidirectional controls) is 422. Stored and returned as sent, in NFC."),
			"phone": orNull(text(40, "")),
		}))
	s["CompanyCreate"] = closed(object("A company party.", []string{"name", "cvr"}, M{
		"name": text(200, ""),
		"cvr":  text(40, "8 digits; spaces and other formatting characters are ignored. A CVR already held by another company of the organisation is 422, naming it."),
	}))
	s["ClientCreate"] = closed(object("An engagement: exactly one of `company_id` and `person_id` (both or neither is 422). A party of another organisation, or one already engaged, is 422.",
		nil, M{
			"company_id": orNull(uuidS("")),
			"person_id":  orNull(uuidS("")),
		}))
	s["MatterCreate"] = closed(object("A matter. `status` `active` needs the client's KYC case approved and unexpired (422 on `status` otherwise: import as `dormant` and activate in the application).",
		[]string{"client_id"}, M{
			"client_id":     uuidS("An existing client engagement of the organisation."),
			"status":        orNull(enum("Default `dormant`. `closed` and `archived` are refused.", "dormant", "active")),
			"matter_number": orNull(withDesc(M{"type": "string", "maxLength": 50}, "Letters, digits and `. _ / -`, starting with a letter or digit; unique (422 if used). Assigned (`SAG-<n>`) when absent.")),
			"title":         orNull(text(200, "")),
			"hourly_rate":   rateIn("Default rate of the matter's time entries."),
			"currency":      orNull(currency()),
		}))
	s["TimeEntryCreate"] = closed(object("A time entry; it opens at `draft`. `amount`, `status`, `client_id` and `currency` are derived and refused (422). The matter must not be closed or archived.",
		[]string{"matter_id", "date", "duration_minutes"}, M{
			"matter_id":        uuidS("An existing matter of the organisation."),
			"date":             withDesc(M{"type": "string", "format": "date"}, "Entry date, 1900-01-01 to 2100-12-31."),
			"duration_minutes": withDesc(M{"type": "integer", "minimum": 1, "maximum": 1440}, "Whole minutes."),
			"hourly_rate":      rateIn("When absent, the matter's `hourly_rate` (422 when the matter has none)."),
			"user_id":          orNull(uuidS("Who did the work; default: the API client's id.")),
			"description":      orNull(text(2000, "")),
		}))
	eventTypes := withDesc(M{"type": "array", "items": enum("", outbox.Types...), "minItems": 1, "maxItems": len(outbox.Types)}, "At least one event name, each once.")
	hook := withDesc(M{"type": "string", "maxLength": webhook.MaxURL, "pattern": "^https?://"},
		"Must begin `https://`. Hosts that are or resolve to loopback, private, link-local or other non-public addresses are refused. "+
			"A local server (the devserver) also takes `http://` for a receiver on loopback (127.0.0.1, [::1], localhost), so a local receiver needs no certificate; deployed stages never do.")
	s["WebhookCreate"] = closed(object("A webhook endpoint; at most 50 per organisation. No Idempotency-Key is needed.",
		[]string{"url", "event_types"}, M{
			"url":         hook,
			"event_types": eventTypes,
			"is_active":   orNull(boolean("Default true.")),
		}))
	s["WebhookRotateSecret"] = closed(object("Optional body of a secret rotation.", nil, M{
		"grace_period_seconds": withDesc(M{"type": "integer", "minimum": 0, "maximum": 604800}, "How long the old secret keeps signing beside the new one (default 86400: 24 hours; 0 retires it at once)."),
	}))
	s["WebhookUpdate"] = closed(object("The fields to change. Turning an endpoint on resets `consecutive_failures`.", nil, M{
		"is_active":   orNull(boolean("")),
		"url":         orNull(hook),
		"event_types": orNull(eventTypes),
		"replay_since": orNull(withDesc(M{"type": "string", "maxLength": maxDateTime}, "An addition, only with `is_active: true`: queue what the endpoint missed, the feed's events from this instant on (a date-time with `Z` or an offset, or a date), of the types it takes, as a replay answered in `replay`. "+
			"At most 30 days back (events are kept that long).")),
	}))
	s["WebhookReplay"] = closed(object("The window to replay.", []string{"since"}, M{
		"since":       withDesc(M{"type": "string", "maxLength": maxDateTime}, "Inclusive: a date-time with `Z` or an offset (any fraction of a second), or a date (midnight UTC). At most 30 days back."),
		"until":       orNull(withDesc(M{"type": "string", "maxLength": maxDateTime}, "Exclusive; default now. After `since`.")),
		"event_types": orNull(withDesc(M{"type": "array", "items": enum("", outbox.Types...), "minItems": 1, "maxItems": len(outbox.Types)}, "Only these types; default the endpoint's. Each must be one the endpoint takes.")),
	}))
}

// eventSchemas are the bodies of webhook deliveries.
func eventSchemas(s M) {
	s["MatterEvent"] = object("Identifiers and status of the matter; read the rest through the API.",
		[]string{"id", "status", "client_id", "matter_number"}, M{
			"id": uuidS(""), "status": enum("", matter.Statuses...), "client_id": uuidS(""), "matter_number": str(matter.MaxNumber, ""),
			"previous_status": enum("`matter.closed` and `matter.updated`: the status the matter left (the same as `status` when only its fields changed).", matter.Statuses...),
		})
	s["InvoiceEvent"] = object("Identifiers and status of the invoice.",
		[]string{"id", "status", "total", "currency", "matter_id", "client_id"}, M{
			"id": uuidS(""), "status": enum("", billing.Statuses...), "total": integer("Integer minor units (øre)."),
			"currency": currency(), "matter_id": uuidS(""), "client_id": uuidS(""),
			"previous_status": enum("On a status move (`invoice.updated`, and `invoice.issued` or `invoice.paid` of an existing invoice): the status it left.", billing.Statuses...),
		})
	s["TimeEntryEvent"] = object("Identifiers and status of the time entry.",
		[]string{"id", "status", "matter_id", "user_id", "date"}, M{
			"id": uuidS(""), "status": enum("", timeentry.Statuses...), "matter_id": uuidS(""), "user_id": uuidS(""), "date": date(""),
			"previous_status": enum("`time_entry.updated`: the status the entry left.", timeentry.Statuses...),
			"invoice_id":      uuidS("`time_entry.updated`: the invoice that bills the entry, while one does."),
		})
	s["ClientEvent"] = object("Identifiers, type and KYC status of the client engagement (never the party's name or contact details).",
		[]string{"id", "type", "kyc_status"}, M{
			"id": uuidS(""), "type": enum("", party.TypeCompany, party.TypePerson),
			"company_id": uuidS("Present when `type` is `company`."), "person_id": uuidS("Present when `type` is `person`."),
			"kyc_status":          enum("", party.KYCStatuses...),
			"previous_kyc_status": enum("`client.updated`: the KYC status before the change.", party.KYCStatuses...),
		})
	s["PersonEvent"] = object("The person's id; read the person through the API (an event carries no personal data).",
		[]string{"id"}, M{"id": uuidS("")})
	s["CompanyEvent"] = object("The company's id and the status of its enrichment (the register snapshot); read the rest through the API.",
		[]string{"id", "enrichment_status"}, M{
			"id": uuidS(""),
			"enrichment_status": enum("`pending` at creation; on `company.updated` the enrichment's outcome (`done` when the register's snapshot arrived).",
				party.EnrichmentPending, party.EnrichmentDone, party.EnrichmentFailed, party.EnrichmentSkipped),
		})
	s["DocumentEvent"] = object("Identifiers of the document's register entry.", []string{"id", "matter_id"}, M{"id": uuidS(""), "matter_id": uuidS("")})
	s["TestEvent"] = object("What a test event carries: the endpoint it was sent to, and a note.",
		[]string{"endpoint_id", "message"}, M{"endpoint_id": uuidS(""), "message": str(httpapi.MaxMessage, "")})
	s["SigningFlowEvent"] = object("Identifiers and status of the sealed signing flow.",
		[]string{"id", "status", "document_id", "matter_id"}, M{
			"id": uuidS(""), "status": enum("", document.Sealed), "document_id": uuidS(""), "matter_id": uuidS(""),
		})
	s["DisabledEndpointEvent"] = object("The endpoint as it was turned off (never its secret).",
		[]string{"id", "url", "event_types", "consecutive_failures", "disabled_at"}, M{
			"id": uuidS(""), "url": str(webhook.MaxURL, ""), "event_types": withDesc(M{"type": "array", "items": enum("", outbox.Types...), "maxItems": len(outbox.Types)}, ""),
			"consecutive_failures": integer("The failed deliveries in a row that turned it off (20): events whose 5 attempts all failed."), "disabled_at": dateTime(""),
		})
	for _, ev := range events {
		required := []string{"id", "event", "timestamp", "organization_id", "data"}
		props := M{
			"id":              uuidS("Event id: equal to `Service-Event-Id` and `webhook-id`, the same on every attempt and replay. Deduplicate on it."),
			"event":           enum("", ev.name),
			"timestamp":       dateTime("When the event happened (ISO 8601 with offset)."),
			"organization_id": uuidS(""),
			"data":            object("", []string{ev.key}, M{ev.key: schemaRef(ev.payload)}),
		}
		if ev.name != outbox.WebhookTest {
			required = append(required, "sequence")
			props["sequence"] = withDesc(M{"type": "integer", "format": "int64", "minimum": 1},
				"The event's place in the organisation's feed (`GET /events`): unique, and increasing in the order the feed lists events. "+
					"Deliveries may arrive out of this order; compare sequences to order them, and look for a gap in the feed.")
		}
		s[ev.schema] = object("The body of a `"+string(ev.name)+"` delivery.", required, props)
	}
}

// events are the webhook event types and their data keys.
var events = []struct {
	name                          outbox.Type
	key, payload, schema, summary string
}{
	{outbox.MatterCreated, "matter", "MatterEvent", "MatterCreatedEvent", "A matter was created."},
	{outbox.MatterClosed, "matter", "MatterEvent", "MatterClosedEvent", "A matter was closed."},
	{outbox.InvoiceIssued, "invoice", "InvoiceEvent", "InvoiceIssuedEvent", "An invoice was issued or sent."},
	{outbox.InvoicePaid, "invoice", "InvoiceEvent", "InvoicePaidEvent", "An invoice was paid in full."},
	{outbox.DocumentSigned, "signing_flow", "SigningFlowEvent", "DocumentSignedEvent", "A signing flow was sealed."},
	{outbox.TimeEntryCreated, "time_entry", "TimeEntryEvent", "TimeEntryCreatedEvent", "A time entry was created."},
	{outbox.WebhookEndpointDisabled, "webhook_endpoint", "DisabledEndpointEvent", "WebhookEndpointDisabledEvent",
		"An endpoint was turned off after 20 consecutive failed deliveries, each an event whose 5 attempts all failed (an addition): delivered to the organisation's other active endpoints subscribed to it, and in the feed."},
	// Additions: an event for every change.
	{outbox.MatterUpdated, "matter", "MatterEvent", "MatterUpdatedEvent", "A matter changed: its status moved (other than to closed) or its fields changed (an addition)."},
	{outbox.ClientCreated, "client", "ClientEvent", "ClientCreatedEvent", "A client engagement was created (an addition)."},
	{outbox.ClientUpdated, "client", "ClientEvent", "ClientUpdatedEvent", "A client engagement's KYC status or expiry changed (an addition)."},
	{outbox.PersonCreated, "person", "PersonEvent", "PersonCreatedEvent", "A person was created (an addition)."},
	{outbox.CompanyCreated, "company", "CompanyEvent", "CompanyCreatedEvent", "A company was created; its enrichment starts (an addition)."},
	{outbox.CompanyUpdated, "company", "CompanyEvent", "CompanyUpdatedEvent", "A company's enrichment recorded an outcome: the register snapshot arrived, or the lookup failed or will be retried (an addition)."},
	{outbox.TimeEntryUpdated, "time_entry", "TimeEntryEvent", "TimeEntryUpdatedEvent", "A time entry's status moved: submitted, approved, invoiced, given back by a cancelled invoice, written off (an addition)."},
	{outbox.InvoiceCreated, "invoice", "InvoiceEvent", "InvoiceCreatedEvent", "An invoice was created as a draft or approved (created as sent, it raises invoice.issued) (an addition)."},
	{outbox.InvoiceUpdated, "invoice", "InvoiceEvent", "InvoiceUpdatedEvent", "An invoice's status moved, other than to sent (invoice.issued) or paid (invoice.paid): approved, overdue, partially paid, cancelled, credited (an addition)."},
	{outbox.DocumentCreated, "document", "DocumentEvent", "DocumentCreatedEvent", "A document was recorded in the register (an addition)."},
	{outbox.WebhookTest, "test", "TestEvent", "WebhookTestEvent", "A test event, sent only on request (POST /webhooks/{id}/test)."},
}
