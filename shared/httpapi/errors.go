// Package httpapi is the HTTP edge shared by every endpoint family:
// authentication and rate limiting, errors, JSON, pagination and the router
// built from the route table. It holds no business rules.
package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/practice-api/practice-api/shared/cpr"
)

// FieldError is one invalid field or parameter of a 422.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is an error the client may see: its status and message are safe to
// return. Anything else reaching WriteError is logged and answered with a
// generic 500.
type Error struct {
	Status int `json:"-"`
	// Code is the kind of problem (Codes); WriteError fills in the
	// status's general kind when it is empty.
	Code    Code         `json:"code"`
	Message string       `json:"message"`
	Field   string       `json:"field,omitempty"`
	Errors  []FieldError `json:"errors,omitempty"`
	// ErrorsTotal counts every problem when errors lists only the first
	// body.MaxProblems (a bounded answer: a body of 100,000 unknown fields
	// must not make a 6 MB error).
	ErrorsTotal   int    `json:"errors_total,omitempty"`
	RequiredScope string `json:"required_scope,omitempty"`
	// ExistingID names the record that holds a unique value (already_exists).
	ExistingID string `json:"existing_id,omitempty"`
	// RetryAfter, in seconds, is sent as Retry-After: the request may
	// succeed as sent once the condition it met has passed.
	RetryAfter int `json:"-"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Message) }

// Invalid returns a 422 for one field or query parameter.
func Invalid(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Status: http.StatusUnprocessableEntity, Message: msg, Field: field,
		Errors: []FieldError{{Field: field, Message: msg}}}
}

// NotFound returns the 404 used for absent resources, including ids of other
// organisations and malformed ids: the three are indistinguishable.
func NotFound(what string) *Error {
	return &Error{Status: http.StatusNotFound, Message: what + " not found"}
}

// WriteJSON writes v as the response body with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteError is the one place errors become HTTP responses: an edge
// answer (*Error) as it is, anything else by its kind through the one
// table (answers, errtable.go). Messages echo input (a filter value, a
// field name), so any CPR in them is redacted: the service never returns
// one, even to the caller who sent it. The service's own failures are
// logged with their cause and answered with a fixed message naming the
// request id, never the cause.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e, log := toError(err)
	if log != "" {
		Logger(r.Context()).ErrorContext(r.Context(), log, "err", err, "method", r.Method, "path", r.URL.Path, "request_id", RequestID(r.Context()))
		switch e.Code {
		case CodeServiceUnavailable:
			// Throttling or the store's own failure: nothing was
			// half-written, and the same request, with the same
			// Idempotency-Key, can be retried.
			e.Message = "the data store is temporarily unavailable; retry the request (with the same Idempotency-Key for a create); request id " + RequestID(r.Context())
		default:
			e.Message = "internal error; quote request id " + RequestID(r.Context()) + " to support"
		}
		e.Field, e.Errors, e.ExistingID = "", nil, ""
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	WriteJSON(w, e.Status, e.redacted())
}

// IsRefusal reports whether err is answered with a 4xx: the caller's
// request was refused, rather than the service failing.
func IsRefusal(err error) bool {
	e, _ := toError(err)
	return e.Status < 500
}

func (e *Error) redacted() *Error {
	out := *e
	if out.Code == "" {
		out.Code = defaultCode(e.Status)
	}
	out.Message, out.Field = Clip(cpr.Redact(e.Message), MaxMessage), Clip(cpr.Redact(e.Field), MaxField)
	if len(e.Errors) > 0 {
		out.Errors = make([]FieldError, len(e.Errors))
		for i, fe := range e.Errors {
			out.Errors[i] = FieldError{Field: Clip(cpr.Redact(fe.Field), MaxField), Message: Clip(cpr.Redact(fe.Message), MaxMessage)}
		}
	}
	return &out
}

// An error's message and field are at most this many characters: the
// document says so (OWASP API4), and a message that quotes what the caller
// sent (an unknown field's name, a value) cannot grow with it.
const (
	MaxMessage = 2000
	MaxField   = 200
)

// Clip shortens s to at most max characters (runes), ending it with "…"
// when it was longer.
func Clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// Data wraps a single resource as {"data": ...}.
func Data(v any) map[string]any { return map[string]any{"data": v} }
