package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/store"
)

// TestClassify: the store's own errors carry their kind, domain errors and
// errors classed already pass as they are (httpapi's TestErrorTable runs
// every SDK error through Classify and checks the answer).
func TestClassify(t *testing.T) {
	t.Parallel()
	domain := apperr.Invalidf("name", "name is required")
	for _, c := range []struct {
		name string
		err  error
		want apperr.Kind
	}{
		{"a lost transaction", store.ErrTxConflict, apperr.Unavailable},
		{"a lost transaction, wrapped", fmt.Errorf("create: %w", store.ErrTxConflict), apperr.Unavailable},
		{"a cancellation by conflicts alone", &store.TxFailed{Conflicted: []int{0}}, apperr.Unavailable},
		{"a cancellation by a condition", &store.TxFailed{Failed: []int{1}, Conflicted: []int{0}}, apperr.Internal},
		{"a plain error", errors.New("boom"), apperr.Internal},
		{"no answer", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "Query", Err: context.DeadlineExceeded}, apperr.Unavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := store.Classify(c.err)
			if !errors.Is(got, c.want) || store.Kind(c.err) != c.want {
				t.Fatalf("Classify(%v) is not %v (Kind %v)", c.err, c.want, store.Kind(c.err))
			}
			if got.Error() != c.err.Error() || !errors.Is(got, c.err) {
				t.Fatalf("Classify changed the error: %v", got)
			}
		})
	}
	t.Run("a domain error passes", func(t *testing.T) {
		if got := store.Classify(domain); got != error(domain) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("nil", func(t *testing.T) {
		if store.Classify(nil) != nil {
			t.Fatal("nil classed")
		}
	})
	t.Run("ErrNotFound is NotFound and no domain error", func(t *testing.T) {
		var de *apperr.Error
		err := fmt.Errorf("get: %w", store.ErrNotFound)
		if !errors.Is(err, apperr.NotFound) || errors.As(err, &de) {
			t.Fatal("ErrNotFound")
		}
	})
}

// TestCallsAreClassed: a DB's client classes what its calls return (its
// middleware), here on failures that need no engine: no answer (nothing
// listens on the endpoint) and a call the SDK refuses to send.
func TestCallsAreClassed(t *testing.T) {
	t.Parallel()
	db, err := store.New(t.Context(), store.Config{TableName: "t", Endpoint: "http://127.0.0.1:1", Retryer: func() aws.Retryer { return aws.NopRetryer{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("no answer", func(t *testing.T) {
		_, err := db.Client.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: store.Key("a", "b")})
		var op *smithy.OperationError
		if !errors.Is(err, apperr.Unavailable) || !errors.As(err, &op) {
			t.Fatalf("%v: not Unavailable, or no longer the SDK's error", err)
		}
	})
	t.Run("refused by the SDK", func(t *testing.T) {
		_, err := db.Client.GetItem(t.Context(), &dynamodb.GetItemInput{})
		var invalid smithy.InvalidParamsError
		if !errors.Is(err, apperr.Internal) || errors.Is(err, apperr.Unavailable) || !errors.As(err, &invalid) {
			t.Fatalf("%v: not Internal", err)
		}
	})
}

// TestStoreCodesAreTheService: a store failure is the service's,
// Unavailable or Internal, never a refusal of the caller's.
func TestStoreCodesAreTheService(t *testing.T) {
	t.Parallel()
	for code, kind := range store.StoreCodes() {
		if kind != apperr.Unavailable && kind != apperr.Internal {
			t.Errorf("store code %s is %v", code, kind)
		}
	}
}
