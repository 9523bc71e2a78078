package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/httpapi"
)

// TestStoreFaultsAnswerByTheirKind: parallel clients, each its own
// organisation, whose store calls the engine answers with one fault each
// (or none). What no retry mends (a denied call, a malformed one, a
// missing table) is a 500 without Retry-After; throttling and the
// store's own failures are a 503 with Retry-After. Either way nothing
// was written and the Idempotency-Key is unused: once the fault is gone,
// the same create succeeds as new.
func TestStoreFaultsAnswerByTheirKind(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	faults := []struct {
		name       string
		err        error // nil: the client's calls pass
		status     int
		code       string
		retryAfter string
	}{
		{"none", nil, 0, "", ""},
		{"AccessDeniedException", apitest.StoreError(400, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "User: arn:aws:sts::1:assumed-role/matters is not authorized to perform: dynamodb:Query"}), 500, "internal_error", ""},
		{"ValidationException", apitest.StoreError(400, &smithy.GenericAPIError{Code: "ValidationException", Message: "One or more parameter values were invalid"}), 500, "internal_error", ""},
		{"ResourceNotFoundException", apitest.StoreError(400, &ddbtypes.ResourceNotFoundException{Message: aws.String("Requested resource not found")}), 500, "internal_error", ""},
		{"ThrottlingException", apitest.StoreError(400, &ddbtypes.ThrottlingException{Message: aws.String("Rate of requests exceeds the allowed throughput.")}), 503, "service_unavailable", "1"},
		{"ProvisionedThroughputExceededException", apitest.StoreError(400, &ddbtypes.ProvisionedThroughputExceededException{}), 503, "service_unavailable", "1"},
		{"InternalServerError", apitest.StoreError(500, &ddbtypes.InternalServerError{}), 503, "service_unavailable", "1"},
	}
	type client struct {
		org, key string
		fault    int
	}
	var clients []client
	byOrg := map[string]error{}
	for i := range 2 * len(faults) {
		c := client{org: e.Org(fmt.Sprintf("Faults %d", i)), fault: i % len(faults)}
		c.key = e.Key(c.org)
		byOrg[c.org] = faults[c.fault].err
		clients = append(clients, c)
	}
	var mu sync.Mutex
	e.Faults.Answer(func(ctx context.Context, _ any) error {
		mu.Lock()
		defer mu.Unlock()
		return byOrg[httpapi.OrgID(ctx)]
	})
	body := func(i int) string { return fmt.Sprintf(`{"name":"Fejl %d ApS","cvr":"%08d"}`, i, 10000000+i) }
	t.Run("faulted", func(t *testing.T) {
		for i, c := range clients {
			f := faults[c.fault]
			t.Run(fmt.Sprintf("%d %s", i, f.name), func(t *testing.T) {
				t.Parallel()
				e := e.For(t)
				for _, r := range []apitest.Response{
					e.Post("/api/v1/companies", c.key, fmt.Sprintf("co-%d", i), body(i)),
					e.Get("/api/v1/matters", c.key),
				} {
					if f.err == nil {
						if r.Status != http.StatusOK && r.Status != http.StatusCreated {
							t.Errorf("no fault: %d %s", r.Status, r.Raw)
						}
						continue
					}
					if r.Status != f.status || r.Body["code"] != f.code || r.Header.Get("Retry-After") != f.retryAfter {
						t.Errorf("%s: %d %s, Retry-After %q; want %d %s, Retry-After %q", f.name, r.Status, r.Raw, r.Header.Get("Retry-After"), f.status, f.code, f.retryAfter)
					}
				}
			})
		}
	})
	e.Faults.Answer(nil)
	for i, c := range clients {
		r := e.Post("/api/v1/companies", c.key, fmt.Sprintf("co-%d", i), body(i))
		want := http.StatusCreated // nothing was written: the key is unused
		if faults[c.fault].err == nil {
			want = http.StatusOK // the first answer, replayed
		}
		if r.Status != want {
			t.Errorf("client %d (%s) sent again: %d %s, want %d", i, faults[c.fault].name, r.Status, r.Raw, want)
		}
	}
}
