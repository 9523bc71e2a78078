package families_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
)

// cprSpellings are the spellings an attacker or a careless integrator
// tried, each of which must be refused wherever a string is accepted.
var cprSpellings = []string{
	"010190-1234", "0101901234", "01.01.90-1234", "010190/1234", "010190–1234", "０１０１９０－１２３４",
	"01 01 90 1234", "010190\u200b1234", "SAG-010190-1234",
}

// TestCPRIsRefusedInEveryWriteBody sends each spelling in every string
// field of every write body, and a CPR-named key, and expects a 422 that
// says why, with nothing created (the harness also fails on any CPR in a
// response).
func TestCPRIsRefusedInEveryWriteBody(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 100000})
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	client := im.Client("company_id", im.Company("11223344"))
	matter := im.Matter(client, "")["id"].(string)
	hook := e.Do("POST", "/api/v1/webhooks", key, strings.NewReader(`{"url":"https://127.0.0.1/hook","event_types":["matter.created"]}`))
	apitest.MustStatus(t, hook, 201)
	hookID := hook.Body["data"].(map[string]any)["id"].(string)
	type target struct{ method, path, template string }
	targets := []target{
		{"POST", "/api/v1/people", `{"name":%s,"email":"a@example.dk"}`},
		{"POST", "/api/v1/people", `{"name":"Anne","email":"a@example.dk","phone":%s}`},
		{"POST", "/api/v1/companies", `{"name":%s,"cvr":"55667788"}`},
		{"POST", "/api/v1/matters", `{"client_id":"` + client + `","title":%s}`},
		{"POST", "/api/v1/matters", `{"client_id":"` + client + `","matter_number":%s}`},
		{"POST", "/api/v1/time-entries", `{"matter_id":"` + matter + `","date":"2025-03-01","duration_minutes":30,"description":%s}`},
		{"POST", "/api/v1/webhooks", `{"url":"https://127.0.0.1/in/"+%s,"event_types":["matter.created"]}`},
		{"PATCH", "/api/v1/webhooks/" + hookID, `{"url":"https://127.0.0.1/in/"+%s}`},
		{"POST", "/api/v1/clients", `{"company_id":"` + client + `","note":{"owner":[%s]}}`},
	}
	n := 0
	for _, tg := range targets {
		for _, sp := range cprSpellings {
			quoted, _ := json.Marshal(sp)
			body := fmt.Sprintf(tg.template, quoted)
			if strings.Contains(tg.template, `"+%s`) { // a URL: the number inside its path
				body = fmt.Sprintf(strings.ReplaceAll(tg.template, `"+%s`, `%s"`), sp)
			}
			n++
			var r apitest.Response
			if tg.method == "PATCH" || strings.HasSuffix(tg.path, "/webhooks") {
				r = e.Do(tg.method, tg.path, key, strings.NewReader(body))
			} else {
				r = e.Post(tg.path, key, fmt.Sprintf("cpr-%d", n), body)
			}
			if r.Status != 422 || !strings.Contains(r.Body["message"].(string), "CPR") {
				t.Errorf("%s %s %s: %d %s", tg.method, tg.path, body, r.Status, r.Raw)
			}
		}
	}
	// A CPR-named key anywhere is refused too, whatever its value.
	for _, body := range []string{`{"name":"X ApS","cvr":"99887766","owner":{"CPR_nr":"x"}}`, `{"name":"X ApS","cvr":"99887766","ｃｐｒ":1}`} {
		if r := e.Post("/api/v1/companies", key, "cpr-key-"+body, body); r.Status != 422 {
			t.Errorf("%s: %d", body, r.Status)
		}
	}
	items := e.Items(org)
	if len(items["person"]) != 0 || len(items["company"]) != 1 || len(items["matter"]) != 1 || len(items["time_entry"]) != 0 {
		t.Fatalf("something with a CPR was created: %d people, %d companies, %d matters, %d entries",
			len(items["person"]), len(items["company"]), len(items["matter"]), len(items["time_entry"]))
	}
	ep := e.Get("/api/v1/webhooks/"+hookID, key).Body["data"].(map[string]any)
	if ep["url"] != "https://127.0.0.1/hook" {
		t.Fatalf("a PATCH with a CPR changed the URL: %v", ep["url"])
	}
	// Values that look like numbers but are not CPRs pass.
	for i, body := range []string{
		`{"name":"Anne","email":"anne12345678@example.dk","phone":"+45 12 34 56 78"}`,
	} {
		apitest.MustStatus(t, e.Post("/api/v1/people", key, fmt.Sprintf("ok-%d", i), body), 201)
	}
	apitest.MustStatus(t, e.Post("/api/v1/time-entries", key, "ok-te", `{"matter_id":"`+matter+`","date":"2025-03-01","duration_minutes":30,"hourly_rate":1000,"description":"Møde 15.03.2024 kl. 10.30, faktura 123456789012"}`), 201)
	// Echoed input is redacted: an unknown field named like a CPR, a filter value.
	r := e.Get("/api/v1/matters?status=010190-1234", key)
	apitest.MustStatus(t, r, 422)
}

// TestValidationAnswersAreBounded: a 1 MiB body of unknown fields gets a
// 422 that lists 50 problems and counts them all, far under Lambda's 6 MB.
func TestValidationAnswersAreBounded(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	key := e.Key(e.Org("A"))
	var b strings.Builder
	b.WriteString(`{"name":"Anne","email":"a@example.dk"`)
	n := 0
	for b.Len() < 1<<20-40 {
		fmt.Fprintf(&b, `,"f%d":1`, n)
		n++
	}
	b.WriteString("}")
	r := e.Post("/api/v1/people", key, "big", b.String())
	apitest.MustStatus(t, r, 422)
	if len(r.Raw) > 64<<10 {
		t.Fatalf("a 422 of %d bytes", len(r.Raw))
	}
	if errs := r.Body["errors"].([]any); len(errs) != 50 || r.Body["errors_total"] != float64(n) {
		t.Fatalf("%d errors listed, errors_total %v, want 50 and %d", len(errs), r.Body["errors_total"], n)
	}
	t.Logf("%d unknown fields: a %d-byte answer", n, len(r.Raw))
}

// TestAbsoluteURLsIgnoreTheHostHeader: links.next and Location, also when
// replayed from the idempotency record, name the API's own address.
func TestAbsoluteURLsIgnoreTheHostHeader(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	key := e.Key(e.Org("A"))
	send := func(method, path, idem, body string) *http.Response {
		req, _ := http.NewRequest(method, e.Server.URL+path, strings.NewReader(body))
		req.Host = "evil.example"
		req.Header.Set("X-Forwarded-Host", "evil.example")
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("Authorization", "Bearer "+key)
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i := range 3 {
		resp := send("POST", "/api/v1/companies", "host-1", `{"name":"Nordlys ApS","cvr":"12345678"}`)
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, e.Server.URL+"/api/v1/companies/") {
			t.Fatalf("attempt %d (status %d): Location %q", i, resp.StatusCode, loc)
		}
		apitest.MustStatus(t, e.Post("/api/v1/companies", key, fmt.Sprintf("more-%d", i), fmt.Sprintf(`{"name":"Firma %d","cvr":"1111111%d"}`, i, i)), 201)
	}
	resp := send("GET", "/api/v1/companies?per_page=1", "", "")
	var page struct{ Links struct{ Next string } }
	_ = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if !strings.HasPrefix(page.Links.Next, e.Server.URL+"/api/v1/companies?") {
		t.Fatalf("links.next %q", page.Links.Next)
	}
}
