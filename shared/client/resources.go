package client

import (
	"context"
	"iter"
	"net/url"
)

// Matter is a case.
type Matter struct {
	ID           string `json:"id"`
	ClientID     string `json:"client_id"`
	MatterNumber string `json:"matter_number"`
	Title        string `json:"title,omitempty"`
	Status       string `json:"status"`
	HourlyRate   *int64 `json:"hourly_rate"`
	Currency     string `json:"currency"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
}

// Engagement is a client: an engagement on one party.
type Engagement struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	CompanyID string `json:"company_id,omitempty"`
	PersonID  string `json:"person_id,omitempty"`
	KYCStatus string `json:"kyc_status"`
	UpdatedAt string `json:"updated_at"`
}

// Person is a person party.
type Person struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	UpdatedAt string `json:"updated_at"`
}

// Company is a company party.
type Company struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	CVR       string `json:"cvr"`
	UpdatedAt string `json:"updated_at"`
}

// TimeEntry is logged time; amounts in minor units.
type TimeEntry struct {
	ID              string `json:"id"`
	MatterID        string `json:"matter_id"`
	UserID          string `json:"user_id"`
	Date            string `json:"date"`
	DurationMinutes int64  `json:"duration_minutes"`
	HourlyRate      int64  `json:"hourly_rate"`
	Amount          int64  `json:"amount"`
	Status          string `json:"status"`
}

// Invoice is a bill; Lines are present on Invoice reads only.
type Invoice struct {
	ID       string `json:"id"`
	Number   string `json:"number"`
	MatterID string `json:"matter_id"`
	ClientID string `json:"client_id"`
	Status   string `json:"status"`
	Total    int64  `json:"total"`
	Currency string `json:"currency"`
	Lines    []struct {
		Description string `json:"description"`
		Amount      int64  `json:"amount"`
	} `json:"lines,omitempty"`
}

// Document is document metadata.
type Document struct {
	ID        string `json:"id"`
	MatterID  string `json:"matter_id"`
	Name      string `json:"name"`
	Filename  string `json:"filename"`
	MimeType  string `json:"mime_type"`
	SizeBytes int64  `json:"size_bytes"`
	Folder    string `json:"folder"`
}

// Matters lists matters (filters: client_id, status, updated_since).
func (c *Client) Matters(ctx context.Context, f url.Values) iter.Seq2[Matter, error] {
	return List[Matter](ctx, c, "/matters", f)
}

// Matter reads one matter.
func (c *Client) Matter(ctx context.Context, id string) (Matter, error) {
	return Get[Matter](ctx, c, "/matters/"+url.PathEscape(id))
}

// Engagements lists clients (filters: type, updated_since).
func (c *Client) Engagements(ctx context.Context, f url.Values) iter.Seq2[Engagement, error] {
	return List[Engagement](ctx, c, "/clients", f)
}

// People lists people.
func (c *Client) People(ctx context.Context, f url.Values) iter.Seq2[Person, error] {
	return List[Person](ctx, c, "/people", f)
}

// Companies lists companies (filters: cvr, updated_since).
func (c *Client) Companies(ctx context.Context, f url.Values) iter.Seq2[Company, error] {
	return List[Company](ctx, c, "/companies", f)
}

// TimeEntries lists time entries (filters: matter_id, client_id, user_id, date_from, date_to, status).
func (c *Client) TimeEntries(ctx context.Context, f url.Values) iter.Seq2[TimeEntry, error] {
	return List[TimeEntry](ctx, c, "/time-entries", f)
}

// Invoices lists invoices (lines omitted).
func (c *Client) Invoices(ctx context.Context, f url.Values) iter.Seq2[Invoice, error] {
	return List[Invoice](ctx, c, "/invoices", f)
}

// Documents lists document metadata.
func (c *Client) Documents(ctx context.Context, f url.Values) iter.Seq2[Document, error] {
	return List[Document](ctx, c, "/documents", f)
}

// CreateCompany imports a company under idempotencyKey ("" for a fresh one).
func (c *Client) CreateCompany(ctx context.Context, idempotencyKey, name, cvr string) (Company, Response, error) {
	return Create[Company](ctx, c, "/companies", idempotencyKey, map[string]string{"name": name, "cvr": cvr})
}

// CreatePerson imports a person.
func (c *Client) CreatePerson(ctx context.Context, idempotencyKey, name, email string) (Person, Response, error) {
	return Create[Person](ctx, c, "/people", idempotencyKey, map[string]string{"name": name, "email": email})
}

// CreateEngagement engages a party: field is "company_id" or "person_id".
func (c *Client) CreateEngagement(ctx context.Context, idempotencyKey, field, partyID string) (Engagement, Response, error) {
	return Create[Engagement](ctx, c, "/clients", idempotencyKey, map[string]string{field: partyID})
}

// CreateMatter imports a matter; body holds client_id and the optional fields.
func (c *Client) CreateMatter(ctx context.Context, idempotencyKey string, body map[string]any) (Matter, Response, error) {
	return Create[Matter](ctx, c, "/matters", idempotencyKey, body)
}

// CreateTimeEntry imports a time entry; body holds matter_id, date, duration_minutes, ….
func (c *Client) CreateTimeEntry(ctx context.Context, idempotencyKey string, body map[string]any) (TimeEntry, Response, error) {
	return Create[TimeEntry](ctx, c, "/time-entries", idempotencyKey, body)
}
