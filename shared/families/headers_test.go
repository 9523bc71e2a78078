package families_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/seed"
)

func TestConditionalReads(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	w := newWorld(e, "A")
	path := "/api/v1/matters/" + w.matters[0].ID
	first := e.Get(path, w.key)
	etag := first.Header.Get("ETag")
	if len(etag) != 34 || !strings.HasPrefix(etag, `"`) {
		t.Fatalf("ETag %q", etag)
	}
	if again := e.Get(path, w.key); again.Header.Get("ETag") != etag {
		t.Fatal("the ETag of an unchanged resource changed")
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		req, _ := http.NewRequest("GET", e.Server.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+w.key)
		req.Header.Set("If-None-Match", inm)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified || resp.Header.Get("ETag") != etag || resp.Header.Get("X-RateLimit-Remaining") == "" {
			t.Fatalf("If-None-Match %s: %d %v", inm, resp.StatusCode, resp.Header)
		}
	}
	req, _ := http.NewRequest("GET", e.Server.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+w.key)
	req.Header.Set("If-None-Match", `"stale"`)
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a stale ETag: %d", resp.StatusCode)
	}
	// A change gives a new ETag: the client's copy is stale.
	if _, err := matterStore(e).SetStatus(t.Context(), w.org, w.matters[0].ID, "closed", time.Now()); err != nil {
		t.Fatal(err)
	}
	if e.Get(path, w.key).Header.Get("ETag") == etag {
		t.Fatal("ETag unchanged after a change")
	}
}

func matterStore(e *apitest.Env) *matter.Store { return matter.NewStore(e.DB) }

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
	mustStatus(t, hook, 201)
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
