package lambdahttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/store"
)

// TestAColdStartOnAnUnavailableStoreAnswers503: a function whose build
// met a store that did not answer answers each request 503 with
// Retry-After while the build still fails (ten clients at once), and
// serves once a build succeeds; a build that fails otherwise is a 500.
// (The API Gateway answer of a failed init would be a bare 500.)
func TestAColdStartOnAnUnavailableStoreAnswers503(t *testing.T) {
	outage := &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "GetItem", Err: context.DeadlineExceeded}
	var fails atomic.Int32
	fails.Store(3)
	c := &coldStart{cfg: config.Defaults(), log: slog.Default(), build: func(context.Context, config.Config, *slog.Logger) (http.Handler, error) {
		if fails.Add(-1) >= 0 {
			return nil, outage
		}
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }), nil
	}}
	for _, c := range []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"a deadline", outage, true},
		{"throttling", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "GetItem", Err: &ddbtypes.ProvisionedThroughputExceededException{}}, true},
		{"a setting", errors.New("DELIVERY_QUEUE_URL: not set"), false},
		{"a denied call", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "GetItem", Err: &smithy.GenericAPIError{Code: "AccessDeniedException"}}, false},
		{"a missing table", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "GetItem", Err: &ddbtypes.ResourceNotFoundException{}}, false},
	} {
		// As the store returns them: classed (store.Classify).
		if StoreUnavailable(store.Classify(c.err)) != c.unavailable {
			t.Errorf("%s: StoreUnavailable = %v", c.name, !c.unavailable)
		}
	}
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			c.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/people/010190-1234", nil))
			if rec.Code == 503 && rec.Header().Get("Retry-After") == "" {
				t.Error("a 503 without Retry-After")
			}
			mu.Lock()
			got[rec.Code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if got[503] != 3 || got[http.StatusTeapot] != 7 {
		t.Errorf("answers %v: want three 503s (the failed builds), then the function's own", got)
	}
	broken := &coldStart{cfg: config.Defaults(), log: slog.Default(), build: func(context.Context, config.Config, *slog.Logger) (http.Handler, error) {
		return nil, errors.New("no such index")
	}}
	rec := httptest.NewRecorder()
	broken.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/matters", nil))
	if rec.Code != 500 {
		t.Errorf("a build that fails otherwise: %d, want 500", rec.Code)
	}
}
