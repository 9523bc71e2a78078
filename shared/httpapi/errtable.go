package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/practice-api/practice-api/shared/apperr"
)

// answer is how one kind of failure is answered.
type answer struct {
	Status int
	Code   Code
	// RetryAfter (seconds) is sent when the error names none itself.
	RetryAfter int
	// Log, when set, is the error line logged with the cause: the
	// service's own failures, which the caller cannot see.
	Log string
}

// answers is THE table from a kind of failure to its HTTP answer: domain
// and store code return apperr kinds (store errors are classed by the
// store, store.Classify), and only this table knows their statuses and codes.
// Only Unavailable (throttling, the store's own failures) says "retry";
// Internal (a bug, a deployment mistake: a denied or malformed call, a
// table that is missing) is a 500 that no retry mends.
var answers = map[apperr.Kind]answer{
	apperr.Invalid:          {Status: http.StatusUnprocessableEntity, Code: CodeInvalidRequest},
	apperr.AlreadyExists:    {Status: http.StatusUnprocessableEntity, Code: CodeAlreadyExists},
	apperr.NotFound:         {Status: http.StatusNotFound, Code: CodeNotFound},
	apperr.Conflict:         {Status: http.StatusConflict, Code: CodeConflict},
	apperr.ConcurrentChange: {Status: http.StatusConflict, Code: CodeConcurrentChange, RetryAfter: 1},
	apperr.BudgetExhausted:  {Status: http.StatusTooManyRequests, Code: CodeReplayBudgetExhausted, RetryAfter: 1},
	apperr.TooLarge:         {Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge},
	apperr.Unavailable:      {Status: http.StatusServiceUnavailable, Code: CodeServiceUnavailable, RetryAfter: 1, Log: "store unavailable"},
	apperr.Internal:         {Status: http.StatusInternalServerError, Code: CodeInternalError, Log: "internal error"},
}

// classify returns the domain error err is (or carries), or the kind of
// store failure it is: the one switch before the table.
func classify(err error) *apperr.Error {
	var de *apperr.Error
	if errors.As(err, &de) {
		return de
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &apperr.Error{Kind: apperr.TooLarge, Message: fmt.Sprintf("request body exceeds the limit of %d bytes", tooBig.Limit)}
	}
	return &apperr.Error{Kind: storeKind(err)}
}

// storeKind classes an error that is no domain error: a store call's,
// which the store classed when it failed (store.Classify: throttling and
// the service's own failures say errors.Is(err, apperr.Unavailable)).
// Anything else is a fault of the service.
func storeKind(err error) apperr.Kind {
	if errors.Is(err, apperr.Unavailable) {
		return apperr.Unavailable
	}
	return apperr.Internal
}

// toError is the answer to err: an edge answer as it is, anything else
// through classify and the table.
func toError(err error) (e *Error, log string) {
	if errors.As(err, &e) {
		return e, ""
	}
	de := classify(err)
	a, ok := answers[de.Kind]
	if !ok {
		a = answers[apperr.Internal]
	}
	e = &Error{Status: a.Status, Code: a.Code, Message: de.Message, Field: de.Field, ExistingID: de.ExistingID, RetryAfter: de.RetryAfter}
	if e.RetryAfter == 0 {
		e.RetryAfter = a.RetryAfter
	}
	switch {
	case len(de.Problems) > 0:
		e.Errors, e.ErrorsTotal = make([]FieldError, len(de.Problems)), de.Total
		for i, p := range de.Problems {
			e.Errors[i] = FieldError{Field: p.Field, Message: p.Message}
		}
	case de.Field != "":
		e.Errors = []FieldError{{Field: de.Field, Message: de.Message}}
	}
	return e, a.Log
}

// AnswerOf is the answer WriteError gives err, before redaction (and,
// for the service's own failures, before their fixed message): tests of
// domain code check a refusal's status, code, field and message with it.
func AnswerOf(err error) *Error {
	e, _ := toError(err)
	return e
}
