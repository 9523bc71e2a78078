package build

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/openapi"
)

// TestExamplesMatchTheirSchemas: every named schema has an example, every
// example is valid against its schema (formats included: uuids, dates,
// e-mail), and every documented answer of every operation, each status,
// has an example to show, either its own or its schema's: the reference
// page never shows a made-up "string".
func TestExamplesMatchTheirSchemas(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	check := func(where string, schema *openapi3.SchemaRef, example any) {
		t.Helper()
		raw, _ := json.Marshal(example)
		if cpr.Find(string(raw)) {
			t.Errorf("%s: the example holds a CPR-like number: %s", where, raw)
		}
		var v any
		_ = json.Unmarshal(raw, &v)
		if err := schema.Value.VisitJSON(v, openapi3.EnableFormatValidation()); err != nil {
			t.Errorf("%s: the example does not match its schema: %v", where, firstLine(err))
		}
	}
	for name, s := range doc.Components.Schemas {
		if s.Value.Example == nil {
			t.Errorf("schema %s has no example", name)
			continue
		}
		check("schema "+name, s, s.Value.Example)
	}
	for name, r := range doc.Components.Responses {
		if mt := r.Value.Content.Get("application/json"); mt != nil {
			if mt.Example == nil {
				t.Errorf("response %s has no example", name)
				continue
			}
			check("response "+name, mt.Schema, mt.Example)
		}
	}
	answers := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, r := range op.Responses.Map() {
				mt := r.Value.Content.Get("application/json")
				if mt == nil {
					continue // no JSON body: 204, 304, the reference page's text
				}
				answers++
				if mt.Example == nil && mt.Schema.Value.Example == nil {
					t.Errorf("%s %s → %s: no example", method, path, status)
				}
			}
			if op.RequestBody != nil {
				if mt := op.RequestBody.Value.Content.Get("application/json"); mt.Schema.Value.Example == nil {
					t.Errorf("%s %s: the request body has no example", method, path)
				}
			}
		}
	}
	t.Logf("%d schemas and %d documented JSON answers, each with a valid example", len(doc.Components.Schemas), answers)
	// The 401's example carries only what a 401 carries.
	unauth := doc.Components.Responses["Unauthorized"].Value.Content.Get("application/json").Example.(map[string]any)
	if len(unauth) != 2 || unauth["message"] == nil || unauth["code"] != "unauthenticated" {
		t.Errorf("the 401 example: %v", unauth)
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(fmt.Sprint(err), "\n")
	return s
}
