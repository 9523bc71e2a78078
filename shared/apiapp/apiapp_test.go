package apiapp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/families"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/lambdahttp"
	"github.com/practice-api/practice-api/shared/openapi"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store/storetest"
	"github.com/practice-api/practice-api/shared/webhook"
)

// Each family's Lambda wiring, built from the environment the stack gives
// it, answers API Gateway HTTP API (v2) events through the adapter.
func TestFamilyLambdasServeV2Events(t *testing.T) {
	db := storetest.NewDB(t)
	cfg := settings(t, "TABLE_NAME", db.Table, "DYNAMODB_ENDPOINT", storetest.Endpoint(t), "RATE_LIMIT_PER_MINUTE", "60")
	ctx := context.Background()
	org, tok, err := seed.Demo(ctx, db, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	d := &webhook.Deliverer{Store: webhook.NewStore(db, false), Queue: queue.NewMemory(time.Minute)}
	builds := families.Builds(d)
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
		if rt.Public {
			continue // TestPublicLambdaServesTheDocument
		}
		build, ok := builds[rt.Family]
		if !ok {
			t.Fatalf("family %s has no Lambda wiring in this test", rt.Family)
		}
		t.Run(rt.Name, func(t *testing.T) {
			h, err := apiapp.FamilyHandler(ctx, cfg, slog.Default(), rt.Family, apiapp.On(build))
			if err != nil {
				t.Fatal(err)
			}
			// Wildcards take an id the family's list returned, or, where the
			// demo organisation has none (webhook endpoints), an absent one.
			path := routes.Prefix + rt.Path
			for _, w := range []string{"{matter}", "{client}", "{person}", "{company}", "{invoice}", "{id}", "{delivery}"} {
				if i := strings.Index(path, "/"+w); i >= 0 {
					id := firstID[path[:i]]
					if id == "" {
						id = "00000000-0000-4000-8000-000000000000"
					}
					path = strings.Replace(path, w, id, 1)
				}
			}
			path = strings.Replace(path, "{type}", "wip", 1)
			body := ""
			if rt.Method == "POST" || rt.Method == "PATCH" {
				body = "{}"
			}
			status, headers, resp := invoke(h, rt.Method, path, body)
			// The family's own handler answered: the router's fallbacks say
			// "no such endpoint" or "not allowed".
			if msg, _ := resp["message"].(string); strings.HasPrefix(msg, "no such endpoint") || strings.Contains(msg, "is not allowed here") || headers["X-Ratelimit-Limit"] != "60" {
				t.Fatalf("%s %s did not reach its handler: %d %v", rt.Method, path, status, resp)
			}
			switch {
			case body == "{}" && strings.Contains(path, "00000000-0000-4000-8000-000000000000"):
				if status != 404 {
					t.Fatalf("%s %s: %d %v", rt.Method, path, status, resp)
				}
			case body == "{}":
				// An empty object reaches the family's own validation.
				if status != 422 || resp["field"] == "Idempotency-Key" || resp["field"] == nil {
					t.Fatalf("%s %s: %d %v", rt.Method, path, status, resp)
				}
			case strings.Contains(path, "00000000-0000-4000-8000-000000000000"):
				if status != 404 {
					t.Fatalf("%s %s: %d %v", rt.Method, path, status, resp)
				}
			default:
				if status != 200 {
					t.Fatalf("%s %s: %d %v", rt.Method, path, status, resp)
				}
				if list, ok := resp["data"].([]any); ok && len(list) > 0 {
					firstID[path] = list[0].(map[string]any)["id"].(string)
				} else if ok && rt.Family != routes.Webhooks {
					t.Fatalf("%s: empty for the demo organisation %s", path, org)
				}
			}
		})
	}
	if _, err := apiapp.FamilyHandler(ctx, cfg, slog.Default(), routes.Matters, apiapp.On(builds[routes.Parties])); err == nil {
		t.Fatal("a family wired with another family's handlers was accepted")
	}
}

// The meta Lambda answers without a key and without a store, with the
// deprecation headers its stage configures.
func TestPublicLambdaServesTheDocument(t *testing.T) {
	t.Parallel()
	cfg := settings(t, "TABLE_NAME", "no-such-table", "DYNAMODB_ENDPOINT", "http://127.0.0.1:1", "API_DEPRECATED_SINCE", "2027-01-01T00:00:00Z")
	h, err := lambdahttp.PublicHandler(cfg, slog.Default(), routes.Meta, openapi.Handlers())
	if err != nil {
		t.Fatal(err)
	}
	path := routes.Prefix + "/openapi.json"
	resp, err := httpadapter.NewV2(h).ProxyWithContext(context.Background(), events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "GET " + path, RawPath: path,
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Body != string(openapi.Document) || resp.Headers["Deprecation"] != "@1798761600" {
		t.Fatalf("%d %v %.80q", resp.StatusCode, resp.Headers, resp.Body)
	}
	if _, ok := resp.Headers["X-Ratelimit-Limit"]; ok {
		t.Fatal("the public document is counted against a rate limit")
	}
}

func TestDeprecationFromSettings(t *testing.T) {
	db := storetest.NewDB(t)
	kv := []string{"TABLE_NAME", db.Table, "DYNAMODB_ENDPOINT", storetest.Endpoint(t), "API_DEPRECATED_SINCE", "2027-01-01T00:00:00Z"}
	if _, err := config.Load(lookup(append(kv, "API_SUNSET", "2027-03-01T00:00:00Z")...)); err == nil || !strings.Contains(err.Error(), "six months") {
		t.Fatalf("a sunset under six months: %v", err)
	}
	env, err := apiapp.Open(context.Background(), settings(t, append(kv, "API_SUNSET", "2027-07-01T00:00:00Z")...), slog.Default())
	if err != nil || env.Edge.Deprecation == nil || env.Edge.Deprecation.Sunset.Month() != time.July {
		t.Fatalf("%v %+v", err, env)
	}
}

// lookup answers from name, value pairs, as os.LookupEnv would.
func lookup(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// settings is the Config of an environment of name, value pairs.
func settings(t *testing.T, kv ...string) config.Config {
	t.Helper()
	cfg, err := config.Load(lookup(kv...))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestLinksNameTheDomainTheGatewaySays: without PUBLIC_BASE_URL, links.next
// is built from API Gateway's request context (its domain name, never the
// client's Host header) and the scheme and port of the headers it adds:
// https://<domain> on AWS, http://127.0.0.1:<port> behind localcloud's
// gateway. PUBLIC_BASE_URL, when set, wins.
func TestLinksNameTheDomainTheGatewaySays(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := context.Background()
	_, tok, err := seed.Demo(ctx, db, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	path := routes.Prefix + "/matters"
	next := func(cfg config.Config, domain string, headers map[string]string) string {
		t.Helper()
		h, err := apiapp.FamilyHandler(ctx, cfg, slog.Default(), routes.Matters, apiapp.On(families.Builds(nil)[routes.Matters]))
		if err != nil {
			t.Fatal(err)
		}
		headers["authorization"] = "Bearer " + tok.String()
		headers["host"] = "evil.example"
		resp, err := httpadapter.NewV2(h).ProxyWithContext(ctx, events.APIGatewayV2HTTPRequest{
			Version: "2.0", RouteKey: "GET " + path, RawPath: path, RawQueryString: "per_page=1", Headers: headers,
			RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: domain,
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Links struct {
				Next string `json:"next"`
			} `json:"links"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, resp.Body)
		}
		return body.Links.Next
	}
	kv := []string{"TABLE_NAME", db.Table, "DYNAMODB_ENDPOINT", storetest.Endpoint(t)}
	plain := settings(t, kv...)
	for _, c := range []struct {
		domain  string
		headers map[string]string
		want    string
	}{
		{"abc123.execute-api.eu-north-1.amazonaws.com", map[string]string{"x-forwarded-proto": "https", "x-forwarded-port": "443"}, "https://abc123.execute-api.eu-north-1.amazonaws.com"},
		{"api.example.dk", map[string]string{}, "https://api.example.dk"},
		{"127.0.0.1", map[string]string{"x-forwarded-proto": "http", "x-forwarded-port": "8123"}, "http://127.0.0.1:8123"},
		{"127.0.0.1", map[string]string{"x-forwarded-proto": "http", "x-forwarded-port": "80"}, "http://127.0.0.1"},
		{"api.example.dk", map[string]string{"x-forwarded-proto": "gopher", "x-forwarded-port": "x"}, "https://api.example.dk"},
	} {
		if got := next(plain, c.domain, c.headers); !strings.HasPrefix(got, c.want+path+"?") {
			t.Errorf("%s %v: links.next %q, want %s%s?…", c.domain, c.headers, got, c.want, path)
		}
	}
	custom := settings(t, append(kv, "PUBLIC_BASE_URL", "https://api.example.dk")...)
	if got := next(custom, "abc123.execute-api.eu-north-1.amazonaws.com", map[string]string{}); !strings.HasPrefix(got, "https://api.example.dk"+path+"?") {
		t.Errorf("with PUBLIC_BASE_URL: %q", got)
	}
}
