package httpapi

import "net/http"

// Code is an error answer's machine-readable kind: stable, one per kind of
// problem, beside the message a person reads. Integrators branch on it;
// new kinds may be added, and a code is never renamed or reused.
type Code string

// The codes, and the status each answers with.
const (
	CodeInvalidRequest         Code = "invalid_request"          // 422: a field or parameter is wrong (field, errors)
	CodeAlreadyExists          Code = "already_exists"           // 422: a unique value is taken (existing_id names the record)
	CodeIdempotencyKeyRequired Code = "idempotency_key_required" // 422: a create without a usable Idempotency-Key
	CodeMalformedBody          Code = "malformed_body"           // 400: the body could not be read
	CodeUnauthenticated        Code = "unauthenticated"          // 401: no key, a malformed header, or an unknown, revoked or expired key
	CodeInsufficientScope      Code = "insufficient_scope"       // 403: the key lacks required_scope
	CodeNotFound               Code = "not_found"                // 404: no such resource in your organisation
	CodeNoSuchEndpoint         Code = "no_such_endpoint"         // 404: no such path
	CodeMethodNotAllowed       Code = "method_not_allowed"       // 405
	CodeIdempotencyKeyReused   Code = "idempotency_key_reused"   // 409: the key was used with another body
	CodeIdempotencyKeyInUse    Code = "idempotency_key_in_use"   // 409: a request with the key is in flight (Retry-After)
	CodeConcurrentChange       Code = "concurrent_change"        // 409: other requests changed the same records; retry as sent (Retry-After)
	CodeConflict               Code = "conflict"                 // 409: the resource's state does not allow it (the message says which)
	CodePayloadTooLarge        Code = "payload_too_large"        // 413
	CodeRateLimited            Code = "rate_limited"             // 429: Retry-After
	CodeReplayBudgetExhausted  Code = "replay_budget_exhausted"  // 429: the organisation's replays of the hour are spent (Retry-After)
	CodeInternalError          Code = "internal_error"           // 500: quote the request id
	CodeServiceUnavailable     Code = "service_unavailable"      // 503: retry (Retry-After)
)

// Codes lists every code with the status it comes with and what it
// means: the OpenAPI document's list is made from it.
var Codes = []struct {
	Code    Code
	Status  int
	Meaning string
}{
	{CodeInvalidRequest, http.StatusUnprocessableEntity, "A field or query parameter is wrong: `field` names it, `errors` lists every problem."},
	{CodeAlreadyExists, http.StatusUnprocessableEntity, "A value that is unique in the organisation is taken (a CVR, an email address, a party's engagement, a matter number): `existing_id` is the record that holds it."},
	{CodeIdempotencyKeyRequired, http.StatusUnprocessableEntity, "A create without an `Idempotency-Key`, or with one that is too long or holds a CPR."},
	{CodeMalformedBody, http.StatusBadRequest, "The request body could not be read in full."},
	{CodeUnauthenticated, http.StatusUnauthorized, "No API key, a malformed Authorization header, or a key that is unknown, revoked, expired or of a mode this deployment refuses."},
	{CodeInsufficientScope, http.StatusForbidden, "The key lacks `required_scope`."},
	{CodeNotFound, http.StatusNotFound, "No such resource in your organisation (or a malformed id)."},
	{CodeNoSuchEndpoint, http.StatusNotFound, "No operation has this path."},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed, "The path takes other methods (the `Allow` header lists them)."},
	{CodeIdempotencyKeyReused, http.StatusConflict, "The `Idempotency-Key` was used with a different body: use a new key for a different record."},
	{CodeIdempotencyKeyInUse, http.StatusConflict, "A request with this `Idempotency-Key` is still running: retry after `Retry-After`."},
	{CodeConcurrentChange, http.StatusConflict, "Other requests were changing the same records and nothing was written: retry the request as sent."},
	{CodeConflict, http.StatusConflict, "The resource's state does not allow the request (the message says why and what to do)."},
	{CodePayloadTooLarge, http.StatusRequestEntityTooLarge, "The request body exceeds the limit."},
	{CodeRateLimited, http.StatusTooManyRequests, "The key's requests per minute are spent: retry after `Retry-After`."},
	{CodeReplayBudgetExhausted, http.StatusTooManyRequests, "The organisation has replayed its events of this clock hour (`POST /webhooks/{id}/replay`, `replay_since`): retry after `Retry-After`, the next hour."},
	{CodeInternalError, http.StatusInternalServerError, "A fault of the service: quote the request id in the message."},
	{CodeServiceUnavailable, http.StatusServiceUnavailable, "The data store is briefly unavailable and nothing was written: retry (with the same `Idempotency-Key`)."},
}

// defaultCode is the code of an Error that names none: its status's
// general kind.
func defaultCode(status int) Code {
	switch status {
	case http.StatusUnprocessableEntity:
		return CodeInvalidRequest
	case http.StatusBadRequest:
		return CodeMalformedBody
	case http.StatusUnauthorized:
		return CodeUnauthenticated
	case http.StatusForbidden:
		return CodeInsufficientScope
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case http.StatusTooManyRequests:
		return CodeRateLimited
	case http.StatusServiceUnavailable:
		return CodeServiceUnavailable
	}
	return CodeInternalError
}

// AlreadyExists returns the 422 of a unique value that existing holds.
func AlreadyExists(field, existing, format string, args ...any) *Error {
	e := Invalid(field, format, args...)
	e.Code, e.ExistingID = CodeAlreadyExists, existing
	return e
}
