package matter_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
)

// TestMoneyIsIntegerMinorUnits: a matter's hourly_rate is whole minor units;
// a decimal, a string, an exponent, a negative or a boolean is a 422 on
// hourly_rate, with nothing created.
func TestMoneyIsIntegerMinorUnits(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("11111111"))
	for _, v := range []string{`1250.00`, `12.5`, `"1250"`, `1e3`, `-1`, `true`, `1250.0`} {
		t.Run(v, func(t *testing.T) {
			r := e.For(t).Post("/api/v1/matters", key, "money-"+v, `{"client_id":"`+cl+`","hourly_rate":`+v+`}`)
			if r.Status != 422 || r.Body["field"] != "hourly_rate" {
				t.Errorf("hourly_rate %s: %d %s", v, r.Status, r.Raw)
			}
		})
	}
	if len(e.Items(org)["matter"]) != 0 {
		t.Fatal("a matter with a decimal rate was created")
	}
	m := im.Matter(cl, `,"hourly_rate":1250`)
	if m["hourly_rate"] != 1250.0 {
		t.Fatalf("rate %v", m["hourly_rate"])
	}
}

// TestKYCRule: a matter is created active only for a client whose KYC is
// approved and not expired (import rule 8); pending, rejected and
// expired are each a 422 on status that says dormant.
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
	apitest.MustStatus(t, r, 201)
	if r.Body["data"].(map[string]any)["status"] != "active" {
		t.Fatal("not active")
	}
	set(party.KYCApproved, time.Time{}) // approved without expiry stays valid
	apitest.MustStatus(t, e.Post("/api/v1/matters", key, "kyc-ok-2", active), 201)
	// The client read shows the KYC state and moved in updated_since order.
	c := e.Get("/api/v1/clients/"+cl, key).Body["data"].(map[string]any)
	if c["kyc_status"] != "approved" || c["kyc_expires_at"] != nil {
		t.Fatalf("client %v", c)
	}
}

// TestMatterNumbers: numbers are drawn SAG-1, SAG-2, …, an integrator's
// own number is kept, a taken or malformed one is refused, and the
// counter steps over a number taken by hand.
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
	apitest.MustStatus(t, e.Post("/api/v1/matters", key, "bad", `{"client_id":"`+cl+`","matter_number":"  "}`), 201) // blank = auto
	r = e.Post("/api/v1/matters", key, "bad2", `{"client_id":"`+cl+`","matter_number":"SAG 7!"}`)
	if r.Status != 422 || r.Body["field"] != "matter_number" {
		t.Fatalf("bad number: %d %s", r.Status, r.Raw)
	}
}

// TestPerPage: the default page of 50 and its meta; a per_page outside
// 1–100 or not a whole number is a 422 on per_page; unknown parameters
// are ignored.
func TestPerPage(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	w := e.NewWorld("A")
	r := e.Get("/api/v1/matters", w.Key)
	apitest.MustStatus(t, r, 200)
	if meta := r.Body["meta"].(map[string]any); meta["per_page"] != 50.0 || meta["count"] != 10.0 || meta["has_more"] != false {
		t.Fatalf("meta %v", meta)
	}
	if r.Next() != "" || r.Body["links"].(map[string]any)["next"] != nil {
		t.Fatal("links.next not null on the last page")
	}
	for _, bad := range []string{"0", "101", "-1", "abc", "1.5", "", "1e2"} {
		t.Run("per_page="+bad, func(t *testing.T) {
			r := e.For(t).Get("/api/v1/matters?per_page="+url.QueryEscape(bad), w.Key)
			if r.Status != 422 || r.Body["field"] != "per_page" {
				t.Errorf("per_page=%q: %d %s", bad, r.Status, r.Raw)
			}
		})
	}
	apitest.MustStatus(t, e.Get("/api/v1/matters?per_page=100", w.Key), 200)
	apitest.MustStatus(t, e.Get("/api/v1/matters?per_page=1&nonsense=1&order=desc", w.Key), 200) // unknown parameters are ignored
}

// TestPaginationVisitsEveryItemOnce: following links.next at each page
// size visits every matter once, in updated_at order.
func TestPaginationVisitsEveryItemOnce(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	w := e.NewWorld("A")
	var want []string
	for _, m := range w.Matters { // created in updated_at order
		want = append(want, m.ID)
	}
	for _, per := range []int{1, 3, 10, 11} {
		t.Run(fmt.Sprintf("per_page=%d", per), func(t *testing.T) {
			got := e.For(t).Collect(fmt.Sprintf("/api/v1/matters?per_page=%d", per), w.Key)
			if !slices.Equal(got, want) {
				t.Fatalf("per_page=%d: got %v\nwant %v", per, got, want)
			}
		})
	}
}

// TestFilteredPagesAreFilled: a filter that keeps one matter in ten still
// fills each page (the store reads on until per_page are found).
func TestFilteredPagesAreFilled(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	co := apitest.Company(t0)
	cl := apitest.ClientOf(co, t0)
	e.Put(org, co, cl)
	var want []string
	for i := range 300 { // one active matter in every ten
		status := matter.Closed
		if i%10 == 0 {
			status = matter.Active
		}
		m := apitest.Matter(cl, status, t0.Add(time.Duration(i)*time.Minute))
		e.Put(org, m)
		if status == "active" {
			want = append(want, m.ID)
		}
	}
	r := e.Get("/api/v1/matters?client_id="+cl.ID+"&status=active&per_page=25", key)
	apitest.MustStatus(t, r, 200)
	if got := r.IDs(); len(got) != 25 || !slices.Equal(got, want[:25]) {
		t.Fatalf("first page: %d items", len(got))
	}
	r = e.Get(r.Next(), key)
	if got := r.IDs(); !slices.Equal(got, want[25:]) || r.Next() != "" {
		t.Fatalf("second page: %d items, next %q", len(got), r.Next())
	}
}

// TestCursors: a cursor carries its filter; a tampered, truncated or
// foreign cursor (another resource's, another organisation's, another
// filter's) is a 422 on cursor.
func TestCursors(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	a, b := e.NewWorld("A"), e.NewWorld("B")
	first := e.Get("/api/v1/matters?status=active&per_page=1", a.Key)
	next := first.Next()
	u, _ := url.Parse(next)
	cur := u.Query().Get("cursor")

	// The cursor carries the filter: following it alone stays on active matters.
	for _, id := range e.For(t).Collect(next, a.Key) {
		if i := slices.IndexFunc(a.Matters, func(m *matter.Matter) bool { return m.ID == id }); a.Matters[i].Status != "active" {
			t.Fatalf("page 2 holds a %s matter", a.Matters[i].Status)
		}
	}
	apitest.MustStatus(t, e.Get("/api/v1/matters?status=active&cursor="+cur, a.Key), 200) // same filter alongside: fine

	tampered := []byte(cur)
	tampered[len(tampered)/2] ^= 1
	peopleCursor := e.Get("/api/v1/people?per_page=1", a.Key).Next()
	pc, _ := url.Parse(peopleCursor)
	cases := map[string]string{
		"tampered":             "/api/v1/matters?cursor=" + string(tampered),
		"garbage":              "/api/v1/matters?cursor=%00%ff",
		"truncated":            "/api/v1/matters?cursor=" + cur[:10],
		"other resource":       "/api/v1/matters?cursor=" + pc.Query().Get("cursor"),
		"conflicting filter":   "/api/v1/matters?status=dormant&cursor=" + cur,
		"other organisation":   "/api/v1/matters?cursor=" + cur, // sent with B's key below
		"filter added on page": "/api/v1/matters?client_id=" + a.Clients[0].ID + "&cursor=" + cur,
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			key := a.Key
			if name == "other organisation" {
				key = b.Key
			}
			r := e.For(t).Get(path, key)
			if r.Status != 422 || r.Body["field"] != "cursor" {
				t.Errorf("%s: %d %s", name, r.Status, r.Raw)
			}
		})
	}
}

// TestConditionalReads: a matter's ETag is stable while it is unchanged;
// If-None-Match with it (weak, in a list, or *) is a 304 that keeps the
// rate-limit headers; a stale tag or a change gives the body again.
func TestConditionalReads(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	w := e.NewWorld("A")
	path := "/api/v1/matters/" + w.Matters[0].ID
	first := e.Get(path, w.Key)
	etag := first.Header.Get("ETag")
	if len(etag) != 34 || !strings.HasPrefix(etag, `"`) {
		t.Fatalf("ETag %q", etag)
	}
	if again := e.Get(path, w.Key); again.Header.Get("ETag") != etag {
		t.Fatal("the ETag of an unchanged resource changed")
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		req, _ := http.NewRequest("GET", e.Server.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+w.Key)
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
	req.Header.Set("Authorization", "Bearer "+w.Key)
	req.Header.Set("If-None-Match", `"stale"`)
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a stale ETag: %d", resp.StatusCode)
	}
	// A change gives a new ETag: the client's copy is stale.
	if _, err := matter.NewStore(e.DB).SetStatus(t.Context(), w.Org, w.Matters[0].ID, "closed", time.Now()); err != nil {
		t.Fatal(err)
	}
	if e.Get(path, w.Key).Header.Get("ETag") == etag {
		t.Fatal("ETag unchanged after a change")
	}
}
