package families_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
)

func TestImportChainAndShapes(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	paths := []struct{ path, body string }{
		{"/api/v1/companies", `{"name":"Nordlys ApS","cvr":"12 34 56 78"}`},
		{"/api/v1/people", `{"name":"Anne Holm","email":"anne@example.dk","phone":"+45 12 34 56 78"}`},
	}
	ids := map[string]string{}
	for _, p := range paths {
		r := e.Post(p.path, key, "src-1", p.body) // one source id keys several endpoints
		apitest.MustStatus(t, r, 201)
		if r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatal("Idempotent-Replayed on a 201")
		}
		id := r.Body["data"].(map[string]any)["id"].(string)
		ids[p.path] = id
		loc := r.Header.Get("Location")
		if loc != e.Server.URL+p.path+"/"+id {
			t.Fatalf("Location %q", loc)
		}
		read := e.Get(loc, key)
		apitest.MustStatus(t, read, 200)
		if string(mustJSON(t, read.Body["data"])) != string(mustJSON(t, r.Body["data"])) {
			t.Fatalf("201 body %s differs from the read %s", r.Raw, read.Raw)
		}
	}
	if cvr := e.Get("/api/v1/companies/"+ids["/api/v1/companies"], key).Body["data"].(map[string]any)["cvr"]; cvr != "12345678" {
		t.Fatalf("cvr stored as %v", cvr)
	}
	r := e.Post("/api/v1/clients", key, "src-1", `{"company_id":"`+ids["/api/v1/companies"]+`"}`)
	apitest.MustStatus(t, r, 201)
	client := r.Body["data"].(map[string]any)
	if client["type"] != "company" || client["kyc_status"] != "pending" || client["company_id"] != ids["/api/v1/companies"] {
		t.Fatalf("client %v", client)
	}
	r = e.Post("/api/v1/matters", key, "src-1", `{"client_id":"`+client["id"].(string)+`","status":"dormant","hourly_rate":125000,"title":"Lejekontrakt"}`)
	apitest.MustStatus(t, r, 201)
	m := r.Body["data"].(map[string]any)
	if m["status"] != "dormant" || m["hourly_rate"] != 125000.0 || !strings.HasPrefix(m["matter_number"].(string), "SAG-") {
		t.Fatalf("matter %v", m)
	}
	r = e.Post("/api/v1/time-entries", key, "src-1", `{"matter_id":"`+m["id"].(string)+`","date":"2025-03-14","duration_minutes":25,"description":"Møde"}`)
	apitest.MustStatus(t, r, 201)
	if r.Header.Get("Location") != "" {
		t.Fatal("a time entry create has a Location")
	}
	te := r.Body["data"].(map[string]any)
	// 25 min at 1,250.00 DKK/h = 520.833… DKK → 52083 øre (half up).
	if te["status"] != "draft" || te["amount"] != 52083.0 || te["hourly_rate"] != 125000.0 || te["client_id"] != client["id"] {
		t.Fatalf("time entry %v", te)
	}
	// Import rule 9: found again by matter_id and a date range.
	list := e.Get("/api/v1/time-entries?matter_id="+m["id"].(string)+"&date_from=2025-03-14&date_to=2025-03-14", key)
	if got := ids2(list); !slices.Equal(got, []string{te["id"].(string)}) {
		t.Fatalf("time entries %v", got)
	}
	// Events went into the outbox with the creates, one each (a company's
	// enrichment starts from its own insert).
	items := e.Items(org)
	var types []string
	for _, ev := range items["event"] {
		types = append(types, apitest.AttrS(ev, "type"))
	}
	slices.Sort(types)
	if !slices.Equal(types, []string{"client.created", "company.created", "matter.created", "person.created", "time_entry.created"}) {
		t.Fatalf("outbox %v", types)
	}
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	co := im.Company("11111111")
	pe := im.Person("p@example.dk")
	cl := im.Client("company_id", co)
	otherOrg := e.Org("B")
	foreign := apitest.NewImporter(t, e, e.Key(otherOrg))
	foreignCo := foreign.Company("22222222")
	freshCo := im.Company("33333333")
	m := im.Matter(cl, `,"status":"dormant"`)

	cases := []struct {
		name, path, body, field, msg string
	}{
		{"2: both parties", "/api/v1/clients", `{"company_id":"` + freshCo + `","person_id":"` + pe + `"}`, "company_id", "exactly one"},
		{"2: neither party", "/api/v1/clients", `{}`, "company_id", "exactly one"},
		{"3: foreign party", "/api/v1/clients", `{"company_id":"` + foreignCo + `"}`, "company_id", "no company with id"},
		{"3: absent party", "/api/v1/clients", `{"person_id":"00000000-0000-4000-8000-000000000000"}`, "person_id", "no person with id"},
		{"4: engaged party", "/api/v1/clients", `{"company_id":"` + co + `"}`, "company_id", cl},
		{"5: duplicate e-mail", "/api/v1/people", `{"name":"X","email":"P@Example.dk"}`, "email", pe},
		{"6: duplicate CVR", "/api/v1/companies", `{"name":"X","cvr":"1111-1111"}`, "cvr", co},
		{"7: amount", "/api/v1/time-entries", `{"matter_id":"` + m["id"].(string) + `","date":"2025-01-01","duration_minutes":5,"amount":100}`, "amount", "derived"},
		{"7: status", "/api/v1/time-entries", `{"matter_id":"` + m["id"].(string) + `","date":"2025-01-01","duration_minutes":5,"status":"draft"}`, "status", "draft"},
		{"8: KYC missing", "/api/v1/matters", `{"client_id":"` + cl + `","status":"active"}`, "status", "dormant"},
		{"matter on a foreign client", "/api/v1/matters", `{"client_id":"00000000-0000-4000-8000-000000000000"}`, "client_id", "no client"},
		{"matter imported closed", "/api/v1/matters", `{"client_id":"` + cl + `","status":"closed"}`, "status", "dormant or active"},
		{"time on a foreign matter", "/api/v1/time-entries", `{"matter_id":"00000000-0000-4000-8000-000000000000","date":"2025-01-01","duration_minutes":5}`, "matter_id", "no matter"},
		{"client with kyc_status", "/api/v1/clients", `{"company_id":"` + freshCo + `","kyc_status":"approved"}`, "kyc_status", "pending"},
		{"id sent", "/api/v1/companies", `{"id":"x","name":"X","cvr":"44444444"}`, "id", "assigned"},
		{"timestamps sent", "/api/v1/people", `{"name":"X","email":"x@example.dk","created_at":"2020-01-01T00:00:00Z"}`, "created_at", "assigned"},
		{"unknown field", "/api/v1/companies", `{"name":"X","cvr":"44444444","colour":"red"}`, "colour", "unknown"},
		{"cvr of 7 digits", "/api/v1/companies", `{"name":"X","cvr":"1234567"}`, "cvr", "8 digits"},
		{"not an object", "/api/v1/people", `[1,2]`, "", "JSON object"},
		{"two objects", "/api/v1/people", `{} {}`, "", "single JSON object"},
		{"empty body", "/api/v1/people", ``, "", "JSON object"},
		{"person without name", "/api/v1/people", `{"email":"n@example.dk"}`, "name", "required"},
		{"duration zero", "/api/v1/time-entries", `{"matter_id":"` + m["id"].(string) + `","date":"2025-01-01","duration_minutes":0}`, "duration_minutes", "duration_minutes must be from 1 to 1440 (whole minutes; 1440 is a day)"},
		{"no such day", "/api/v1/time-entries", `{"matter_id":"` + m["id"].(string) + `","date":"2025-02-30","duration_minutes":5}`, "date", "date is not a calendar date: 2025-02 has no day 30"},
		{"no such month", "/api/v1/time-entries", `{"matter_id":"` + m["id"].(string) + `","date":"2025-13-01","duration_minutes":5}`, "date", "date is not a calendar date: 2025-13-01 has no month 13"},
		{"not a date", "/api/v1/time-entries", `{"matter_id":"` + m["id"].(string) + `","date":"14/03/2025","duration_minutes":5}`, "date", "date must be a date in the form YYYY-MM-DD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.Post(c.path, key, "rule-"+c.name, c.body)
			msg, _ := r.Body["message"].(string)
			if r.Status != 422 || !strings.Contains(msg, c.msg) || (c.field != "" && r.Body["field"] != c.field) {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
		})
	}
	if n := len(e.Items(org)["client"]); n != 1 {
		t.Fatalf("%d clients after refused imports", n)
	}
	if n := len(e.Items(otherOrg)["client"]); n != 0 {
		t.Fatal("a cross-organisation engagement was created")
	}
}

func TestRoundTripsOfCreates(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("11111111"))
	tx := []string{"TransactWriteItems"} // after the client's read and count, at once (afterAuth)
	cases := []struct {
		path, body string
		first      []string
		replay     []string
	}{
		// authenticate (read the client, and count), then one transaction that binds the key
		// (a replay: the same, cancelled on the key, which it answers)
		{"/api/v1/people", `{"name":"A","email":"a@example.dk"}`, tx, tx},
		{"/api/v1/companies", `{"name":"A","cvr":"22222222"}`, tx, tx},
		{"/api/v1/matters", `{"client_id":"` + cl + `","matter_number":"X-1","hourly_rate":1}`, tx, tx},
		// an auto-numbered matter draws its number first, so it looks its
		// key up before: a replay writes nothing but its count
		{"/api/v1/matters", `{"client_id":"` + cl + `"}`, []string{"GetItem", "UpdateItem", "TransactWriteItems"}, []string{"GetItem"}},
	}
	var matterID string
	for _, c := range cases {
		e.Calls.Reset()
		r := e.Post(c.path, key, "rt-"+c.body, c.body)
		apitest.MustStatus(t, r, 201)
		if got, ok := afterAuth(e.Calls.Ops()); !ok || !slices.Equal(got, c.first) {
			t.Errorf("%s first create: %v, want the authentication's two, then %v", c.path, e.Calls.Ops(), c.first)
		}
		if c.path == "/api/v1/matters" {
			matterID = r.Body["data"].(map[string]any)["id"].(string)
		}
		e.Calls.Reset()
		apitest.MustStatus(t, e.Post(c.path, key, "rt-"+c.body, c.body), 200)
		if got, ok := afterAuth(e.Calls.Ops()); !ok || !slices.Equal(got, c.replay) {
			t.Errorf("%s replay: %v, want the authentication's two, then %v", c.path, e.Calls.Ops(), c.replay)
		}
	}
	e.Calls.Reset()
	apitest.MustStatus(t, e.Post("/api/v1/time-entries", key, "rt-te", `{"matter_id":"`+matterID+`","date":"2025-01-02","duration_minutes":7,"hourly_rate":1}`), 201)
	if got, ok := afterAuth(e.Calls.Ops()); !ok || !slices.Equal(got, []string{"GetItem", "TransactWriteItems"}) {
		t.Errorf("time entry create: %v", e.Calls.Ops()) // + its matter
	}
}

// TestFaultsLeaveNothingHalfWritten fails each DynamoDB call of each create
// in turn, before it is sent and after it committed with its answer lost.
// Whatever failed, the store holds a whole record or nothing, and the same
// key then yields exactly one record, at once: nothing holds a key but a
// committed create.
func TestFaultsLeaveNothingHalfWritten(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 100000})
	now := time.Now()
	e.SetNow(now)
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("99999999"))
	mat := im.Matter(cl, `,"hourly_rate":1000`)["id"].(string)
	kinds := []struct {
		path, body, kind string
		events           int
	}{
		{"/api/v1/people", `{"name":"A","email":"f%d@example.dk"}`, "person", 1},
		{"/api/v1/companies", `{"name":"A","cvr":"%08d"}`, "company", 1},
		{"/api/v1/matters", `{"client_id":"` + cl + `","title":"%d"}`, "matter", 1},
		{"/api/v1/time-entries", `{"matter_id":"` + mat + `","date":"2025-01-02","duration_minutes":%d}`, "time_entry", 1},
	}
	for _, k := range kinds {
		for _, mode := range []apitest.FaultMode{apitest.FailBefore, apitest.FailAfter} {
			for nth := 1; ; nth++ {
				before := e.Items(org)
				seq := len(before[k.kind]) + 1000*nth + int(mode)*100
				if k.kind == "time_entry" {
					seq = seq%1439 + 1 // a valid duration
				}
				body := fmt.Sprintf(k.body, seq)
				idem := fmt.Sprintf("fault-%s-%d-%d", k.kind, mode, nth)
				e.Faults.Arm(mode, nth)
				r := e.Post(k.path, key, idem, body)
				fired := e.Faults.Disarm()
				if !fired {
					apitest.MustStatus(t, r, 201) // every call of this create has had its turn
					break
				}
				if r.Status < 400 && r.Status != 201 {
					t.Fatalf("%s call %d mode %d: %d", k.kind, nth, mode, r.Status)
				}
				after := e.Items(org)
				grew := len(after[k.kind]) - len(before[k.kind])
				keys := len(after["idempotency"]) - len(before["idempotency"])
				events := len(after["event"]) - len(before["event"])
				whole := grew == 1 && keys == 1 && events == k.events
				nothing := grew == 0 && keys == 0 && events == 0
				if !whole && !nothing {
					t.Fatalf("%s call %d mode %d: half-written (+%d %s, +%d keys, +%d events)", k.kind, nth, mode, grew, k.kind, keys, events)
				}
				// The same key now creates or replays exactly one record.
				retry := e.Post(k.path, key, idem, body)
				if retry.Status != 201 && retry.Status != 200 {
					t.Fatalf("%s call %d mode %d: retry %d %s", k.kind, nth, mode, retry.Status, retry.Raw)
				}
				if n := len(e.Items(org)[k.kind]) - len(before[k.kind]); n != 1 {
					t.Fatalf("%s call %d mode %d: %d records after the retry", k.kind, nth, mode, n)
				}
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ids2(r apitest.Response) []string { return ids(r) }
