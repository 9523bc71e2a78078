package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/report"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
	"github.com/practice-api/practice-api/shared/timeentry"
)

// Each family's Lambda wiring, built from the environment the stack gives
// it, answers API Gateway HTTP API (v2) events through the adapter.
func TestFamilyLambdasServeV2Events(t *testing.T) {
	db := storetest.NewDB(t)
	t.Setenv("TABLE_NAME", db.Table)
	t.Setenv("DYNAMODB_ENDPOINT", storetest.Endpoint())
	t.Setenv("RATE_LIMIT_PER_MINUTE", "60")
	ctx := context.Background()
	org, tok, err := seed.Demo(ctx, db, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	builds := map[string]app.Build{
		routes.Matters:     func(db *store.DB) httpapi.Handlers { return matter.Handlers(matter.NewStore(db)) },
		routes.Parties:     func(db *store.DB) httpapi.Handlers { return party.Handlers(party.NewStore(db)) },
		routes.TimeEntries: func(db *store.DB) httpapi.Handlers { return timeentry.Handlers(timeentry.NewStore(db)) },
		routes.Invoices:    func(db *store.DB) httpapi.Handlers { return billing.Handlers(billing.NewStore(db)) },
		routes.Documents:   func(db *store.DB) httpapi.Handlers { return document.Handlers(document.NewStore(db)) },
		routes.Reports:     func(db *store.DB) httpapi.Handlers { return report.Handlers(report.NewStore(db)) },
	}
	invoke := func(h http.Handler, method, path, body string) (int, map[string]string, map[string]any) {
		t.Helper()
		resp, err := httpadapter.NewV2(h).ProxyWithContext(ctx, events.APIGatewayV2HTTPRequest{
			Version: "2.0", RouteKey: method + " " + path, RawPath: path, RawQueryString: "per_page=2",
			Headers:        map[string]string{"authorization": "Bearer " + tok.String(), "idempotency-key": "k-" + path},
			Body:           body,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var decoded map[string]any
		if err := json.Unmarshal([]byte(resp.Body), &decoded); err != nil {
			t.Fatalf("%s: body %q", path, resp.Body)
		}
		return resp.StatusCode, resp.Headers, decoded
	}
	firstID := map[string]string{} // list path -> an id it returned
	for _, rt := range routes.Table {
		build, ok := builds[rt.Family]
		if !ok {
			t.Fatalf("family %s has no Lambda wiring in this test", rt.Family)
		}
		t.Run(rt.Name, func(t *testing.T) {
			h, err := app.FamilyHandler(ctx, rt.Family, build)
			if err != nil {
				t.Fatal(err)
			}
			path := routes.Prefix + rt.Path
			if i := strings.Index(path, "/{"); i >= 0 {
				path = path[:i] + "/" + firstID[path[:i]]
				if rt.Name == "reports.get" {
					path = path[:i] + "/wip"
				}
			}
			if rt.Method == "POST" {
				// An empty object reaches the family's own validation: a 422
				// on a body field proves the route is wired to its handler.
				status, _, body := invoke(h, rt.Method, path, "{}")
				if status != 422 || body["field"] == "Idempotency-Key" || body["field"] == nil {
					t.Fatalf("%s: %d %v", path, status, body)
				}
				return
			}
			status, headers, body := invoke(h, rt.Method, path, "")
			if status != 200 || headers["X-Ratelimit-Limit"] != "60" {
				t.Fatalf("%s: %d %v %v", path, status, headers, body)
			}
			if list, ok := body["data"].([]any); ok {
				if len(list) == 0 {
					t.Fatalf("%s: empty for org %s", path, org)
				}
				firstID[path] = list[0].(map[string]any)["id"].(string)
			}
		})
	}
	if _, err := app.FamilyHandler(ctx, routes.Matters, builds[routes.Parties]); err == nil {
		t.Fatal("a family wired with another family's handlers was accepted")
	}
}
