package build

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/openapi"
	"github.com/practice-api/practice-api/shared/openapi/conformance"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/report"
)

var update = flag.Bool("update", false, "rewrite shared/openapi/openapi.json and openapi.json.gz")

// file is the document as integrators and tools (Spectral) read it; the
// API serves it from its gzipped copy (openapi.Document).
const file = "../openapi.json"

// TestDocumentIsCurrent keeps the served document equal to what the code
// describes: change a route or a description, then run make openapi.
func TestDocumentIsCurrent(t *testing.T) {
	t.Parallel()
	doc, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(file, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file+".gz", openapi.Gzip(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	plain, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, openapi.Document) || !bytes.Equal(doc, plain) {
		t.Fatal("shared/openapi/openapi.json or openapi.json.gz is stale: run make openapi and commit both")
	}
}

// TestDocumentIsValid loads the committed document as kin-openapi does and
// validates it (schemas, references, parameters, patterns). kin-openapi
// validates documents by OpenAPI 3.0's rules, where a nullable value is
// `nullable: true` rather than 3.1's type array with "null"; the two mean
// the same, so the check rewrites the one into the other first.
func TestDocumentIsValid(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	if n := nullableAs30(doc); n == 0 {
		t.Fatal("no nullable schema found: the rewrite sees nothing")
	}
	if err := doc.Validate(context.Background(), validation...); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}

	// kin-openapi does not know 3.1's top-level webhooks: validate them as
	// the paths of a document of their own, with the same components.
	hookDoc, err := conformance.LoadWebhooks(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(hookDoc.Paths.Map()); n != len(outbox.Types)+1 || hookDoc.Paths.Value("/"+string(outbox.WebhookTest)) == nil {
		t.Fatalf("%d webhooks documented; want the %d event types and %s", n, len(outbox.Types), outbox.WebhookTest)
	}
	nullableAs30(hookDoc)
	if err := hookDoc.Validate(context.Background(), validation...); err != nil {
		t.Fatalf("webhooks: %v", err)
	}
}

// validation: 3.1's additions to the document's top level and info are
// allowed, nothing else beyond 3.0; formats must be known ones.
var validation = []openapi3.ValidationOption{
	openapi3.AllowExtraSiblingFields("summary", "webhooks", "jsonSchemaDialect"),
	openapi3.EnableSchemaFormatValidation(),
}

// nullableAs30 rewrites 3.1's nullable type arrays into 3.0's nullable.
func nullableAs30(doc *openapi3.T) int {
	nullables := 0
	conformance.VisitSchemas(doc, func(s *openapi3.Schema) {
		if s.Type != nil && len(*s.Type) == 2 && s.Type.Includes(openapi3.TypeNull) {
			other := (*s.Type)[0]
			if other == openapi3.TypeNull {
				other = (*s.Type)[1]
			}
			s.Type, s.Nullable = &openapi3.Types{other}, true
			nullables++
		}
	})
	return nullables
}

// TestEveryRouteIsDocumented checks the committed document against the
// route table: each route's method and path, and its scope.
func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	ops := 0
	for _, rt := range routes.Table {
		paths := []string{rt.Path}
		if rt.Name == "reports.get" {
			for _, typ := range reportTypes() { // and {type} for the others
				paths = append(paths, "/reports/"+typ)
			}
		}
		for _, p := range paths {
			item := doc.Paths.Find(p)
			if item == nil || item.GetOperation(rt.Method) == nil {
				t.Errorf("%s %s is not in the document", rt.Method, p)
				continue
			}
			ops++
			op := item.GetOperation(rt.Method)
			if rt.Public {
				if op.Security == nil || len(*op.Security) != 0 {
					t.Errorf("%s %s: a public route must have security []", rt.Method, p)
				}
				continue
			}
			if got := op.Extensions["x-required-scope"]; got != rt.Scope {
				t.Errorf("%s %s: x-required-scope %v, want %s", rt.Method, p, got, rt.Scope)
			}
			if op.Security == nil || len(*op.Security) != 1 || len((*op.Security)[0]["bearerAuth"]) != 0 || !strings.Contains(op.Description, "Requires the scope `"+rt.Scope+"`.") {
				t.Errorf("%s %s: security %v, want bearerAuth with no scopes, and the scope %s in the description", rt.Method, p, op.Security, rt.Scope)
			}
		}
	}
	n := 0
	for _, item := range doc.Paths.Map() {
		n += len(item.Operations())
	}
	if n != ops {
		t.Errorf("the document has %d operations, the route table %d", n, ops)
	}
}

func reportTypes() []string { return report.Types }

// TestSubscribableTypesAreTheOnesListed: POST /webhooks names the types an
// endpoint may subscribe to, and says webhook.test is not one of them
// (subscribing to it answers 422).
func TestSubscribableTypesAreTheOnesListed(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	desc := doc.Paths.Value("/webhooks").Post.Description
	list, note, _ := strings.Cut(desc, " (`webhook.test`")
	for _, typ := range outbox.Types {
		if !strings.Contains(list, "`"+string(typ)+"`") {
			t.Errorf("POST /webhooks does not list %s", typ)
		}
	}
	if strings.Contains(list, string(outbox.WebhookTest)) || !strings.Contains(note, "cannot be subscribed to") {
		t.Fatalf("POST /webhooks lists webhook.test as a type to subscribe to: %s", desc)
	}
}

// TestEveryValueIsBounded: every string of the document has a maxLength
// (or an enum, or a const), every integer a minimum and a maximum, every
// array a maxItems (OWASP API4:2023, held by Spectral's OWASP ruleset in
// make oas-lint too; this names each place at once, in make unit).
func TestEveryValueIsBounded(t *testing.T) {
	raw, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, part := range []string{"paths", "webhooks", "components"} {
		missing = append(missing, unbounded(doc[part], "#/"+part)...)
	}
	if len(missing) > 0 {
		t.Errorf("%d values without bounds:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

// TestGuidesAreCurrent: the guide pages in shared/openapi/docs are what
// their Markdown renders to (make openapi writes them), every link of one
// guide to another points at a page that is served, and the receivers'
// page holds each receiver's code.
func TestGuidesAreCurrent(t *testing.T) {
	t.Parallel()
	pages, err := RenderGuides()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, g := range Guides {
		files = append(files, g.File)
	}
	if !slices.Equal(files, openapi.GuidePages) {
		t.Fatalf("the server serves %v, the build renders %v", openapi.GuidePages, files)
	}
	dir := filepath.Join(filepath.Dir(file), "docs")
	for _, g := range Guides {
		got := pages[g.File]
		if *update {
			if err := os.WriteFile(filepath.Join(dir, g.File), got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		committed, err := os.ReadFile(filepath.Join(dir, g.File))
		if err != nil || !bytes.Equal(committed, got) {
			t.Errorf("shared/openapi/docs/%s is stale (%v): run make openapi and commit it", g.File, err)
		}
		for _, m := range regexp.MustCompile(`href="([^"#]*)`).FindAllStringSubmatch(string(got), -1) {
			ref := m[1]
			if strings.HasPrefix(ref, "https://") || strings.HasPrefix(ref, "{{.Prefix}}/docs") || ref == "" {
				continue
			}
			if pages[ref] == nil {
				t.Errorf("%s links %q, which is not served", g.File, ref)
			}
		}
	}
	// Every link to a heading of a guide lands on one: the guides' own, and
	// the document's.
	doc, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{"openapi.json": string(doc)}
	for name, page := range pages {
		sources[name] = string(page)
	}
	for from, src := range sources {
		for _, m := range regexp.MustCompile(`(?:href="|\]\()(?:\{\{\.Prefix\}\}/docs/|/api/v1/docs/)?([a-z]+\.html)#([^")]+)`).FindAllStringSubmatch(src, -1) {
			if page := pages[m[1]]; page == nil || !strings.Contains(string(page), `id="`+m[2]+`"`) {
				t.Errorf("%s links %s#%s, which is no heading there", from, m[1], m[2])
			}
		}
	}
	for _, marker := range []string{"signature.VerifyAny(", "hmac.compare_digest(", "timingSafeEqual(", "new Webhook(secret).verify("} {
		if !strings.Contains(string(pages["receivers.html"]), html.EscapeString(marker)) {
			t.Errorf("the receivers' page lacks %q", marker)
		}
	}
}
