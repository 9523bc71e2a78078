package families_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/party"
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
		mustStatus(t, r, 201)
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
		mustStatus(t, read, 200)
		if string(mustJSON(t, read.Body["data"])) != string(mustJSON(t, r.Body["data"])) {
			t.Fatalf("201 body %s differs from the read %s", r.Raw, read.Raw)
		}
	}
	if cvr := e.Get("/api/v1/companies/"+ids["/api/v1/companies"], key).Body["data"].(map[string]any)["cvr"]; cvr != "12345678" {
		t.Fatalf("cvr stored as %v", cvr)
	}
	r := e.Post("/api/v1/clients", key, "src-1", `{"company_id":"`+ids["/api/v1/companies"]+`"}`)
	mustStatus(t, r, 201)
	client := r.Body["data"].(map[string]any)
	if client["type"] != "company" || client["kyc_status"] != "pending" || client["company_id"] != ids["/api/v1/companies"] {
		t.Fatalf("client %v", client)
	}
	r = e.Post("/api/v1/matters", key, "src-1", `{"client_id":"`+client["id"].(string)+`","status":"dormant","hourly_rate":125000,"title":"Lejekontrakt"}`)
	mustStatus(t, r, 201)
	m := r.Body["data"].(map[string]any)
	if m["status"] != "dormant" || m["hourly_rate"] != 125000.0 || !strings.HasPrefix(m["matter_number"].(string), "SAG-") {
		t.Fatalf("matter %v", m)
	}
	r = e.Post("/api/v1/time-entries", key, "src-1", `{"matter_id":"`+m["id"].(string)+`","date":"2025-03-14","duration_minutes":25,"description":"Møde"}`)
	mustStatus(t, r, 201)
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
		types = append(types, attrS(ev, "type"))
	}
	slices.Sort(types)
	if !slices.Equal(types, []string{"client.created", "company.created", "matter.created", "person.created", "time_entry.created"}) {
		t.Fatalf("outbox %v", types)
	}
}

func TestIdempotencyKeyStates(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	body := `{"name":"Anne Holm","email":"anne@example.dk"}`
	first := e.Post("/api/v1/people", key, "k1", body)
	mustStatus(t, first, 201)

	// Same body, other key order and spacing: a replay.
	replay := e.Post("/api/v1/people", key, "k1", "{ \"email\": \"anne@example.dk\",\n \"name\": \"Anne Holm\" }")
	mustStatus(t, replay, 200)
	if replay.Header.Get("Idempotent-Replayed") != "true" || replay.Header.Get("Location") != first.Header.Get("Location") ||
		string(mustJSON(t, replay.Body)) != string(mustJSON(t, first.Body)) {
		t.Fatalf("replay %v %s", replay.Header, replay.Raw)
	}
	mustStatus(t, e.Post("/api/v1/people", key, "k1", `{"name":"Anne Holm","email":"other@example.dk"}`), 409)
	mustStatus(t, e.Post("/api/v1/people", key, "k1", `not json`), 409)
	if n := len(e.Items(org)["person"]); n != 1 {
		t.Fatalf("%d people", n)
	}

	// A failed request leaves its key unused: fix the payload, same key.
	bad := e.Post("/api/v1/people", key, "k2", `{"name":"Bo","email":"not an address"}`)
	if bad.Status != 422 || bad.Body["field"] != "email" {
		t.Fatalf("bad e-mail: %d %s", bad.Status, bad.Raw)
	}
	mustStatus(t, e.Post("/api/v1/people", key, "k2", `{"name":"Bo","email":"bo@example.dk"}`), 201)
	// A conflict (duplicate e-mail) also leaves the key unused.
	mustStatus(t, e.Post("/api/v1/people", key, "k3", `{"name":"Bo","email":"BO@example.dk"}`), 422)
	mustStatus(t, e.Post("/api/v1/people", key, "k3", `{"name":"Bo","email":"bo2@example.dk"}`), 201)

	// Missing, empty and long keys.
	for _, k := range []string{"", strings.Repeat("x", 256)} {
		r := e.Post("/api/v1/people", key, k, `{"name":"C","email":"c@example.dk"}`)
		if r.Status != 422 || r.Body["field"] != "Idempotency-Key" {
			t.Fatalf("key %d chars: %d %s", len(k), r.Status, r.Raw)
		}
	}
	mustStatus(t, e.Post("/api/v1/people", key, strings.Repeat("é", 255), `{"name":"C","email":"c@example.dk"}`), 201)

	// Keys are scoped per organisation: B may use k1 for its own record.
	other := e.Key(e.Org("B"))
	mustStatus(t, e.Post("/api/v1/people", other, "k1", body), 201)

	// Honoured 24 hours, then free again.
	e.SetNow(time.Now().Add(24*time.Hour + time.Minute))
	mustStatus(t, e.Post("/api/v1/people", key, "k1", `{"name":"Dan","email":"dan@example.dk"}`), 201)
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

func TestMoneyIsIntegerMinorUnits(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("11111111"))
	for _, v := range []string{`1250.00`, `12.5`, `"1250"`, `1e3`, `-1`, `true`, `1250.0`} {
		r := e.Post("/api/v1/matters", key, "money-"+v, `{"client_id":"`+cl+`","hourly_rate":`+v+`}`)
		if r.Status != 422 || r.Body["field"] != "hourly_rate" {
			t.Errorf("hourly_rate %s: %d %s", v, r.Status, r.Raw)
		}
	}
	if len(e.Items(org)["matter"]) != 0 {
		t.Fatal("a matter with a decimal rate was created")
	}
	m := im.Matter(cl, `,"hourly_rate":1250`)
	if m["hourly_rate"] != 1250.0 {
		t.Fatalf("rate %v", m["hourly_rate"])
	}
}

func TestCPRIsNeverAccepted(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	bodies := []string{
		`{"name":"A","email":"a@example.dk","cpr":"0101901234"}`,
		`{"name":"A","email":"a@example.dk","CPR":"x"}`,
		`{"name":"A","email":"a@example.dk","cpr_number":null}`,
		`{"name":"A","email":"a@example.dk","cprNr":"x"}`,
		`{"name":"A","email":"a@example.dk","C.P.R.":"x"}`,
		`{"name":"A","email":"a@example.dk","personnummer":"x"}`,
		`{"name":"A","email":"a@example.dk","identity":{"documents":[{"Cpr":"x"}]}}`,
		`{"name":"010190-1234","email":"a@example.dk"}`,
		`{"name":"A","email":"a@example.dk","phone":"0101901234"}`,
	}
	for i, b := range bodies {
		r := e.Post("/api/v1/people", key, fmt.Sprintf("cpr-%d", i), b)
		if r.Status != 422 || !strings.Contains(r.Body["message"].(string), "CPR") {
			t.Errorf("%s: %d %s", b, r.Status, r.Raw)
		}
	}
	if len(e.Items(org)["person"]) != 0 {
		t.Fatal("a person with a CPR was created")
	}
	mustStatus(t, e.Post("/api/v1/people", key, "ok", `{"name":"A","email":"a@example.dk","phone":"+45 12 34 56 78"}`), 201)
}

func TestKYCRule(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("11111111"))
	parties := party.NewStore(e.DB)
	now := time.Now()
	set := func(status party.KYCStatus, expires time.Time) {
		t.Helper()
		if _, err := parties.SetKYC(context.Background(), org, cl, status, expires, e.Now()); err != nil {
			t.Fatal(err)
		}
	}
	active := `{"client_id":"` + cl + `","status":"active"}`
	refused := func(why string) {
		t.Helper()
		r := e.Post("/api/v1/matters", key, "kyc-"+why, active)
		if r.Status != 422 || r.Body["field"] != "status" || !strings.Contains(r.Body["message"].(string), "dormant") {
			t.Fatalf("%s: %d %s", why, r.Status, r.Raw)
		}
	}
	refused("pending")
	set(party.KYCRejected, time.Time{})
	refused("rejected")
	set(party.KYCApproved, now.Add(-time.Hour))
	refused("expired")
	set(party.KYCApproved, now.Add(time.Hour))
	r := e.Post("/api/v1/matters", key, "kyc-ok", active)
	mustStatus(t, r, 201)
	if r.Body["data"].(map[string]any)["status"] != "active" {
		t.Fatal("not active")
	}
	set(party.KYCApproved, time.Time{}) // approved without expiry stays valid
	mustStatus(t, e.Post("/api/v1/matters", key, "kyc-ok-2", active), 201)
	// The client read shows the KYC state and moved in updated_since order.
	c := e.Get("/api/v1/clients/"+cl, key).Body["data"].(map[string]any)
	if c["kyc_status"] != "approved" || c["kyc_expires_at"] != nil {
		t.Fatalf("client %v", c)
	}
}

func TestMatterNumbers(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("11111111"))
	if n := im.Matter(cl, "")["matter_number"]; n != "SAG-1" {
		t.Fatalf("first number %v", n)
	}
	// An integrator's own numbers are kept; a taken one is refused.
	if n := im.Matter(cl, `,"matter_number":"SAG-2"`)["matter_number"]; n != "SAG-2" {
		t.Fatalf("sent number %v", n)
	}
	r := e.Post("/api/v1/matters", key, "dup", `{"client_id":"`+cl+`","matter_number":"SAG-2"}`)
	if r.Status != 422 || r.Body["field"] != "matter_number" {
		t.Fatalf("taken number: %d %s", r.Status, r.Raw)
	}
	// The counter steps over SAG-2, which was taken by hand.
	if n := im.Matter(cl, "")["matter_number"]; n != "SAG-3" {
		t.Fatalf("auto number after a taken one %v", n)
	}
	mustStatus(t, e.Post("/api/v1/matters", key, "bad", `{"client_id":"`+cl+`","matter_number":"  "}`), 201) // blank = auto
	r = e.Post("/api/v1/matters", key, "bad2", `{"client_id":"`+cl+`","matter_number":"SAG 7!"}`)
	if r.Status != 422 || r.Body["field"] != "matter_number" {
		t.Fatalf("bad number: %d %s", r.Status, r.Raw)
	}
}

func TestTimeEntryDerivations(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key, clientID := e.KeyWith(auth.KeyRequest{OrgID: org})
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("11111111"))
	withRate := im.Matter(cl, `,"hourly_rate":100000`)["id"].(string)
	noRate := im.Matter(cl, "")["id"].(string)
	user := "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10"
	cases := []struct {
		body   string
		rate   float64
		amount float64
		user   string
	}{
		{`{"matter_id":"` + withRate + `","date":"2025-01-02","duration_minutes":60}`, 100000, 100000, clientID},
		{`{"matter_id":"` + withRate + `","date":"2025-01-02","duration_minutes":1,"hourly_rate":90}`, 90, 2, clientID}, // 1.5 → 2
		{`{"matter_id":"` + withRate + `","date":"2025-01-02","duration_minutes":1,"hourly_rate":89}`, 89, 1, user},     // 1.48 → 1
		{`{"matter_id":"` + noRate + `","date":"2025-01-02","duration_minutes":7,"hourly_rate":0}`, 0, 0, user},
	}
	for i, c := range cases {
		body := c.body
		if c.user == user {
			body = strings.TrimSuffix(body, "}") + `,"user_id":"` + user + `"}`
		}
		te := im.Post("/api/v1/time-entries", body)
		if te["hourly_rate"] != c.rate || te["amount"] != c.amount || te["user_id"] != c.user {
			t.Errorf("case %d: %v", i, te)
		}
	}
	r := e.Post("/api/v1/time-entries", key, "norate", `{"matter_id":"`+noRate+`","date":"2025-01-02","duration_minutes":7}`)
	if r.Status != 422 || r.Body["field"] != "hourly_rate" {
		t.Fatalf("no rate anywhere: %d %s", r.Status, r.Raw)
	}
	closed := apitest.Matter(&party.Client{ID: cl}, "closed", time.Now())
	e.Put(org, closed)
	r = e.Post("/api/v1/time-entries", key, "closed", `{"matter_id":"`+closed.ID+`","date":"2025-01-02","duration_minutes":7,"hourly_rate":1}`)
	if r.Status != 422 || r.Body["field"] != "matter_id" {
		t.Fatalf("time on a closed matter: %d %s", r.Status, r.Raw)
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
		mustStatus(t, r, 201)
		if got, ok := afterAuth(e.Calls.Ops()); !ok || !slices.Equal(got, c.first) {
			t.Errorf("%s first create: %v, want the authentication's two, then %v", c.path, e.Calls.Ops(), c.first)
		}
		if c.path == "/api/v1/matters" {
			matterID = r.Body["data"].(map[string]any)["id"].(string)
		}
		e.Calls.Reset()
		mustStatus(t, e.Post(c.path, key, "rt-"+c.body, c.body), 200)
		if got, ok := afterAuth(e.Calls.Ops()); !ok || !slices.Equal(got, c.replay) {
			t.Errorf("%s replay: %v, want the authentication's two, then %v", c.path, e.Calls.Ops(), c.replay)
		}
	}
	e.Calls.Reset()
	mustStatus(t, e.Post("/api/v1/time-entries", key, "rt-te", `{"matter_id":"`+matterID+`","date":"2025-01-02","duration_minutes":7,"hourly_rate":1}`), 201)
	if got, ok := afterAuth(e.Calls.Ops()); !ok || !slices.Equal(got, []string{"GetItem", "TransactWriteItems"}) {
		t.Errorf("time entry create: %v", e.Calls.Ops()) // + its matter
	}
}

func TestConcurrentIdenticalCreates(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 1000})
	org := e.Org("A")
	key := e.Key(org)
	body := `{"name":"Nordlys ApS","cvr":"12345678"}`
	statuses := make(chan int, 50)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- e.Post("/api/v1/companies", key, "same-key", body).Status
		}()
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[201] != 1 || counts[200]+counts[409] != 49 {
		t.Fatalf("statuses %v: want one 201, the rest 200 or 409", counts)
	}
	if n := len(e.Items(org)["company"]); n != 1 {
		t.Fatalf("%d companies", n)
	}
}

func TestConcurrentSameEmailUnderDifferentKeys(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 1000})
	org := e.Org("A")
	key := e.Key(org)
	for round := range 10 {
		email := fmt.Sprintf("race%d@example.dk", round)
		statuses := make(chan int, 2)
		for i := range 2 {
			go func() {
				statuses <- e.Post("/api/v1/people", key, fmt.Sprintf("r%d-%d", round, i), `{"name":"A","email":"`+email+`"}`).Status
			}()
		}
		a, b := <-statuses, <-statuses
		if !(a == 201 && b == 422 || a == 422 && b == 201) {
			t.Fatalf("round %d: %d and %d", round, a, b)
		}
	}
	if n := len(e.Items(org)["person"]); n != 10 {
		t.Fatalf("%d people", n)
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
					mustStatus(t, r, 201) // every call of this create has had its turn
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

func TestCrashBeforeTheTransactionLeavesTheKeyFree(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	e.SetNow(time.Now())
	org := e.Org("A")
	key := e.Key(org)
	body := `{"name":"A","email":"a@example.dk"}`
	// Calls of a create: 1 and 2 authenticate (the client's read and its
	// count), 3 the transaction. Failing 3 is a process that died before it
	// committed.
	e.Faults.Arm(apitest.FailBefore, 3)
	r := e.Post("/api/v1/people", key, "crash", body)
	e.Faults.Disarm()
	if r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("store failure: %d %s", r.Status, r.Raw)
	}
	if len(e.Items(org)["person"]) != 0 || len(e.Items(org)["idempotency"]) != 0 {
		t.Fatal("the crashed create left data")
	}
	// Nothing holds the key: the retry creates at once, and replays after.
	mustStatus(t, e.Post("/api/v1/people", key, "crash", body), 201)
	mustStatus(t, e.Post("/api/v1/people", key, "crash", body), 200)
	if n := len(e.Items(org)["person"]); n != 1 {
		t.Fatalf("%d people", n)
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

func attrS(item map[string]ddbtypes.AttributeValue, name string) string {
	if v, ok := item[name].(*ddbtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func TestInProgressConflictSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	e.SetNow(time.Now())
	key := e.Key(e.Org("A"))
	body := `{"name":"A","email":"a@example.dk"}`
	// The transaction (the person, its person.created, the key's binding)
	// loses, on the binding (its last item), to a concurrent one that has
	// not committed yet: DynamoDB's answer when two requests with one key
	// are in flight together.
	conflict := &ddbtypes.TransactionCanceledException{Message: aws.String("Transaction cancelled"),
		CancellationReasons: []ddbtypes.CancellationReason{{Code: aws.String("None")}, {Code: aws.String("None")}, {Code: aws.String("TransactionConflict")}}}
	e.Faults.ArmError(conflict, 3) // after the client's read and count
	busy := e.Post("/api/v1/people", key, "k", body)
	e.Faults.Disarm()
	if busy.Status != 409 || busy.Header.Get("Retry-After") != "1" || !strings.Contains(busy.Body["message"].(string), "still being processed") {
		t.Fatalf("in progress: %d %v %s", busy.Status, busy.Header, busy.Raw)
	}
	mustStatus(t, e.Post("/api/v1/people", key, "k", body), 201)
	other := e.Post("/api/v1/people", key, "k", `{"name":"B","email":"b@example.dk"}`)
	if other.Status != 409 || other.Header.Get("Retry-After") != "" {
		t.Fatalf("different body: %d %v (not retryable as sent)", other.Status, other.Header)
	}
}
