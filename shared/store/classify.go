package store

import (
	"context"
	"errors"
	"maps"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/practice-api/practice-api/shared/apperr"
)

// The store classes its failures, so that the edge (httpapi), which maps
// apperr kinds to answers, links no AWS SDK: every DynamoDB call of a DB
// fails with an error that is apperr.Unavailable (throttling, the
// service's own failures: nothing was written and the same request may
// succeed in a moment) or apperr.Internal (ours to fix) for errors.Is,
// and that still unwraps to the SDK's error for everything else.

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

// Kind classes a store call's error: Unavailable when the service may
// retry it (storeCodes, a server fault, no answer at all, a transaction
// lost to a concurrent one), Internal otherwise.
func Kind(err error) apperr.Kind {
	if errors.Is(err, ErrTxConflict) {
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

// Classify returns err classed by Kind: an error that is its kind for
// errors.Is (apperr.Unavailable or apperr.Internal) and unwraps to err.
// A domain error, or one classed already, is returned as it is; nil is
// nil. Every call of a DB's client is classed so (New adds it to the
// client's middleware); tests class the SDK errors they build with it.
func Classify(err error) error {
	var de *apperr.Error
	if err == nil || errors.As(err, &de) || errors.Is(err, apperr.Unavailable) || errors.Is(err, apperr.Internal) {
		return err
	}
	return &classified{kind: Kind(err), err: err}
}

// classified is a store error and its kind. Its message is its cause's.
type classified struct {
	kind apperr.Kind
	err  error
}

func (c *classified) Error() string { return c.err.Error() }
func (c *classified) Unwrap() error { return c.err }

// Is makes a classified error its kind.
func (c *classified) Is(target error) bool {
	k, ok := target.(apperr.Kind)
	return ok && k == c.kind
}

// ClassifyErrors is the client middleware that classes every failed call
// (New adds it to the DynamoDB client; the API's other clients, KMS and
// SQS of webhook endpoints, add it too, as their failures reach the edge):
// first in the Initialize step, so it sees the operation's last word
// (after the SDK's retries, input validation and any fault a test
// injects), inside the smithy.OperationError the client wraps around it.
func ClassifyErrors(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("practice-api/classify-errors",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			var de *apperr.Error
			if err == nil || errors.As(err, &de) || errors.Is(err, apperr.Unavailable) || errors.Is(err, apperr.Internal) {
				return out, md, err
			}
			// Classed as the caller will see it: inside the operation's
			// error, which the client adds after this step (an error
			// with no answer from the service is then "no answer").
			kind := Kind(&smithy.OperationError{ServiceID: "DynamoDB", Err: err})
			return out, md, &classified{kind: kind, err: err}
		}), middleware.Before)
}

// StoreCodes is a copy of the table of DynamoDB's codes and their kinds
// (for tests).
func StoreCodes() map[string]apperr.Kind { return maps.Clone(storeCodes) }
