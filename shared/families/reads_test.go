package families_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/matter"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ids(r apitest.Response) []string {
	var out []string
	for _, d := range r.Data() {
		out = append(out, d["id"].(string))
	}
	return out
}

// collect follows links.next to the end and returns every id in order.
func collect(t *testing.T, e *apitest.Env, path, key string) []string {
	t.Helper()
	var all []string
	for pages := 0; path != ""; pages++ {
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		r := e.Get(path, key)
		apitest.MustStatus(t, r, 200)
		all = append(all, ids(r)...)
		path = r.Next()
		meta := r.Body["meta"].(map[string]any)
		if (path != "") != meta["has_more"].(bool) || (path == "") != (meta["next_cursor"] == nil) {
			t.Fatalf("meta %v disagrees with links.next %q", meta, path)
		}
	}
	return all
}

func TestRoundTripsPerRead(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	w := e.NewWorld("A")
	page1 := e.Get("/api/v1/matters?per_page=3", w.Key)
	paths := []string{
		"/api/v1/matters", "/api/v1/matters?per_page=100",
		"/api/v1/matters?client_id=" + w.Clients[0].ID,
		"/api/v1/matters?status=active",
		"/api/v1/matters?updated_since=2025-03-01T13:00:00Z",
		"/api/v1/matters/" + w.Matters[0].ID,
		"/api/v1/matters/" + "00000000-0000-4000-8000-000000000000", // absent: still two
		page1.Next(),
		"/api/v1/clients", "/api/v1/clients?type=person", "/api/v1/clients/" + w.Clients[0].ID,
		"/api/v1/people", "/api/v1/people?updated_since=2025-03-02", "/api/v1/people/" + w.People[0].ID,
		"/api/v1/companies", "/api/v1/companies?cvr=" + w.Companies[0].CVR, "/api/v1/companies/" + w.Companies[0].ID,
	}
	for _, p := range paths {
		// Round trips are counted per attempt, and on a loaded machine the
		// SDK may retry one that DynamoDB Local answered with a transient
		// error (a fresh clone's make test once saw [UpdateItem Query
		// Query]): a read is measured again before it fails. A read that
		// makes an extra call does so both times.
		var ops []string
		for try := 0; try < 2; try++ {
			e.Calls.Reset()
			r := e.Get(p, w.Key)
			if r.Status != 200 && r.Status != 404 {
				t.Fatalf("%s: %d %s", p, r.Status, r.Raw)
			}
			if rest, ok := afterAuth(e.Calls.Ops()); ok && len(rest) == 1 && (rest[0] == "Query" || rest[0] == "GetItem") {
				ops = nil
				break
			}
			ops = e.Calls.Ops()
		}
		if ops != nil {
			t.Errorf("%s: round trips %v, want the client's GetItem and count (at once), then [Query|GetItem]", p, ops)
		}
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	w := e.NewWorld("A")
	matterIDs := func(keep func(m *matter.Matter) bool) []string {
		var out []string
		for _, m := range w.Matters {
			if keep(m) {
				out = append(out, m.ID)
			}
		}
		return out
	}
	since := t0.Add(4 * time.Hour)
	cl := w.Clients[1]
	cases := []struct {
		path string
		want []string
	}{
		{"/api/v1/matters?client_id=" + cl.ID, matterIDs(func(m *matter.Matter) bool { return m.ClientID == cl.ID })},
		{"/api/v1/matters?status=active", matterIDs(func(m *matter.Matter) bool { return m.Status == "active" })},
		{"/api/v1/matters?updated_since=2025-03-01T16:00:00Z", matterIDs(func(m *matter.Matter) bool { return m.UpdatedAt >= apitest.Stamp(since) })},
		{"/api/v1/matters?updated_since=2025-03-01T17:00:00%2B01:00", matterIDs(func(m *matter.Matter) bool { return m.UpdatedAt >= apitest.Stamp(since) })},
		{"/api/v1/matters?updated_since=2025-03-01T16:00:00.000Z&status=active", matterIDs(func(m *matter.Matter) bool {
			return m.Status == "active" && m.UpdatedAt >= apitest.Stamp(since)
		})},
		{"/api/v1/matters?client_id=" + cl.ID + "&status=dormant", matterIDs(func(m *matter.Matter) bool { return m.ClientID == cl.ID && m.Status == "dormant" })},
		{"/api/v1/matters?updated_since=2030-01-01", nil},
		{"/api/v1/clients?type=company", []string{w.Clients[0].ID, w.Clients[2].ID, w.Clients[4].ID, w.Clients[6].ID}},
		{"/api/v1/clients?type=person&updated_since=2025-03-03", []string{w.Clients[5].ID, w.Clients[7].ID}},
		{"/api/v1/people?updated_since=2025-03-03", []string{w.People[2].ID, w.People[3].ID}},
		{"/api/v1/people?updated_since=2025-03-03T13:00:00Z", []string{w.People[2].ID, w.People[3].ID}}, // inclusive
		{"/api/v1/companies?cvr=" + w.Companies[1].CVR, []string{w.Companies[1].ID}},
		{"/api/v1/companies?cvr=" + url.QueryEscape(dashed(w.Companies[2].CVR)), []string{w.Companies[2].ID}},
		{"/api/v1/companies?cvr=" + url.QueryEscape("DK "+w.Companies[3].CVR[:4]+" "+w.Companies[3].CVR[4:]), []string{w.Companies[3].ID}},
		{"/api/v1/companies?cvr=99999999", nil},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			for _, per := range []int{1, 50} { // each filter also holds across pages
				got := collect(t, e, c.path+fmt.Sprintf("&per_page=%d", per), w.Key)
				if len(c.want) == 0 && len(got) == 0 {
					continue
				}
				if !slices.Equal(got, c.want) {
					t.Fatalf("per_page=%d: got %v\nwant %v", per, got, c.want)
				}
			}
		})
	}
}

func dashed(cvr string) string { return cvr[:2] + "-" + cvr[2:4] + "-" + cvr[4:6] + "-" + cvr[6:] }

func TestInvalidFilters(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	w := e.NewWorld("A")
	cases := []struct{ path, field, msg string }{
		{"/api/v1/matters?status=open", "status", "active, dormant, closed, archived"},
		{"/api/v1/matters?client_id=123", "client_id", "UUID"},
		{"/api/v1/matters?updated_since=yesterday", "updated_since", "date"},
		{"/api/v1/matters?updated_since=2025-03-01T10:00:00+02:00", "updated_since", "%2B"}, // '+' arrives as a space
		{"/api/v1/clients?type=partnership", "type", "company, person"},
		{"/api/v1/clients?updated_since=2025-13-01", "updated_since", "date"},
		{"/api/v1/people?updated_since=2025-03-01T10:00:00 02:00", "updated_since", "%2B"},
		{"/api/v1/companies?cvr=abc", "cvr", "digits"},
		{"/api/v1/companies?updated_since=0", "updated_since", "date"},
		// The bounds the OpenAPI document gives each parameter.
		{"/api/v1/companies?cvr=" + strings.Repeat("1", 41), "cvr", "longer than 40"},
		{"/api/v1/documents?folder=" + strings.Repeat("æ", 201), "folder", "longer than 200"},
		{"/api/v1/matters?cursor=" + strings.Repeat("A", 8193), "cursor", "invalid"},
		{"/api/v1/events?event_types=" + strings.Repeat("matter.created,", 67), "event_types", "longer than 1000"},
		{"/api/v1/time-entries?updated_since=" + strings.Repeat("1", 36), "updated_since", "date"},
	}
	for _, c := range cases {
		r := e.Get(strings.ReplaceAll(c.path, " ", "%20"), w.Key)
		msg, _ := r.Body["message"].(string)
		errs, _ := r.Body["errors"].([]any)
		if r.Status != 422 || r.Body["field"] != c.field || !strings.Contains(msg, c.msg) || len(errs) != 1 {
			t.Errorf("%s: %d %s", c.path, r.Status, r.Raw)
		}
	}
}

func TestIsolation(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	a, b := e.NewWorld("A"), e.NewWorld("B")
	cases := []struct {
		name string
		path string
	}{
		{"matter", "/api/v1/matters/" + b.Matters[0].ID},
		{"client", "/api/v1/clients/" + b.Clients[0].ID},
		{"person", "/api/v1/people/" + b.People[0].ID},
		{"company", "/api/v1/companies/" + b.Companies[0].ID},
		{"matters of B's client", "/api/v1/matters?client_id=" + b.Clients[0].ID},
		{"company by B's cvr", "/api/v1/companies?cvr=" + b.Companies[0].CVR},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.Get(c.path, a.Key)
			if strings.Contains(c.path, "?") {
				apitest.MustStatus(t, r, 200)
				if len(r.Data()) != 0 {
					t.Fatalf("A sees %d of B's rows", len(r.Data()))
				}
				return
			}
			apitest.MustStatus(t, r, 404)
			// Exactly like an id that exists nowhere.
			absent := e.Get(c.path[:strings.LastIndex(c.path, "/")+1]+"00000000-0000-4000-8000-000000000000", a.Key)
			if absent.Body["message"] != r.Body["message"] {
				t.Fatalf("foreign id %q differs from absent id %q", r.Body["message"], absent.Body["message"])
			}
		})
	}
	var bIDs []string
	for _, m := range b.Matters {
		bIDs = append(bIDs, m.ID)
	}
	for _, p := range []string{"/api/v1/matters", "/api/v1/clients", "/api/v1/people", "/api/v1/companies"} {
		for _, id := range collect(t, e, p, a.Key) {
			if slices.Contains(bIDs, id) {
				t.Fatalf("%s lists B's %s", p, id)
			}
		}
		if len(collect(t, e, p, a.Key)) == 0 {
			t.Fatalf("%s is empty for A", p)
		}
	}
}

func TestSingleReadsAndShapes(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	w := e.NewWorld("A")
	r := e.Get("/api/v1/matters/"+strings.ToUpper(w.Matters[0].ID), w.Key) // ids are case-insensitive
	apitest.MustStatus(t, r, 200)
	data := r.Body["data"].(map[string]any)
	if data["id"] != w.Matters[0].ID || data["matter_number"] != w.Matters[0].MatterNumber || data["hourly_rate"] != 150000.0 || data["currency"] != "DKK" {
		t.Fatalf("matter %v", data)
	}
	for _, k := range []string{"PK", "SK", "GSI1PK", "kind"} {
		if _, ok := data[k]; ok {
			t.Fatalf("matter leaks key attribute %s", k)
		}
	}
	c := e.Get("/api/v1/clients/"+w.Clients[1].ID, w.Key).Body["data"].(map[string]any)
	if c["type"] != "person" || c["person_id"] != w.People[0].ID || c["kyc_status"] != "pending" {
		t.Fatalf("client %v", c)
	}
	if _, ok := c["company_id"]; ok {
		t.Fatal("person engagement has a company_id")
	}
	for _, bad := range []string{"not-a-uuid", "123", "%20", "00000000000040008000000000000000"} {
		apitest.MustStatus(t, e.Get("/api/v1/matters/"+bad, w.Key), 404)
	}
	// No CPR in any form in any response.
	for _, p := range []string{"/api/v1/people", "/api/v1/people/" + w.People[0].ID, "/api/v1/clients", "/api/v1/companies", "/api/v1/matters"} {
		raw := strings.ToLower(string(e.Get(p, w.Key).Raw))
		if strings.Contains(raw, "cpr") {
			t.Fatalf("%s mentions cpr: %s", p, raw)
		}
	}
}

func TestErrorsAreJSON(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	w := e.NewWorld("A")
	r := e.Get("/api/v1/nothing-here", w.Key)
	apitest.MustStatus(t, r, 404)
	r = e.Get("/", "")
	apitest.MustStatus(t, r, 404)
	r = e.Do("POST", "/api/v1/people/"+w.People[0].ID, w.Key, strings.NewReader("{}"))
	if r.Status != 405 || r.Header.Get("Allow") != "GET" || r.Body["message"] == nil {
		t.Fatalf("405: %d %v %s", r.Status, r.Header, r.Raw)
	}
	big := strings.NewReader(`{"x":"` + strings.Repeat("a", 2<<20) + `"}`)
	r = e.Do("POST", "/api/v1/matters", w.Key, big)
	if r.Status != 413 || !strings.Contains(r.Body["message"].(string), "1048576") {
		t.Fatalf("413: %d %s", r.Status, r.Raw)
	}
	var anyBody map[string]any
	if err := json.Unmarshal(r.Raw, &anyBody); err != nil {
		t.Fatal(err)
	}
}
