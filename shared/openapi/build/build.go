// Package build writes the OpenAPI 3.1 document of the API from the route
// table (paths, methods, scopes), the domain packages' own values (states,
// event types, limits) and the descriptions kept here. Its output is
// shared/openapi/openapi.json, which the API serves; a test fails when the
// committed file differs from what Document builds, or when a route has no
// description. Regenerate with `make openapi`.
package build

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/modroot"
)

// Version is the document's info.version: the API's major version (the
// path's v1) and the document's own revision.
const Version = "1.0.0"

// Document returns the OpenAPI document as indented JSON.
func Document() ([]byte, error) {
	paths, err := buildPaths()
	if err != nil {
		return nil, err
	}
	hooks, comps := webhooks(), M{
		"securitySchemes": M{"bearerAuth": M{
			"type": "http", "scheme": "bearer", "bearerFormat": "pa_<live|test>_<client>_<secret id>_<secret>",
			"description": "`Authorization: Bearer <API key>`; no other place (a key in the query string is refused). " +
				"Each operation requires exactly one scope, named in its description and in `x-required-scope`.",
		}},
		"schemas":    schemas(),
		"parameters": parameters(),
		"headers":    headers(),
		"responses":  responses(),
	}
	for _, part := range []M{paths, hooks, comps} {
		bound(part)
	}
	// Top-level keys in the customary order (encoding/json sorts map keys).
	top := []struct {
		key string
		val any
	}{
		{"openapi", "3.1.0"},
		{"info", info()},
		{"jsonSchemaDialect", "https://spec.openapis.org/oas/3.1/dialect/base"},
		{"servers", []M{
			{"url": routes.Prefix, "description": "The deployment that served this document, production or another stage (relative to its origin).", "x-internal": false},
			{"url": "http://127.0.0.1:8080" + routes.Prefix, "description": "Local devserver (`make run`), on loopback.", "x-internal": true},
		}},
		{"security", []M{{"bearerAuth": []string{}}}},
		{"tags", tags()},
		{"paths", paths},
		{"webhooks", hooks},
		{"components", comps},
	}
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i, kv := range top {
		v, err := json.MarshalIndent(kv.val, "  ", "  ")
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&buf, "  %q: %s", kv.key, v)
		if i < len(top)-1 {
			buf.WriteString(",")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

func info() M {
	return M{
		"title":   "Practice API",
		"contact": M{"name": "Practice API integrations", "url": "https://github.com/practice-api/practice-api/issues"},
		"version": Version,
		"summary": "Organisation-scoped, read-mostly API of the practice-management system.",
		"description": strings.Join([]string{
			"Matters, clients and their person/company parties, time entries, invoices, document metadata and reports of one organisation; a create-only import path; signed outbound webhooks; an event feed to catch up from.",
			"",
			"## Quickstart",
			"",
			"1. **A key.** Your administrator mints one with the scopes you need (`scripts/admin key create`); on a local server `make run` prints a demo key with every scope.",
			"2. **The first call.** Every operation below has samples in curl, Go, Python and Node, and *Test Request* sends it from this page with your key.",
			"",
			"```sh",
			`KEY=pa_test_…   # your key`,
			`curl -H "Authorization: Bearer $KEY" "` + routes.Prefix + `/matters?per_page=5"`,
			"```",
			"",
			"3. **An import.** Creates take an `Idempotency-Key`: send the same request again and nothing is created twice.",
			"",
			"```sh",
			`curl -X POST -H "Authorization: Bearer $KEY" -H "Idempotency-Key: crm-42" \`,
			`     -d '{"name":"Nordlys ApS","cvr":"12345678"}' "` + routes.Prefix + `/companies"`,
			"```",
			"",
			"4. **Events.** Subscribe with `POST /webhooks`, verify each delivery with a [receiver to copy](" + routes.Prefix + "/docs/receivers.html), and catch up from `GET /events` or any list's `updated_since` after a gap.",
			"5. **Errors.** Every error answer has a stable `code` to branch on: the [Errors](#description/errors-and-error-codes) section lists every code with its status and schema.",
			"",
			"## Guides",
			"",
			"- [Guide](" + routes.Prefix + "/docs/guide.html): first calls, bulk import, webhooks end to end, catching up after a gap.",
			"- [Behaviour reference](" + routes.Prefix + "/docs/api.html): every status, header, limit and choice, in detail.",
			"- [Webhook receivers](" + routes.Prefix + "/docs/receivers.html): verifiers in Go, Python and Node, tested against real deliveries.",
			"- The document itself: [openapi.json](" + routes.Prefix + "/openapi.json).",
			"",
			"## Authentication",
			"",
			"`Authorization: Bearer <API key>`. The key decides the organisation: no request names one, and another organisation's id behaves exactly like an absent one (404 on single reads, an empty page in filters). Each operation requires one scope (`x-required-scope`); a key without it gets 403 with `required_scope`.",
			"",
			"## Rate limits",
			"",
			"120 requests per minute per API client (all its secrets together) by default, in fixed clock minutes. Every authenticated response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (Unix seconds when the window ends) and the IETF draft's `RateLimit-Policy` and `RateLimit`; a 429 adds `Retry-After`.",
			"",
			"## Lists",
			"",
			"`{data, meta, links}`; `per_page` 1–100 (default 50); follow `links.next` (absolute, carrying the filters) until it is null. Filters combine with AND; unknown query parameters are ignored; an invalid filter value is 422. Every list takes `updated_since`.",
			"",
			"## Creates (imports)",
			"",
			"Order: company or person, then client engagement, then matter, then time entry. `Idempotency-Key` is required (at most 255 characters), scoped per endpoint and honoured 24 hours: the first success is 201, a replay with the same body 200 with `Idempotent-Replayed: true`, the same key with another body (or while the first request runs) 409. A failed request leaves the key unused. Bodies are JSON (a missing `Content-Type` is read as JSON) of at most 1 MiB (a larger body is 413 on any path, before anything else); unknown, derived and assigned fields are refused with 422, and null is the same as absent. **Money** is integer minor units (øre) with `currency`; decimals are refused, never rounded.",
			"",
			errorsSection(),
			"",
			"Single reads carry a strong `ETag`; `If-None-Match` answers 304 (still counted against the rate limit).",
			"",
			"## Versioning",
			"",
			"Additive changes (fields, endpoints, optional parameters) keep `/api/v1`: ignore unknown fields. A version due for removal announces it with `Deprecation` and `Sunset` (at least six months ahead) on every response.",
			"",
			"## Webhooks and the event feed",
			"",
			"See **Webhooks**: signed POSTs, at-least-once, unordered, up to 5 attempts (pauses 30 s, 2 min, 8 min, 30 min); 20 consecutive failed deliveries (events whose 5 attempts all failed) turn an endpoint off (and raise `webhook_endpoint.disabled`). Verify `Service-Signature` (`t=<unix>,v1=<hex HMAC-SHA256 of \"{t}.{raw body}\">`) in constant time and reject timestamps more than 300 s from your clock, or verify the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with any Standard Webhooks library, with the secret as shown. Every delivery carries the event's `sequence`: its place in the organisation's feed, `GET /events?after=<sequence>` (30 days). `POST /webhooks/{id}/replay` queues a window of the feed to an endpoint again; `PATCH /webhooks/{id}` with `is_active: true` and `replay_since` turns a disabled endpoint back on with what it missed.",
		}, "\n"),
	}
}

// errorsSection is the introduction's Errors section: every error code
// with its status, the schema that carries it and what it means
// (httpapi.Codes), linked from the quickstart and found by the page's
// search.
func errorsSection() string {
	var b strings.Builder
	b.WriteString("## Errors and error codes\n\n" +
		"Every error answer is JSON with a stable `code` to branch on and a `message` to show (branch on the code, never on the message). " +
		"Codes are stable: new ones may be added, none is renamed or reused. Each status has an error schema of its own whose `code` lists only that status's codes, " +
		"so a client generated from this document narrows an error by its code (in TypeScript, `if (error.code === \"invalid_request\") error.field` compiles). " +
		"422 adds `field` and `errors` (every problem at once, and `existing_id` for `already_exists`); 403 adds `required_scope`. " +
		"A 500 is a bug: its message names the request id (`X-Request-Id`, on every response). " +
		"On AWS, API Gateway answers a few requests itself, with a body that has no `code` (`{\"message\":\"Too Many Requests\"}`): treat an error without a code as its status's kind.\n\n" +
		"| code | status | schema | meaning |\n|---|---|---|---|\n")
	for _, c := range httpapi.Codes {
		schema := "none (no operation takes the method)"
		if c.Status != http.StatusMethodNotAllowed {
			schema = "`" + errorSchemaOf(c.Status) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s |\n", c.Code, c.Status, schema, c.Meaning)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// receivers is the description's section of webhook receivers to copy:
// the files of docs/receivers as they are (a test runs each against real
// deliveries), read when the document is built.
func receivers() string {
	root, err := modroot.Find()
	if err != nil {
		panic(err)
	}
	dir := filepath.Join(root, "docs", "receivers")
	var b strings.Builder
	b.WriteString("## Receiving webhooks: verifiers to copy\n\n" +
		"The signing key is the endpoint's whole secret, `whsec_` prefix included, as shown once by `POST /webhooks` and `rotate-secret`. " +
		"Verify the raw bytes of the body (never re-serialised JSON), accept when any `v1` matches any secret you hold (during a rotation's grace period a delivery carries two, one per secret), " +
		"compare in constant time, reject a `t` more than 300 s from your clock, and deduplicate on the event id; where order matters, compare `sequence`s (each receiver marks an event `stale` when a later one of the same resource came first). " +
		"Each receiver below reads its secrets, one per line, from `WEBHOOK_SECRETS_FILE` on every request: to rotate, add the new secret on a second line, then drop the old one. " +
		"Locally, `make run` takes `http://127.0.0.1:<port>/…` endpoints, so these run without a certificate.\n")
	for _, f := range []struct{ title, file, lang string }{
		{"Go (the `signature` package of this module)", "go/main.go", "go"},
		{"Python 3 (standard library)", "receiver.py", "python"},
		{"Node.js (built-in `crypto` and `http`)", "receiver.mjs", "javascript"},
		{"Node.js on the Standard Webhooks library (`npm install standardwebhooks`)", "standard-webhooks/receiver.mjs", "javascript"},
	} {
		src, err := os.ReadFile(filepath.Join(dir, f.file))
		if err != nil {
			panic(fmt.Sprintf("docs/receivers/%s: %v", f.file, err))
		}
		fmt.Fprintf(&b, "\n### %s\n\n`docs/receivers/%s`\n\n```%s\n%s```\n", f.title, f.file, f.lang, src)
	}
	return b.String()
}

func tags() []M {
	return []M{
		{"name": "Matters", "description": "Cases."},
		{"name": "Parties", "description": "Client engagements and the people and companies behind them."},
		{"name": "Time entries", "description": "Logged time."},
		{"name": "Invoices", "description": "Bills; `lines` on the single read."},
		{"name": "Documents", "description": "The document register: metadata only."},
		{"name": "Reports", "description": "Computed from the organisation's own data."},
		{"name": "Webhook endpoints", "description": "Endpoints that receive signed event deliveries, their delivery log and the event feed. The events themselves are under **Webhooks**."},
		{"name": "Meta", "description": "This document."},
	}
}

var familyTag = map[string]string{
	routes.Matters: "Matters", routes.Parties: "Parties", routes.TimeEntries: "Time entries", routes.Invoices: "Invoices",
	routes.Documents: "Documents", routes.Reports: "Reports", routes.Webhooks: "Webhook endpoints", routes.Meta: "Meta",
}

// buildPaths documents every route of the table; a route without an
// operation here is an error, so the document cannot fall behind.
func buildPaths() (M, error) {
	specs := operations()
	paths := M{}
	for _, rt := range routes.Table {
		spec, ok := specs[rt.Name]
		if !ok {
			return nil, fmt.Errorf("route %s (%s %s) has no operation in shared/openapi/build", rt.Name, rt.Method, rt.Path)
		}
		delete(specs, rt.Name)
		for _, op := range spec(rt) {
			path := op.path
			if path == "" {
				path = rt.Path
			}
			item, _ := paths[path].(M)
			if item == nil {
				item = M{}
				paths[path] = item
			}
			item[strings.ToLower(rt.Method)] = op.render(rt)
		}
	}
	if len(specs) > 0 {
		var names []string
		for n := range specs {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("operations for routes that do not exist: %v", names)
	}
	return paths, nil
}
