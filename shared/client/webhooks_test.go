package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/client"
	"github.com/practice-api/practice-api/shared/openapi"
)

// TestWebhookManagement: an endpoint's whole life through the client, for
// organisations at once: create (with its secret), list, read, a test
// event (to a receiver that is not there: the attempt says so), the
// delivery log, a refused retry of that test, an update, a rotation (a
// new secret), and a delete.
func TestWebhookManagement(t *testing.T) {
	e := apitest.New(t, apitest.Options{RateLimit: 1000})
	ctx := context.Background()
	errs := make(chan error, 4)
	for i := range cap(errs) {
		c := client.New(e.Server.URL+"/api/v1", e.Key(e.Org(string(rune('A'+i)))))
		go func() { errs <- webhookLife(ctx, c) }()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func webhookLife(ctx context.Context, c *client.Client) error {
	fail := func(what string, v any, err error) error {
		return errors.New(what + ": " + strings.TrimSpace(jsonOf(v)) + " " + errString(err))
	}
	var apiErr *client.Error
	if _, _, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "https://127.0.0.1:9/hooks", EventTypes: []string{"webhook.test"}}); !errors.As(err, &apiErr) || apiErr.Field != "event_types" {
		return fail("subscribing to webhook.test", nil, err)
	}
	w, secret, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "https://127.0.0.1:9/hooks", EventTypes: []string{"matter.created"}})
	if err != nil || w.ID == "" || !w.IsActive || !strings.HasPrefix(secret, "whsec_") {
		return fail("create", w, err)
	}
	var listed []string
	for h, err := range c.Webhooks(ctx) {
		if err != nil {
			return fail("list", nil, err)
		}
		listed = append(listed, h.ID)
	}
	if got, err := c.Webhook(ctx, w.ID); err != nil || !slices.Equal(listed, []string{w.ID}) || got.URL != w.URL {
		return fail("read", got, err)
	}
	a, err := c.TestWebhook(ctx, w.ID)
	if err != nil || a.Succeeded || a.EventType != "webhook.test" || a.Error == "" {
		return fail("test to nowhere", a, err)
	}
	var log []client.WebhookDelivery
	for d, err := range c.Deliveries(ctx, w.ID) {
		if err != nil {
			return fail("deliveries", nil, err)
		}
		log = append(log, d)
	}
	if len(log) != 1 || log[0].ID != a.ID {
		return fail("the delivery log", log, nil)
	}
	if _, err := c.RetryDelivery(ctx, w.ID, a.ID); !errors.As(err, &apiErr) || apiErr.Status != 409 || apiErr.Code != "conflict" {
		return fail("retry of a test", nil, err)
	}
	off := false
	u, replay, err := c.UpdateWebhook(ctx, w.ID, client.WebhookUpdate{IsActive: &off, EventTypes: []string{"matter.created", "invoice.paid"}})
	if err != nil || u.IsActive || len(u.EventTypes) != 2 || replay != nil {
		return fail("update", u, err)
	}
	r, newSecret, err := c.RotateSecret(ctx, w.ID, time.Hour)
	if err != nil || newSecret == secret || !strings.HasPrefix(newSecret, "whsec_") || r.PreviousSecretExpiresAt == "" {
		return fail("rotate", r, err)
	}
	if err := c.DeleteWebhook(ctx, w.ID); err != nil {
		return fail("delete", nil, err)
	}
	if _, err := c.Webhook(ctx, w.ID); !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "not_found" {
		return fail("read after delete", nil, err)
	}
	return nil
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestTheClientCoversTheDocument: each create body of the client takes
// every field its operation takes, and each resource type holds every
// field the API returns, as the OpenAPI document says.
func TestTheClientCoversTheDocument(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Schema struct {
						Ref string `json:"$ref"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	props := func(schema string) []string {
		var out []string
		for p := range doc.Components.Schemas[schema].Properties {
			out = append(out, p)
		}
		slices.Sort(out)
		return out
	}
	body := func(path string) string {
		ref := doc.Paths[path]["post"].RequestBody.Content["application/json"].Schema.Ref
		return ref[strings.LastIndex(ref, "/")+1:]
	}
	for _, c := range []struct {
		schema string
		typ    any
	}{
		{body("/companies"), client.NewCompany{}}, {body("/people"), client.NewPerson{}}, {body("/clients"), client.NewClient{}},
		{body("/matters"), client.NewMatter{}}, {body("/time-entries"), client.NewTimeEntry{}}, {body("/webhooks"), client.NewWebhook{}},
		{"WebhookUpdate", client.WebhookUpdate{}},
		{"Matter", client.Matter{}}, {"Client", client.Engagement{}}, {"Person", client.Person{}}, {"Company", client.Company{}},
		{"TimeEntry", client.TimeEntry{}}, {"InvoiceDetail", client.Invoice{}}, {"Document", client.Document{}},
		{"WebhookEndpoint", client.Webhook{}}, {"WebhookDelivery", client.WebhookDelivery{}}, {"DeliveryRetry", client.DeliveryRetry{}},
		{"Replay", client.Replay{}},
	} {
		want := props(c.schema)
		var got []string
		rt := reflect.TypeOf(c.typ)
		for i := range rt.NumField() {
			if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				got = append(got, name)
			}
		}
		slices.Sort(got)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: the client has %v, the document %v", rt.Name(), got, want)
		}
	}
}
