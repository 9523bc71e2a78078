package apitest

import (
	"fmt"
	"testing"
)

// Importer creates records in the spec's order through the API, each
// with an Idempotency-Key of its own; the test fails on anything but 201.
type Importer struct {
	t   testing.TB
	e   *Env
	key string
	n   int
}

// NewImporter is an Importer that calls e's API with key.
func NewImporter(t testing.TB, e *Env, key string) *Importer {
	return &Importer{t: t, e: e, key: key}
}

// Post creates at path and returns the created record's data.
func (im *Importer) Post(path, body string) map[string]any {
	im.t.Helper()
	im.n++
	r := im.e.Post(path, im.key, fmt.Sprintf("%s-%d", path, im.n), body)
	if r.Status != 201 {
		im.t.Fatalf("POST %s %s: %d %s", path, body, r.Status, r.Raw)
	}
	return r.Body["data"].(map[string]any)
}

// Company creates a company with this CVR and returns its id.
func (im *Importer) Company(cvr string) string {
	return im.Post("/api/v1/companies", fmt.Sprintf(`{"name":"Firma %s ApS","cvr":%q}`, cvr, cvr))["id"].(string)
}

// Person creates a person with this e-mail and returns its id.
func (im *Importer) Person(email string) string {
	return im.Post("/api/v1/people", fmt.Sprintf(`{"name":"Anne Holm","email":%q}`, email))["id"].(string)
}

// Client engages a party (field "company_id" or "person_id") and returns
// the client's id.
func (im *Importer) Client(field, party string) string {
	return im.Post("/api/v1/clients", fmt.Sprintf(`{%q:%q}`, field, party))["id"].(string)
}

// Matter opens a matter for client, with extra JSON members (",…" or "")
// in its body, and returns its data.
func (im *Importer) Matter(client, extra string) map[string]any {
	return im.Post("/api/v1/matters", fmt.Sprintf(`{"client_id":%q%s}`, client, extra))
}
