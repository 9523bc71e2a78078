package client_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/client"
)

// The client against the real API (httptest, embedded store): the import
// chain with typed creates and replays, typed errors, and cursor iteration.
func TestImportChainErrorsAndIteration(t *testing.T) {
	e := apitest.New(t, apitest.Options{RateLimit: 1000})
	e.SetNow(time.Now().Truncate(time.Minute).Add(time.Second)) // the counts below must fall in one minute's window
	org := e.Org("A")
	c := client.New(e.Server.URL+"/api/v1", e.Key(org))
	ctx := context.Background()

	co, r, err := c.CreateCompany(ctx, "crm-1", client.NewCompany{Name: "Nordlys ApS", CVR: "12 34 56 78"})
	if err != nil || r.Status != 201 || r.Replayed || co.CVR != "12345678" || r.Location == "" {
		t.Fatalf("company: %+v %+v %v", co, r, err)
	}
	again, r, err := c.CreateCompany(ctx, "crm-1", client.NewCompany{Name: "Nordlys ApS", CVR: "12 34 56 78"})
	if err != nil || r.Status != 200 || !r.Replayed || again.ID != co.ID {
		t.Fatalf("replay: %+v %+v %v", again, r, err)
	}
	if r.RateLimit.Limit != 1000 || r.RateLimit.Remaining != 998 || r.RateLimit.Reset.IsZero() {
		t.Fatalf("rate limit %+v", r.RateLimit)
	}
	_, _, err = c.CreateCompany(ctx, "crm-1", client.NewCompany{Name: "Another name", CVR: "12345678"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 409 || apiErr.RetryAfter != 0 || apiErr.Code != "idempotency_key_reused" {
		t.Fatalf("same key, other body: %v", err)
	}
	// The CVR is taken: the answer names the company that holds it.
	_, _, err = c.CreateCompany(ctx, "crm-9", client.NewCompany{Name: "Nordlys Kopi ApS", CVR: "12345678"})
	if !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Code != "already_exists" || apiErr.ExistingID != co.ID || apiErr.Field != "cvr" {
		t.Fatalf("duplicate CVR: %+v", apiErr)
	}
	cl, _, err := c.CreateClient(ctx, "crm-1", client.NewClient{CompanyID: co.ID})
	if err != nil || cl.Type != "company" || cl.KYCStatus != "pending" {
		t.Fatalf("engagement: %+v %v", cl, err)
	}
	rate := int64(100000)
	m, _, err := c.CreateMatter(ctx, "case-1", client.NewMatter{ClientID: cl.ID, HourlyRate: &rate})
	if err != nil || m.HourlyRate == nil || *m.HourlyRate != rate {
		t.Fatalf("matter: %+v %v", m, err)
	}
	_, _, err = c.CreateMatter(ctx, "case-2", client.NewMatter{ClientID: cl.ID, Status: "active"})
	if !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Field != "status" || len(apiErr.Errors) != 1 || apiErr.Code != "invalid_request" {
		t.Fatalf("active without KYC: %v", err)
	}
	if got, err := c.Matter(ctx, m.ID); err != nil || got.ID != m.ID {
		t.Fatalf("read: %+v %v", got, err)
	}

	want := map[string]bool{}
	for i := range 7 {
		te, _, err := c.CreateTimeEntry(ctx, "hours-"+strconv.Itoa(i), client.NewTimeEntry{MatterID: m.ID, Date: "2025-03-1" + strconv.Itoa(i), DurationMinutes: 30})
		if err != nil || te.Amount != 50000 || te.Status != "draft" {
			t.Fatalf("entry %d: %+v %v", i, te, err)
		}
		want[te.ID] = true
	}
	seen := 0
	for te, err := range c.TimeEntries(ctx, url.Values{"matter_id": {m.ID}, "per_page": {"2"}}) { // four pages
		if err != nil {
			t.Fatal(err)
		}
		if !want[te.ID] {
			t.Fatalf("unexpected or repeated entry %s", te.ID)
		}
		delete(want, te.ID)
		seen++
	}
	if seen != 7 || len(want) != 0 {
		t.Fatalf("iterated %d entries, %d missed", seen, len(want))
	}
	for _, err := range c.Matters(ctx, url.Values{"status": {"bogus"}}) {
		if !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Field != "status" {
			t.Fatalf("bad filter: %v", err)
		}
	}

	reader := client.New(e.Server.URL+"/api/v1", e.Key(org, "matters:read"))
	if _, _, err := reader.CreateCompany(ctx, "x", client.NewCompany{Name: "X", CVR: "87654321"}); !errors.As(err, &apiErr) || apiErr.Status != 403 || apiErr.RequiredScope != "parties:write" || apiErr.Code != "insufficient_scope" {
		t.Fatalf("missing scope: %v", err)
	}
}

// A 429 waits exactly the server's Retry-After, then succeeds; with no
// retries left the 429 is returned as an error carrying Retry-After.
func TestRateLimitIsHonoured(t *testing.T) {
	e := apitest.New(t, apitest.Options{RateLimit: 2})
	org := e.Org("A")
	start := time.Now().Truncate(time.Minute).Add(time.Minute).Add(15 * time.Second)
	e.SetNow(start)
	c := client.New(e.Server.URL+"/api/v1", e.Key(org))
	var waits []time.Duration
	c.Sleep = func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		e.SetNow(e.Now().Add(d)) // the API's clock moves as if we slept
		return nil
	}
	ctx := context.Background()
	for range 3 { // the third is over the limit: wait for the next window
		for _, err := range c.Matters(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(waits) != 1 || waits[0] != 45*time.Second {
		t.Fatalf("waits %v, want [45s] (the rest of the minute)", waits)
	}

	c.MaxRetries = 0
	c.Sleep = func(context.Context, time.Duration) error { t.Fatal("slept without retries"); return nil }
	var apiErr *client.Error
	var last error
	for range 3 {
		for _, err := range c.Matters(ctx, nil) {
			last = err
		}
	}
	if !errors.As(last, &apiErr) || apiErr.Status != 429 || apiErr.RetryAfter <= 0 {
		t.Fatalf("no retries left: %v", last)
	}
}

// The feed and replays through the client: Events iterates every event in
// sequence across pages, EventsPage says where to go on, Replay queues a
// window to an endpoint, and a second replay at once is a 409 with
// Retry-After (retried by the client while it has retries, returned when
// it has none).
func TestEventsAndReplay(t *testing.T) {
	e := apitest.New(t, apitest.Options{RateLimit: 1000})
	org := e.Org("A")
	c := client.New(e.Server.URL+"/api/v1", e.Key(org))
	ctx := context.Background()
	since := time.Now().Add(-time.Minute)
	co, _, err := c.CreateCompany(ctx, "", client.NewCompany{Name: "Fjord ApS", CVR: "44556677"})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := c.CreateClient(ctx, "", client.NewClient{CompanyID: co.ID})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, _, err := c.CreateMatter(ctx, "", client.NewMatter{ClientID: cl.ID}); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []int64
	for ev, err := range c.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.OrganizationID != org || len(ev.Data) == 0 {
			t.Fatalf("event %+v", ev)
		}
		if ev.Event != "matter.created" {
			continue // the company's and the client's (docs/api.md's table of events)
		}
		seqs = append(seqs, ev.Sequence)
	}
	if len(seqs) != 5 || !slices.IsSorted(seqs) || slices.Compact(slices.Clone(seqs))[4] != seqs[4] {
		t.Fatalf("sequences %v", seqs)
	}
	p, err := c.EventsPage(ctx, seqs[1], 2, "matter.created")
	if err != nil || len(p.Data) != 2 || p.Data[0].Sequence != seqs[2] || !p.Meta.HasMore || p.Meta.NextAfter != seqs[3] {
		t.Fatalf("page after the second: %+v %v", p, err)
	}

	var hook struct{ Data struct{ ID string } }
	if _, err := c.Do(ctx, "POST", "/webhooks", nil, map[string]any{"url": "https://127.0.0.1:9/hook", "event_types": []string{"matter.created"}}, &hook); err != nil {
		t.Fatal(err)
	}
	r, err := c.Replay(ctx, hook.Data.ID, since, time.Time{})
	if err != nil || r.Queued != 5 || r.Truncated || r.NextSince != nil || r.EndpointID != hook.Data.ID {
		t.Fatalf("replay: %+v %v", r, err)
	}
	c.MaxRetries = 0
	var apiErr *client.Error
	if _, err := c.Replay(ctx, hook.Data.ID, since, time.Time{}, "matter.created"); !errors.As(err, &apiErr) || apiErr.Status != 409 || apiErr.RetryAfter <= 0 {
		t.Fatalf("a second replay at once: %v", err)
	}
	if _, err := c.Replay(ctx, hook.Data.ID, since, time.Time{}, "invoice.paid"); !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Field != "event_types" {
		t.Fatalf("a replay of a type the endpoint does not take: %v", err)
	}
}
