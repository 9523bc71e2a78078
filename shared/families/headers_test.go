package families_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/seed"
)

// Every single read (and the document) answers If-None-Match with 304.
func TestEverySingleReadIsConditional(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org, tok, err := seed.Demo(t.Context(), e.DB, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key := tok.String()
	hook := e.Post("/api/v1/webhooks", key, "", `{"url":"https://hooks.example.com/x","event_types":["matter.created"]}`)
	apitest.MustStatus(t, hook, 201)
	n := 0
	for _, rt := range routes.Table {
		if rt.Method != "GET" || rt.Name == "reports.get" || rt.Name == "webhooks.deliveries" {
			continue
		}
		path := strings.ReplaceAll(routes.Prefix+rt.Path, "{file}", "docs.css") // a file of the reference page
		if i := strings.Index(path, "/{"); i >= 0 {
			list := e.Get(path[:i], key)
			if len(list.Data()) == 0 {
				t.Fatalf("%s: no record in the demo organisation %s", path[:i], org)
			}
			path = path[:i] + "/" + list.Data()[0]["id"].(string)
		} else if !rt.Public {
			continue // a list
		}
		first := e.Get(path, key)
		etag := first.Header.Get("ETag")
		if first.Status != 200 || etag == "" {
			t.Fatalf("%s: %d, ETag %q", path, first.Status, etag)
		}
		req, _ := http.NewRequest("GET", e.Server.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("If-None-Match", etag)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Fatalf("%s If-None-Match: %d", path, resp.StatusCode)
		}
		n++
	}
	if n != 10 { // matters, clients, people, companies, invoices, documents, webhooks, the document, the docs page and a file of it
		t.Fatalf("%d conditional reads tried", n)
	}
}
