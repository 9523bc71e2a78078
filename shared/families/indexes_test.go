package families_test

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/openapi"
)

// TestEachFamilyQueriesExactlyItsGrantedIndexes drives every GET of every
// family with no filter and with each documented filter (read from the
// OpenAPI document, so a new filter is covered when it is documented), and
// notes the index of every Query: each family must use exactly the indexes
// routes.Indexes grants its Lambda (infra), no more (a Query its role may
// not make) and no fewer (a grant nothing needs).
func TestEachFamilyQueriesExactlyItsGrantedIndexes(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 100000})
	key := e.Key(e.Org("A"))
	type param struct {
		Ref     string `json:"$ref"`
		Name    string `json:"name"`
		In      string `json:"in"`
		Example any    `json:"example"`
		Schema  struct {
			Type   string   `json:"type"`
			Format string   `json:"format"`
			Enum   []string `json:"enum"`
			// Items is an array's (ids: comma-separated UUIDs).
			Items struct {
				Format string `json:"format"`
			} `json:"items"`
		} `json:"schema"`
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string  `json:"operationId"`
			Parameters  []param `json:"parameters"`
		} `json:"paths"`
		Components struct {
			Parameters map[string]param `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	// Shared parameters ($ref) are driven as the inline ones.
	for _, ops := range doc.Paths {
		for _, op := range ops {
			for i, p := range op.Parameters {
				if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
					op.Parameters[i] = doc.Components.Parameters[name]
				}
			}
		}
	}
	sample := func(typ, format string, enum []string) string {
		switch {
		case len(enum) > 0:
			return enum[0]
		case format == "uuid":
			return uuid.NewString()
		case format == "date":
			return "2025-01-01"
		case format == "date-time":
			return "2025-01-01T00:00:00Z"
		case typ == "integer":
			return "1"
		}
		return "x1"
	}
	used := map[string]map[string]bool{}
	for _, rt := range routes.Table {
		if rt.Method != "GET" || rt.Public || routes.Indexes[rt.Family] == nil && rt.Family != routes.Webhooks {
			continue
		}
		op := doc.Paths[rt.Path]["get"] // the document's server is /api/v1
		var queries []url.Values
		path := rt.Path
		base := url.Values{}
		for _, p := range op.Parameters {
			if p.In == "path" {
				path = strings.ReplaceAll(path, "{"+p.Name+"}", sample(p.Schema.Type, p.Schema.Format, p.Schema.Enum))
			}
		}
		if rt.Path == "/reports/{type}" {
			for _, typ := range []string{"time-summary", "wip", "receivables-aging"} {
				queries = append(queries, url.Values{"_path": {"/reports/" + typ}, "date_from": {"2025-01-01"}, "date_to": {"2025-01-31"}})
			}
		} else {
			queries = append(queries, base)
			for _, p := range op.Parameters {
				if p.In == "query" && p.Name != "" && p.Name != "per_page" && p.Name != "cursor" {
					v := sample(p.Schema.Type, p.Schema.Format, p.Schema.Enum)
					if p.Schema.Type == "array" {
						v = sample("string", p.Schema.Items.Format, nil) + "," + sample("string", p.Schema.Items.Format, nil)
					}
					if ex, ok := p.Example.(string); ok {
						v = ex // a parameter whose form its schema does not say (a list)
					}
					if p.Name == "updated_since" {
						v = "2025-01-01" // a pattern, not a format
					}
					queries = append(queries, url.Values{p.Name: {v}})
				}
			}
		}
		if used[rt.Family] == nil {
			used[rt.Family] = map[string]bool{}
		}
		for _, q := range queries {
			p := path
			if v := q.Get("_path"); v != "" {
				p = v
				q.Del("_path")
			}
			e.Calls.Reset()
			r := e.Get(routes.Prefix+p+"?"+q.Encode(), key)
			if r.Status != 200 && r.Status != 404 {
				t.Fatalf("GET %s?%s: %d %s", p, q.Encode(), r.Status, r.Raw)
			}
			for _, idx := range e.Calls.Indexes() {
				if idx != "" {
					used[rt.Family][idx] = true
				}
			}
		}
	}
	// The webhooks family's one Query of an index is a replay's, when
	// another replay holds the URL (its progress): two in a row, of an
	// event.
	r := e.Do("POST", routes.Prefix+"/webhooks", key, strings.NewReader(`{"url":"https://127.0.0.1:9/x","event_types":["matter.created"]}`))
	if r.Status != 201 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Raw)
	}
	im := apitest.NewImporter(t, e, key)
	im.Matter(im.Client("company_id", im.Company("71717171")), "")
	hook := r.Body["data"].(map[string]any)["id"].(string)
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for range 2 {
		e.Calls.Reset()
		e.Do("POST", routes.Prefix+"/webhooks/"+hook+"/replay", key, strings.NewReader(`{"since":"`+since+`"}`))
		for _, idx := range e.Calls.Indexes() {
			if idx != "" {
				used[routes.Webhooks][idx] = true
			}
		}
	}
	for family, set := range used {
		got := slices.Sorted(maps.Keys(set))
		if want := routes.Indexes[family]; !slices.Equal(got, want) {
			t.Errorf("family %s queries %v; routes.Indexes grants %v", family, got, want)
		}
	}
	if len(used) != len(routes.Indexes) {
		t.Errorf("families driven: %v", slices.Sorted(maps.Keys(used)))
	}
}
