// Package apperr holds the errors domain and store code return: what went
// wrong in the domain's words (a field is invalid, a record is absent, a
// state forbids the change), with no HTTP in it. The edge (httpapi) maps
// each Kind to its status and code in one table, after golang/pkgsite's
// internal/derrors.
//
// It imports nothing of ours, so every package may return its errors.
package apperr

import "fmt"

// Kind is a class of failure. Each is an error too, so that
// errors.Is(err, apperr.NotFound) holds for any *Error of that kind.
type Kind int

// The kinds. The zero Kind is Internal: an error that says nothing else is
// a fault of the service.
const (
	// Internal is a fault of the service (a bug, a deployment mistake):
	// not the caller's to fix, and not worth retrying.
	Internal Kind = iota
	// Invalid: a field or parameter is wrong (Field names it).
	Invalid
	// AlreadyExists: a value unique in the organisation is taken
	// (ExistingID names the record that holds it).
	AlreadyExists
	// NotFound: no such record in the caller's organisation.
	NotFound
	// Conflict: the record's state does not allow the request (the
	// message says why and what to do).
	Conflict
	// ConcurrentChange: other requests were changing the same records and
	// nothing was written; the request may succeed as sent.
	ConcurrentChange
	// BudgetExhausted: the organisation's budget of an operation (its
	// replays of the hour) is spent until RetryAfter.
	BudgetExhausted
	// TooLarge: what was sent, or asked for, exceeds a limit.
	TooLarge
	// Unavailable: a dependency (the store) was throttled or failed on
	// its side; nothing was written and the request may be retried.
	Unavailable
)

var kindNames = [...]string{
	Internal:         "internal error",
	Invalid:          "invalid",
	AlreadyExists:    "already exists",
	NotFound:         "not found",
	Conflict:         "conflict",
	ConcurrentChange: "concurrent change",
	BudgetExhausted:  "budget exhausted",
	TooLarge:         "too large",
	Unavailable:      "unavailable",
}

// Kinds lists every kind (tests check that each has its answer).
var Kinds = []Kind{Internal, Invalid, AlreadyExists, NotFound, Conflict, ConcurrentChange, BudgetExhausted, TooLarge, Unavailable}

func (k Kind) Error() string {
	if k >= 0 && int(k) < len(kindNames) {
		return "apperr: " + kindNames[k]
	}
	return fmt.Sprintf("apperr: kind %d", int(k))
}

// Error is a domain error: its kind, and a message the caller may read
// (it names no internals).
type Error struct {
	Kind    Kind
	Message string
	// Field is the field or parameter at fault (Invalid, AlreadyExists).
	Field string
	// ExistingID is the record that holds a unique value (AlreadyExists).
	ExistingID string
	// RetryAfter, in seconds, is when the request may succeed as sent
	// (0: not said).
	RetryAfter int
	// Problems lists every problem of an Invalid request when there are
	// several (the first is Field's); Total counts them when Problems
	// holds only the first of them.
	Problems []Problem
	Total    int
}

// Problem is one invalid field of a request.
type Problem struct{ Field, Message string }

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Kind.Error(), e.Field, e.Message)
	}
	return e.Kind.Error() + ": " + e.Message
}

// Is makes an Error its Kind for errors.Is.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// New returns an error of kind with a message.
func New(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Invalidf returns an Invalid error on field.
func Invalidf(field, format string, args ...any) *Error {
	return &Error{Kind: Invalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// AlreadyExistsf returns an AlreadyExists error on field, whose value
// record existing holds.
func AlreadyExistsf(field, existing, format string, args ...any) *Error {
	return &Error{Kind: AlreadyExists, Field: field, ExistingID: existing, Message: fmt.Sprintf(format, args...)}
}

// Missing returns the NotFound error of a record: "<what> not found".
// Ids of other organisations and malformed ids answer the same.
func Missing(what string) *Error {
	return &Error{Kind: NotFound, Message: what + " not found"}
}

// Conflictf returns a Conflict error.
func Conflictf(format string, args ...any) *Error {
	return New(Conflict, format, args...)
}

// After sets RetryAfter (seconds) and returns e.
func (e *Error) After(seconds int) *Error {
	e.RetryAfter = seconds
	return e
}
