package build

import (
	"strconv"

	"github.com/practice-api/practice-api/shared/outbox"
)

// Examples shown on the reference page: one realistic record per schema
// (the wrappers, lists and deliveries are built from them), and per error
// status exactly what that status carries. TestExamplesMatchTheirSchemas
// validates every one against its schema, so an example cannot drift from
// what the API answers.

const (
	exOrg      = "5eed0000-0000-4000-8000-000000000001"
	exCompany  = "3f6c1a52-7d0e-4b8a-9c61-2a4f0e8b9d13"
	exPerson   = "8b2e4f70-1c3d-4a5b-9e6f-7a8b9c0d1e2f"
	exClient   = "c41d9a7e-5b2f-4e8c-a3d6-0f1e2d3c4b5a"
	exMatter   = "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10"
	exEntry    = "6d4f2e1a-9b8c-4d7e-8f6a-5b4c3d2e1f0a"
	exUser     = "a7c3e5f1-2b4d-4f6a-8c0e-1d3f5a7b9c2e"
	exInvoice  = "e2a4c6e8-1a3c-4e5a-9c7e-2b4d6f8a0c1e"
	exDocument = "f1e2d3c4-b5a6-4978-8a6b-5c4d3e2f1a0b"
	exFlow     = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	exEndpoint = "2c4e6a8b-0d1f-4b3d-9e5f-7a9c1b3d5f7e"
	exEvent    = "4e6a8c0e-2b4d-4f6a-8b0d-3c5e7a9c1e3f"
	exDelivery = "019a9f5c-8e3a-7b21-9c4d-5e6f7a8b9c0d"
	exCreated  = "2025-03-14T09:12:30.482913Z"
	exUpdated  = "2025-03-14T15:40:02.117204Z"
	exCursor   = "kS8aHq3v0Wc9nA1xYtE2rJ7mLbP4uG6dZoF5iN0sVhQ"
	exBase     = "https://api.example.dk/api/v1"
	exSecret   = "whsec_O58cLY56a1xNPi8aCbyNfm9aSzwtHg+aaLx+XU86Kxw="
	exReplay   = "7d9b1f3a-5c7e-4a9b-8d1f-3a5c7e9b1d3f"
	exSeq      = 1741943550482913
)

// recordExamples are the examples of the named schemas that are not
// derived from others.
func recordExamples() M {
	matter := M{"id": exMatter, "client_id": exClient, "matter_number": "SAG-1042", "title": "Lejekontrakt, Vesterbrogade 12",
		"status": "active", "hourly_rate": 185000, "currency": "DKK", "created_at": exCreated, "updated_at": exUpdated}
	client := M{"id": exClient, "type": "company", "company_id": exCompany, "kyc_status": "approved",
		"kyc_expires_at": "2027-03-14T00:00:00Z", "created_at": exCreated, "updated_at": exUpdated}
	person := M{"id": exPerson, "name": "Anne Holm", "email": "anne.holm@example.dk", "phone": "+45 20 11 34 56",
		"created_at": exCreated, "updated_at": exUpdated}
	logo := M{"content_type": "image/png", "size": 18234, "sha256": "9f2c4a6e8b0d1f3a5c7e9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a"}
	enrichment := M{"status": "done", "attempts": 1, "updated_at": exUpdated, "logo": logo,
		"register": M{"name": "Nordlys ApS", "status": "NORMAL", "industry": "Advokatvirksomhed", "employees": 12}}
	company := M{"id": exCompany, "name": "Nordlys ApS", "cvr": "12345678", "enrichment": enrichment, "created_at": exCreated, "updated_at": exUpdated}
	entry := M{"id": exEntry, "matter_id": exMatter, "client_id": exClient, "user_id": exUser, "date": "2025-03-14",
		"duration_minutes": 90, "hourly_rate": 185000, "amount": 277500, "currency": "DKK", "status": "draft",
		"description": "Gennemgang af lejekontrakt og notat til klient", "created_at": exCreated, "updated_at": exUpdated}
	line := M{"description": "Rådgivning, marts 2025", "amount": 277500, "time_entry_id": exEntry}
	invoice := M{"id": exInvoice, "number": "INV-208", "matter_id": exMatter, "client_id": exClient, "status": "sent",
		"issue_date": "2025-03-31", "due_date": "2025-04-30", "currency": "DKK", "total": 277500,
		"created_at": exCreated, "updated_at": exUpdated, "sent_at": "2025-03-31T10:00:00.000000Z"}
	detail := M{}
	for k, v := range invoice {
		detail[k] = v
	}
	detail["lines"] = []any{line}
	document := M{"id": exDocument, "matter_id": exMatter, "name": "Forlig", "filename": "forlig.pdf", "mime_type": "application/pdf",
		"size_bytes": 48213, "folder": "Korrespondance", "signing_flow_id": exFlow, "signed_at": "2025-03-20T13:05:44.000000Z",
		"created_at": exCreated, "updated_at": exUpdated}
	endpoint := M{"id": exEndpoint, "url": "https://hooks.example.dk/practice", "event_types": []any{"matter.created", "time_entry.created"},
		"is_active": true, "consecutive_failures": 0, "created_at": exCreated, "updated_at": exUpdated}
	delivery := M{"id": exDelivery, "endpoint_id": exEndpoint, "event_id": exEvent, "event_type": "matter.created", "attempt": 2,
		"succeeded": false, "status_code": 503, "error": "receiver answered 503", "duration_ms": 142, "attempted_at": exUpdated}
	totals := M{"entries": 42, "minutes": 3150, "amount": 9712500}
	group := M{"key": "approved", "entries": 12, "minutes": 960, "amount": 2960000}
	wipMatter := M{"matter_id": exMatter, "client_id": exClient, "oldest_date": "2025-02-03", "entries": 9, "minutes": 690, "amount": 2127500,
		"amount_by_status": M{"draft": 277500, "submitted": 555000, "approved": 1295000}}
	bucket := func(name string, n, total int) M { return M{"bucket": name, "invoices": n, "total": total} }
	return M{
		"FieldError":  M{"field": "duration_minutes", "message": "duration_minutes must be from 1 to 1440 (whole minutes; 1440 is a day)"},
		"CursorMeta":  M{"per_page": 50, "count": 50, "has_more": true, "next_cursor": exCursor},
		"CursorLinks": M{"next": exBase + "/matters?cursor=" + exCursor},
		"Matter":      matter, "Client": client, "Person": person, "Company": company, "Enrichment": enrichment, "Logo": logo,
		"TimeEntry": entry, "Invoice": invoice, "InvoiceDetail": detail, "InvoiceLine": line, "Document": document,
		"WebhookEndpoint": endpoint, "WebhookDelivery": delivery,
		"DeliveryRetry": M{"event_id": exEvent, "endpoint_id": exEndpoint, "status": "queued", "attempt": 3},
		"ReportTotals":  totals, "ReportGroup": group,
		"TimeSummaryReport": M{"type": "time-summary", "date_from": "2025-03-01", "date_to": "2025-03-31", "currency": "DKK", "totals": totals,
			"by_status": []any{group}, "by_user": []any{M{"key": exUser, "entries": 42, "minutes": 3150, "amount": 9712500}},
			"by_matter": []any{M{"key": exMatter, "entries": 42, "minutes": 3150, "amount": 9712500}}},
		"WipMatter":   wipMatter,
		"WipReport":   M{"type": "wip", "currency": "DKK", "totals": M{"entries": 9, "minutes": 690, "amount": 2127500}, "matters": []any{wipMatter}},
		"AgingBucket": bucket("1-30", 2, 555000),
		"ReceivablesAgingReport": M{"type": "receivables-aging", "as_of": "2025-04-15", "currency": "DKK", "invoices": 3, "total": 832500,
			"buckets": []any{bucket("current", 1, 277500), bucket("1-30", 2, 555000), bucket("31-60", 0, 0), bucket("61-90", 0, 0), bucket("90+", 0, 0)}},
		"OpenAPIDocument":     M{"openapi": "3.1.0", "info": M{"title": "Practice API", "version": "1"}, "paths": M{}},
		"PersonCreate":        M{"name": "Anne Holm", "email": "anne.holm@example.dk", "phone": "+45 20 11 34 56"},
		"CompanyCreate":       M{"name": "Nordlys ApS", "cvr": "DK 12 34 56 78"},
		"ClientCreate":        M{"company_id": exCompany},
		"MatterCreate":        M{"client_id": exClient, "status": "dormant", "title": "Lejekontrakt, Vesterbrogade 12", "hourly_rate": 185000},
		"TimeEntryCreate":     M{"matter_id": exMatter, "date": "2025-03-14", "duration_minutes": 90, "description": "Gennemgang af lejekontrakt og notat til klient"},
		"WebhookCreate":       M{"url": "https://hooks.example.dk/practice", "event_types": []any{"matter.created", "time_entry.created"}},
		"WebhookRotateSecret": M{"grace_period_seconds": 86400},
		"WebhookUpdate":       M{"is_active": true, "replay_since": "2025-03-14T09:00:00Z"},
		"MatterEvent":         M{"id": exMatter, "status": "dormant", "client_id": exClient, "matter_number": "SAG-1042"},
		"InvoiceEvent":        M{"id": exInvoice, "status": "sent", "total": 277500, "currency": "DKK", "matter_id": exMatter, "client_id": exClient},
		"TimeEntryEvent":      M{"id": exEntry, "status": "draft", "matter_id": exMatter, "user_id": exUser, "date": "2025-03-14"},
		"TestEvent": M{"endpoint_id": exEndpoint,
			"message": "A test event, sent on request through POST /webhooks/{id}/test. Verify its signature as for any event."},
		"SigningFlowEvent": M{"id": exFlow, "status": "sealed", "document_id": exDocument, "matter_id": exMatter},
		"ClientEvent":      M{"id": exClient, "type": "company", "company_id": exCompany, "kyc_status": "approved", "previous_kyc_status": "in_progress"},
		"PersonEvent":      M{"id": exPerson},
		"CompanyEvent":     M{"id": exCompany, "enrichment_status": "done"},
		"DocumentEvent":    M{"id": exDocument, "matter_id": exMatter},
		"DisabledEndpointEvent": M{"id": exEndpoint, "url": "https://hooks.example.dk/practice", "event_types": []any{"matter.created", "time_entry.created"},
			"consecutive_failures": 20, "disabled_at": exUpdated},
		"Replay": M{"id": exReplay, "endpoint_id": exEndpoint, "since": "2025-03-14T09:00:00.000000Z", "until": exUpdated,
			"event_types": []any{"matter.created", "time_entry.created"}, "queued": 1000, "truncated": true, "next_since": "2025-03-14T11:02:17.310442Z"},
		"WebhookReplay": M{"since": "2025-03-14T09:00:00Z"},
		"EventsMeta":    M{"per_page": 1, "count": 1, "has_more": true, "next_after": exSeq},
	}
}

// addExamples sets the example of every named schema: the records', and
// the wrappers' built from them.
func addExamples(s M) {
	ex := recordExamples()
	for _, name := range []string{"Matter", "Client", "Person", "Company", "TimeEntry", "Invoice", "Document", "WebhookEndpoint", "WebhookDelivery"} {
		ex[name+"List"] = M{"data": []any{ex[name]}, "meta": ex["CursorMeta"], "links": ex["CursorLinks"]}
	}
	for _, name := range []string{"Matter", "Client", "Person", "Company", "TimeEntry", "InvoiceDetail", "Document", "WebhookEndpoint", "WebhookDelivery", "DeliveryRetry",
		"TimeSummaryReport", "WipReport", "ReceivablesAgingReport"} {
		ex[name+"Response"] = M{"data": ex[name]}
	}
	ex["WebhookEndpointCreated"] = M{"data": ex["WebhookEndpoint"], "secret": exSecret}
	for _, ev := range events {
		e := M{"id": exEvent, "event": ev.name, "timestamp": "2025-03-14T09:12:30.482913Z", "organization_id": exOrg,
			"data": M{ev.key: ex[ev.payload]}}
		if ev.name != outbox.WebhookTest {
			e["sequence"] = exSeq
		}
		ex[ev.schema] = e
	}
	ex["Event"] = ex["MatterCreatedEvent"]
	ex["EventList"] = M{"data": []any{ex["MatterCreatedEvent"]}, "meta": ex["EventsMeta"],
		"links": M{"next": exBase + "/events?after=" + strconv.FormatInt(exSeq, 10) + "&per_page=1"}}
	// Each error schema's example is its status's answer.
	for name, e := range errorExamples {
		if name != "NotFoundPublic" {
			ex[errorSchemaOf(errorStatus[name])] = e
		}
	}
	ex["WebhookReplayResponse"] = M{"data": ex["Replay"]}
	ex["WebhookEndpointUpdated"] = M{"data": ex["WebhookEndpoint"], "replay": ex["Replay"]}
	for name, v := range ex {
		if schema, ok := s[name].(M); ok {
			schema["example"] = v
		}
	}
}

// errorStatus is the status of each error answer.
var errorStatus = map[string]int{"BadRequest": 400, "Conflict": 409, "Forbidden": 403, "InternalError": 500, "NotFound": 404, "NotFoundPublic": 404,
	"PayloadTooLarge": 413, "ServiceUnavailable": 503, "TooManyRequests": 429, "Unauthorized": 401, "Unprocessable": 422}

// errorExamples are the body each error status carries: exactly its fields.
var errorExamples = map[string]any{
	"BadRequest": M{"code": "malformed_body", "message": "the request body could not be read in full (it ended before its Content-Length, or its encoding is broken); send it again"},
	"Conflict":   M{"code": "idempotency_key_reused", "message": "this Idempotency-Key was already used with a different request body; use a new key for a different record"},
	"Forbidden": M{"code": "insufficient_scope", "message": "this key lacks the scope matters:read, which GET /api/v1/matters requires; scopes are fixed when a key is created, so ask for a new key",
		"required_scope": "matters:read"},
	"InternalError":   M{"code": "internal_error", "message": "internal error; quote request id 7f3c2a1e-9b8d-4c6e-a5f4-3e2d1c0b9a8f to support"},
	"NotFound":        M{"code": "not_found", "message": "matter not found"},
	"NotFoundPublic":  M{"code": "no_such_endpoint", "message": "no such endpoint: GET /api/v1/docs/nope.js"},
	"PayloadTooLarge": M{"code": "payload_too_large", "message": "request body exceeds the limit of 1048576 bytes"},
	"ServiceUnavailable": M{"code": "service_unavailable", "message": "the data store is temporarily unavailable; retry the request (with the same Idempotency-Key for a create); " +
		"request id 7f3c2a1e-9b8d-4c6e-a5f4-3e2d1c0b9a8f"},
	"TooManyRequests": M{"code": "rate_limited", "message": "rate limit of 120 requests per minute exceeded; retry after 17 seconds"},
	"Unauthorized":    M{"code": "unauthenticated", "message": "the API key is unknown, revoked or expired"},
	"Unprocessable": M{"code": "invalid_request", "message": "status must be one of active, dormant, closed, archived", "field": "status",
		"errors": []any{M{"field": "status", "message": "status must be one of active, dormant, closed, archived"}}},
}
