package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/client"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
)

// orgData is one organisation's records, made through the API.
type orgData struct {
	c                               *client.Client
	org                             string
	company, person, client, matter string
	entries                         []string
	matters                         []string
}

func makeOrg(t *testing.T, e *apitest.Env, i int) *orgData {
	t.Helper()
	ctx := context.Background()
	d := &orgData{org: e.Org(fmt.Sprintf("Org %d", i))}
	d.c = client.New(e.Server.URL+"/api/v1", e.Key(d.org))
	must := func(id string, _ client.Response, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	co, r, err := d.c.CreateCompany(ctx, "", client.NewCompany{Name: "Nordlys ApS", CVR: fmt.Sprintf("1111%04d", i)})
	d.company = must(co.ID, r, err)
	p, r, err := d.c.CreatePerson(ctx, "", client.NewPerson{Name: "Ida Holm", Email: fmt.Sprintf("ida%d@example.dk", i)})
	d.person = must(p.ID, r, err)
	cl, r, err := d.c.CreateClient(ctx, "", client.NewClient{CompanyID: d.company})
	d.client = must(cl.ID, r, err)
	rate := int64(100000)
	for n := range 3 {
		m, r, err := d.c.CreateMatter(ctx, "", client.NewMatter{ClientID: d.client, HourlyRate: &rate, Title: fmt.Sprint(n)})
		d.matters = append(d.matters, must(m.ID, r, err))
	}
	d.matter = d.matters[0]
	for n := range 3 {
		te, r, err := d.c.CreateTimeEntry(ctx, "", client.NewTimeEntry{MatterID: d.matters[n%2], Date: fmt.Sprintf("2025-03-0%d", n+1), DurationMinutes: 30})
		d.entries = append(d.entries, must(te.ID, r, err))
	}
	return d
}

// TestBatchReadsByIDs: organisations at once, each reading its records by
// ids through every list (the Go client's ByID methods): one BatchGetItem
// after the request's count, whatever the ids; another organisation's ids
// and absent ones left out, repeated ones read once, the order of ids
// kept, the other filters combined (AND); a time entry found by its id
// alone, as its last change left it; and bad ids refused with a 422 on
// ids, while the organisations' good requests go on.
func TestBatchReadsByIDs(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 100000})
	orgs := make([]*orgData, 4)
	for i := range orgs {
		orgs[i] = makeOrg(t, e, i)
	}
	absent := "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10"
	var wg sync.WaitGroup
	for i, d := range orgs {
		other := orgs[(i+1)%len(orgs)]
		wg.Go(func() {
			ctx := context.Background()
			ms, err := d.c.MattersByID(ctx, d.matters[2], other.matter, absent, strings.ToUpper(d.matters[0]), d.matters[2])
			if err != nil || len(ms) != 2 || ms[0].ID != d.matters[2] || ms[1].ID != d.matters[0] {
				t.Errorf("org %d: matters by id %+v %v", i, ms, err)
			}
			// The other filters combine with ids.
			ms, err = client.ByIDs[client.Matter](ctx, d.c, "/matters", d.matters, url.Values{"status": {"active"}})
			if err != nil || len(ms) != 0 {
				t.Errorf("org %d: dormant matters filtered active: %+v %v", i, ms, err)
			}
			tes, err := d.c.TimeEntriesByID(ctx, d.entries[2], d.entries[0], other.entries[0])
			if err != nil || len(tes) != 2 || tes[0].ID != d.entries[2] || tes[1].ID != d.entries[0] || tes[0].MatterID != d.matters[0] {
				t.Errorf("org %d: time entries by id %+v %v", i, tes, err)
			}
			tes, err = client.ByIDs[client.TimeEntry](ctx, d.c, "/time-entries", d.entries, url.Values{"matter_id": {d.matters[1]}})
			if err != nil || len(tes) != 1 || tes[0].ID != d.entries[1] {
				t.Errorf("org %d: time entries of one matter by id %+v %v", i, tes, err)
			}
			if cs, err := d.c.CompaniesByID(ctx, d.company, other.company); err != nil || len(cs) != 1 || cs[0].CVR == "" {
				t.Errorf("org %d: companies %+v %v", i, cs, err)
			}
			if ps, err := d.c.PeopleByID(ctx, d.person); err != nil || len(ps) != 1 || ps[0].Email == "" {
				t.Errorf("org %d: people %+v %v", i, ps, err)
			}
			if cls, err := d.c.ClientsByID(ctx, d.client, other.client); err != nil || len(cls) != 1 || cls[0].KYCStatus != "pending" {
				t.Errorf("org %d: clients %+v %v", i, cls, err)
			}
			// Bad input: a 422 on ids, nothing else.
			for _, bad := range []url.Values{
				{"ids": {d.matter + ",nope"}}, {"ids": {d.matter + ","}}, {"ids": {strings.Repeat(d.matter+",", 100) + d.matter}},
				{"ids": {d.matter}, "cursor": {"abc"}},
			} {
				_, err := client.ByIDs[client.Matter](ctx, d.c, "/matters", nil, nil)
				if err != nil {
					t.Errorf("no ids: %v", err)
				}
				var apiErr *client.Error
				_, err = d.c.Do(ctx, "GET", "/matters?"+bad.Encode(), nil, nil, nil)
				field := "ids"
				if bad.Has("cursor") {
					field = "cursor"
				}
				if !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Field != field || apiErr.Code != "invalid_request" {
					t.Errorf("org %d: %s: %v", i, bad.Encode(), err)
				}
			}
		})
	}
	wg.Wait()

	// One read of the store after authentication, for 100 ids: a BatchGetItem.
	d := orgs[0]
	ids := slices.Repeat([]string{absent}, 97)
	ids = append(ids, d.matters...)
	for i := range ids[:97] {
		ids[i] = fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)
	}
	key := e.Key(d.org)
	e.Calls.Reset()
	r := e.Get("/api/v1/matters?ids="+strings.Join(ids, ","), key)
	// Authentication reads the client beside its count (a GetItem and an
	// UpdateItem at once, in either order); then one BatchGetItem.
	ops := e.Calls.Ops()
	auth := slices.Clone(ops[:min(2, len(ops))])
	slices.Sort(auth)
	if r.Status != 200 || len(r.Data()) != 3 || len(ops) != 3 || !slices.Equal(auth, []string{"GetItem", "UpdateItem"}) || ops[2] != "BatchGetItem" {
		t.Fatalf("100 ids: %d, %d records, calls %v", r.Status, len(r.Data()), ops)
	}
	if m := r.Body["meta"].(map[string]any); m["per_page"] != 100.0 || m["count"] != 3.0 || m["has_more"] != false || r.Body["links"].(map[string]any)["next"] != nil {
		t.Fatalf("meta %v links %v", m, r.Body["links"])
	}

	// A time entry's copy by id follows its changes: moved by the
	// application and billed, it reads as it is.
	ctx := context.Background()
	entries := timeentry.NewStore(e.DB)
	for _, st := range []timeentry.Status{timeentry.Submitted, timeentry.Approved} {
		if _, err := entries.SetStatus(ctx, d.org, d.entries[0], st, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	inv, err := billing.NewStore(e.DB).Create(ctx, d.org, billing.NewInvoice{MatterID: d.matter, IssueDate: "2025-03-31",
		Lines: []billing.Line{{Description: "Timer", Amount: 50000, TimeEntryID: d.entries[0]}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tes, err := d.c.TimeEntriesByID(ctx, d.entries[0])
	if err != nil || len(tes) != 1 || tes[0].Status != "invoiced" || tes[0].InvoiceID != inv.ID {
		t.Fatalf("the billed entry by id: %+v %v", tes, err)
	}
	if vs, err := d.c.InvoicesByID(ctx, inv.ID); err != nil || len(vs) != 1 || vs[0].Total != 50000 || vs[0].Lines != nil {
		t.Fatalf("invoices by id %+v %v", vs, err)
	}
	if _, err := billing.NewStore(e.DB).SetStatus(ctx, d.org, inv.ID, billing.Cancelled, time.Now()); err != nil {
		t.Fatal(err)
	}
	if tes, err := d.c.TimeEntriesByID(ctx, d.entries[0]); err != nil || len(tes) != 1 || tes[0].Status != "approved" || tes[0].InvoiceID != "" {
		t.Fatalf("the entry given back, by id: %+v %v", tes, err)
	}
	doc, err := document.NewStore(e.DB).Create(ctx, d.org, document.NewDocument{MatterID: d.matter, Name: "Aftale", Filename: "a.pdf", MimeType: "application/pdf", SizeBytes: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ds, err := d.c.DocumentsByID(ctx, doc.ID, absent); err != nil || len(ds) != 1 || ds[0].Name != "Aftale" {
		t.Fatalf("documents by id %+v %v", ds, err)
	}
	hook, _, err := d.c.CreateWebhook(ctx, client.NewWebhook{URL: "http://127.0.0.1:9/hooks", EventTypes: []string{"matter.created"}})
	if err != nil {
		t.Fatal(err)
	}
	// An endpoint by id: never its secret (the conformance check fails an
	// answer with a field the document does not list).
	if r := e.Get("/api/v1/webhooks?ids="+hook.ID+","+absent, key); r.Status != 200 || len(r.Data()) != 1 || strings.Contains(string(r.Raw), "secret\"") {
		t.Fatalf("webhooks by id: %d %s", r.Status, r.Raw)
	}
	if _, err := party.NewStore(e.DB).SetKYC(ctx, d.org, d.client, party.KYCApproved, time.Time{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if cls, err := d.c.ClientsByID(ctx, d.client); err != nil || len(cls) != 1 || cls[0].KYCStatus != "approved" {
		t.Fatalf("the approved client by id: %+v %v", cls, err)
	}
}

// TestEntriesWrittenBeforeCopiesAreBackfilled: an entry written without
// its copy by id (as every entry was before copies existed) is absent from
// a batch read until the release's data change writes its copy; the change
// leaves a copy already there as it is, and runs again harmlessly.
func TestEntriesWrittenBeforeCopiesAreBackfilled(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	d := makeOrg(t, e, 9)
	ctx := context.Background()
	old, err := timeentry.NewStore(e.DB).Get(ctx, d.org, d.matters[0], d.entries[0])
	if err != nil {
		t.Fatal(err)
	}
	// Another entry as an older release wrote it: no copy.
	legacy := old
	legacy.ID, legacy.Description = store.DateID(old.Date), "written before copies"
	legacy.SetKeys(d.org)
	item, err := store.Marshal(&legacy)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.DB.PutNew(ctx, item); err != nil {
		t.Fatal(err)
	}
	if got, err := d.c.TimeEntriesByID(ctx, legacy.ID, old.ID); err != nil || len(got) != 1 {
		t.Fatalf("before the backfill: %+v %v", got, err)
	}
	for range 2 {
		if err := timeentry.BackfillCopies(ctx, e.DB); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.c.TimeEntriesByID(ctx, legacy.ID, old.ID)
	if err != nil || len(got) != 2 || got[0].Description != "written before copies" || got[1].ID != old.ID {
		t.Fatalf("after the backfill: %+v %v", got, err)
	}
}
