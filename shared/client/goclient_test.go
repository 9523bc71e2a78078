package client_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/client"
)

// TestGoClient: the Go client against the API on DynamoDB Local: its
// iterator follows links.next and rides out 429s (waiting what
// Retry-After says, on the API's clock), filters, creates and replays,
// answers a refusal and a 404 as an *Error, and without retries gives
// the 429 back.
func TestGoClient(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 3})
	start := time.Now().Truncate(time.Minute).Add(time.Minute)
	e.SetNow(start.Add(30 * time.Second))
	w := e.NewWorld("A")
	c := client.New(e.Server.URL+"/api/v1", w.Key)
	var slept []time.Duration
	c.Sleep = func(_ context.Context, d time.Duration) error { // the API's clock moves instead
		slept = append(slept, d)
		e.SetNow(e.Now().Add(d))
		return nil
	}
	ctx := context.Background()
	// Ten matters at three requests a minute, a page of two each: the
	// iterator follows links.next and rides out the 429s.
	var got []string
	for m, err := range c.Matters(ctx, url.Values{"per_page": {"2"}}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.ID)
	}
	if len(got) != 10 || len(slept) == 0 || slept[0] != 30*time.Second {
		t.Fatalf("%d matters, slept %v", len(got), slept)
	}
	active := 0
	for m, err := range c.Matters(ctx, url.Values{"status": {"active"}, "per_page": {"1"}}) {
		if err != nil || m.Status != "active" {
			t.Fatalf("%v %v", m, err)
		}
		active++
	}
	if active != 4 {
		t.Fatalf("%d active matters", active)
	}
	co, r, err := c.CreateCompany(ctx, "crm-1", client.NewCompany{Name: "Nordlys ApS", CVR: "12 34 56 78"})
	if err != nil || r.Status != 201 || r.Replayed || co.CVR != "12345678" {
		t.Fatalf("%v %+v %v", co, r, err)
	}
	again, r, err := c.CreateCompany(ctx, "crm-1", client.NewCompany{Name: "Nordlys ApS", CVR: "12 34 56 78"})
	if err != nil || r.Status != 200 || !r.Replayed || again.ID != co.ID {
		t.Fatalf("replay %v %+v %v", again, r, err)
	}
	_, _, err = c.CreateCompany(ctx, "", client.NewCompany{Name: "Kopi ApS", CVR: "12345678"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 422 || apiErr.Field != "cvr" {
		t.Fatalf("duplicate CVR: %v", err)
	}
	if _, err := c.Matter(ctx, "00000000-0000-4000-8000-000000000000"); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("absent matter: %v", err)
	}
	c.MaxRetries = 0
	for range 5 {
		_, err = c.Matter(ctx, w.Matters[0].ID)
	}
	if !errors.As(err, &apiErr) || apiErr.Status != 429 || apiErr.RetryAfter <= 0 {
		t.Fatalf("without retries: %v", err)
	}
}
