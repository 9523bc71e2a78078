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

	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/shared/config"
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
	if !StoreUnavailable(outage) || StoreUnavailable(errors.New("DELIVERY_QUEUE_URL: not set")) {
		t.Fatal("StoreUnavailable tells the wrong errors apart")
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
