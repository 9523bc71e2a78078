package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/store"
)

// sdkError is err as the SDK returns an engine's answer of status: the
// operation's error around the response's, around the API error.
func sdkError(status int, err error) error {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}}
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "TransactWriteItems",
		Err: &awshttp.ResponseError{RequestID: "R1", ResponseError: &smithyhttp.ResponseError{Response: resp, Err: err}}}
}

// coded is an error code the SDK has no type for (AccessDeniedException
// is one: DynamoDB's model does not list it), as the SDK reads it.
func coded(code string) error { return &smithy.GenericAPIError{Code: code, Message: "from the engine"} }

// TestErrorTable: every kind of failure, domain or store, gets the status,
// code, fields and Retry-After of the one table; the service's own
// failures are logged and answered without their cause.
func TestErrorTable(t *testing.T) {
	t.Parallel()
	type want struct {
		status     int
		code       Code
		message    string // the whole message, or a prefix ending in "…"
		field      string
		existing   string
		retryAfter string
		logged     string
	}
	unavailable := want{status: 503, code: CodeServiceUnavailable, message: "the data store is temporarily unavailable; retry the request (with the same Idempotency-Key for a create); request id req-1", retryAfter: "1", logged: "store unavailable"}
	internal := want{status: 500, code: CodeInternalError, message: "internal error; quote request id req-1 to support", logged: "internal error"}
	for _, c := range []struct {
		name string
		err  error
		want want
	}{
		// The domain's errors.
		{"invalid", apperr.Invalidf("client_id", "no client with id %s exists", "c1"), want{status: 422, code: CodeInvalidRequest, message: "no client with id c1 exists", field: "client_id"}},
		{"invalid, wrapped", fmt.Errorf("create: %w", apperr.Invalidf("status", "not active")), want{status: 422, code: CodeInvalidRequest, message: "not active", field: "status"}},
		{"already exists", apperr.AlreadyExistsf("cvr", "co-1", "the CVR is held by company co-1"), want{status: 422, code: CodeAlreadyExists, message: "the CVR is held by company co-1", field: "cvr", existing: "co-1"}},
		{"not found", apperr.Missing("webhook endpoint"), want{status: 404, code: CodeNotFound, message: "webhook endpoint not found"}},
		{"conflict", apperr.Conflictf("the endpoint is disabled"), want{status: 409, code: CodeConflict, message: "the endpoint is disabled"}},
		{"conflict with a wait", apperr.Conflictf("a replay is running").After(30), want{status: 409, code: CodeConflict, message: "a replay is running", retryAfter: "30"}},
		{"concurrent change", apperr.New(apperr.ConcurrentChange, "retry the request"), want{status: 409, code: CodeConcurrentChange, message: "retry the request", retryAfter: "1"}},
		{"budget exhausted", apperr.New(apperr.BudgetExhausted, "replayed 100 events").After(1200), want{status: 429, code: CodeReplayBudgetExhausted, message: "replayed 100 events", retryAfter: "1200"}},
		{"body too large", &http.MaxBytesError{Limit: 1 << 20}, want{status: 413, code: CodePayloadTooLarge, message: "request body exceeds the limit of 1048576 bytes"}},
		{"internal kind hides its message", apperr.New(apperr.Internal, "table t1 has no GSI3"), internal},
		// The edge's own answers pass as they are.
		{"edge answer", &Error{Status: 401, Message: "the API key is unknown, revoked or expired"}, want{status: 401, code: CodeUnauthenticated, message: "the API key is unknown, revoked or expired"}},
		// Ours to fix: a 500, and no Retry-After.
		{"AccessDeniedException", sdkError(400, coded("AccessDeniedException")), internal},
		{"ValidationException", sdkError(400, coded("ValidationException")), internal},
		{"ResourceNotFoundException (table missing)", sdkError(400, &ddbtypes.ResourceNotFoundException{Message: aws.String("Requested resource not found")}), internal},
		{"UnrecognizedClientException", sdkError(400, coded("UnrecognizedClientException")), internal},
		{"an unknown client-side code", sdkError(400, coded("SomethingNewException")), internal},
		{"a cancellation by a malformed item", sdkError(400, &ddbtypes.TransactionCanceledException{CancellationReasons: []ddbtypes.CancellationReason{{Code: aws.String("None")}, {Code: aws.String("ValidationError")}}}), internal},
		{"the SDK refused the parameters", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "GetItem", Err: smithy.InvalidParamsError{Context: "GetItemInput"}}, internal},
		{"a plain error", errors.New("boom"), internal},
		{"a condition failure the code did not explain", &store.TxFailed{Failed: []int{1}}, internal},
		// Throttling and the store's own failures: 503 and Retry-After.
		{"ProvisionedThroughputExceededException", sdkError(400, &ddbtypes.ProvisionedThroughputExceededException{}), unavailable},
		{"ThrottlingException", sdkError(400, &ddbtypes.ThrottlingException{}), unavailable},
		{"RequestLimitExceeded", sdkError(400, &ddbtypes.RequestLimitExceeded{}), unavailable},
		{"TransactionConflictException", sdkError(400, &ddbtypes.TransactionConflictException{}), unavailable},
		{"a throttled cancellation", sdkError(400, &ddbtypes.TransactionCanceledException{CancellationReasons: []ddbtypes.CancellationReason{{Code: aws.String("None")}, {Code: aws.String("ThrottlingError")}}}), unavailable},
		{"the store's lost transaction", store.ErrTxConflict, unavailable},
		{"InternalServerError", sdkError(500, &ddbtypes.InternalServerError{}), unavailable},
		{"an unknown 5xx code", sdkError(503, coded("ServiceUnavailableException")), unavailable},
		{"a 5xx without a code", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "Query", Err: &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 502}}, Err: errors.New("bad gateway")}}}, unavailable},
		{"retries spent on throttling", sdkError(400, &retry.MaxAttemptsError{Attempt: 3, Err: &ddbtypes.ThrottlingException{}}), unavailable},
		{"the store call's deadline", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "Query", Err: fmt.Errorf("request send failed: %w", context.DeadlineExceeded)}, unavailable},
		{"the store call's deadline, as the SDK returns it", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "UpdateItem", Err: &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{}}, Err: &aws.RequestCanceledError{Err: context.DeadlineExceeded}}}}, unavailable},
		{"no connection", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "Query", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}, unavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			ctx := context.WithValue(context.WithValue(context.Background(), requestIDKey, "req-1"), errorLogKey, slog.New(slog.NewTextHandler(&logs, nil)))
			rec := httptest.NewRecorder()
			// As the store returns it: every store call's error is classed
			// (store.Classify; the edge links no SDK to class it).
			WriteError(rec, httptest.NewRequest("POST", "/api/v1/matters", nil).WithContext(ctx), store.Classify(c.err))
			var got Error
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			w := c.want
			if rec.Code != w.status || got.Code != w.code || got.Message != w.message || got.Field != w.field || got.ExistingID != w.existing {
				t.Errorf("got %d %s, want %d %+v", rec.Code, rec.Body, w.status, w)
			}
			if w.field != "" && (len(got.Errors) != 1 || got.Errors[0] != (FieldError{w.field, w.message})) {
				t.Errorf("errors %+v, want the one field", got.Errors)
			}
			if ra := rec.Header().Get("Retry-After"); ra != w.retryAfter {
				t.Errorf("Retry-After %q, want %q", ra, w.retryAfter)
			}
			if w.logged == "" && logs.Len() > 0 || w.logged != "" && !strings.Contains(logs.String(), "level=ERROR msg=\""+w.logged+"\"") {
				t.Errorf("logged %q, want %q", logs.String(), w.logged)
			}
			if w.logged != "" && strings.Contains(rec.Body.String(), "engine") {
				t.Errorf("the cause reached the caller: %s", rec.Body)
			}
			if refused := IsRefusal(c.err); refused != (w.status < 500) {
				t.Errorf("IsRefusal = %v for a %d", refused, w.status)
			}
		})
	}
}

// TestEveryKindHasItsAnswer: a kind added without its row would answer
// 500; and each row's code is documented (Codes) with the row's status.
func TestEveryKindHasItsAnswer(t *testing.T) {
	t.Parallel()
	documented := map[Code]int{}
	for _, c := range Codes {
		documented[c.Code] = c.Status
	}
	for _, k := range apperr.Kinds {
		t.Run(k.Error(), func(t *testing.T) {
			a, ok := answers[k]
			if !ok {
				t.Fatal("no answer")
			}
			if documented[a.Code] != a.Status {
				t.Errorf("%s answers %d; Codes says %d", a.Code, a.Status, documented[a.Code])
			}
		})
	}
}
