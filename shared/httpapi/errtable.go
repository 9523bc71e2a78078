package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/store"
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
// and store code return apperr kinds (or store errors classed by
// storeCodes below), and only this table knows their statuses and codes.
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

// storeCodes classes DynamoDB's error codes (and a cancelled
// transaction's reason codes): what the service may retry, and what is a
// fault of ours. A code not listed is classed by its side: a server fault
// (5xx) is Unavailable, anything else Internal.
//
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html
// lists which errors "are OK to retry"; the API's own TransactWriteItems
// page lists the cancellation reasons.
var storeCodes = map[string]apperr.Kind{
	// Throttling and the service's own failures: nothing was written, the
	// same request can succeed in a moment.
	"ProvisionedThroughputExceededException": apperr.Unavailable,
	"ThrottlingException":                    apperr.Unavailable,
	"RequestLimitExceeded":                   apperr.Unavailable,
	"TransactionConflictException":           apperr.Unavailable,
	"TransactionInProgressException":         apperr.Unavailable,
	"ReplicatedWriteConflictException":       apperr.Unavailable,
	"InternalServerError":                    apperr.Unavailable,
	"ServiceUnavailable":                     apperr.Unavailable,
	"RequestTimeout":                         apperr.Unavailable,
	"RequestTimeoutException":                apperr.Unavailable,
	// A condition that failed where the code did not expect one: the
	// records changed under the request, which may succeed when sent
	// again (as before this table: no answer the API gave changes).
	"ConditionalCheckFailedException": apperr.Unavailable,
	// A cancelled transaction's reasons.
	"ThrottlingError":                 apperr.Unavailable,
	"ProvisionedThroughputExceeded":   apperr.Unavailable,
	"TransactionConflict":             apperr.Unavailable,
	"ConditionalCheckFailed":          apperr.Unavailable,
	"ValidationError":                 apperr.Internal,
	"ItemCollectionSizeLimitExceeded": apperr.Internal,
	// Ours to fix, not the caller's to retry: the function's role may not
	// make the call (a deploy that lost a permission, a KMS key policy),
	// the call is malformed (a bug), the table or index is missing (a
	// deployment pointed at the wrong table).
	"AccessDeniedException":                    apperr.Internal,
	"UnrecognizedClientException":              apperr.Internal,
	"MissingAuthenticationTokenException":      apperr.Internal,
	"InvalidSignatureException":                apperr.Internal,
	"IncompleteSignature":                      apperr.Internal,
	"ValidationException":                      apperr.Internal,
	"SerializationException":                   apperr.Internal,
	"ResourceNotFoundException":                apperr.Internal,
	"IndexNotFoundException":                   apperr.Internal,
	"ItemCollectionSizeLimitExceededException": apperr.Internal,
	"IdempotentParameterMismatchException":     apperr.Internal,
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

// storeKind classes an error that is no domain error: a store call's.
func storeKind(err error) apperr.Kind {
	if errors.Is(err, store.ErrTxConflict) {
		// The store's own class of a lost transaction: nothing written.
		return apperr.Unavailable
	}
	var tce *ddbtypes.TransactionCanceledException
	if errors.As(err, &tce) {
		// Retry when any reason is a retryable one (the others then
		// only failed with it); otherwise the transaction was refused.
		kind := apperr.Internal
		for _, r := range tce.CancellationReasons {
			if r.Code != nil && storeCodes[*r.Code] == apperr.Unavailable {
				kind = apperr.Unavailable
			}
		}
		return kind
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		if kind, ok := storeCodes[api.ErrorCode()]; ok {
			return kind
		}
		var resp *awshttp.ResponseError
		if api.ErrorFault() == smithy.FaultServer || errors.As(err, &resp) && resp.HTTPStatusCode() >= 500 {
			return apperr.Unavailable
		}
		return apperr.Internal
	}
	var invalid smithy.InvalidParamsError
	var ser *smithy.SerializationError
	if errors.As(err, &invalid) || errors.As(err, &ser) {
		return apperr.Internal // the SDK refused the call before sending it: a bug
	}
	var resp *awshttp.ResponseError
	var op *smithy.OperationError
	switch {
	case errors.As(err, &resp) && resp.HTTPStatusCode() != 0:
		// An answer without a code the SDK could read.
		if resp.HTTPStatusCode() >= 500 {
			return apperr.Unavailable
		}
		return apperr.Internal
	case errors.As(err, &op):
		// No answer: the connection failed, or the call's deadline
		// passed (the SDK's error then holds a response of status 0).
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
