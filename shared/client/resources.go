package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strings"
)

// Matter is a case (GET /matters).
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
	ClosedAt     string `json:"closed_at,omitempty"`
}

// Engagement is a client (GET /clients): the engagement of one party, a
// company or a person, with its KYC state.
type Engagement struct {
	ID           string `json:"id"`
	Type         string `json:"type"`
	CompanyID    string `json:"company_id,omitempty"`
	PersonID     string `json:"person_id,omitempty"`
	KYCStatus    string `json:"kyc_status"`
	KYCExpiresAt string `json:"kyc_expires_at,omitempty"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
}

// Person is a person party (GET /people).
type Person struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	Phone     string `json:"phone,omitempty"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// Company is a company party (GET /companies). Enrichment is what the
// service fetched from the company register, as it answered (null until
// then).
type Company struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	CVR        string          `json:"cvr"`
	Enrichment json.RawMessage `json:"enrichment,omitempty"`
	CreatedAt  string          `json:"created_at"`
	UpdatedAt  string          `json:"updated_at"`
}

// TimeEntry is logged time (GET /time-entries); amounts in minor units.
type TimeEntry struct {
	ID              string `json:"id"`
	MatterID        string `json:"matter_id"`
	ClientID        string `json:"client_id"`
	UserID          string `json:"user_id"`
	Date            string `json:"date"`
	DurationMinutes int64  `json:"duration_minutes"`
	HourlyRate      int64  `json:"hourly_rate"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	Status          string `json:"status"`
	Description     string `json:"description,omitempty"`
	InvoiceID       string `json:"invoice_id,omitempty"`
	CreatedAt       string `json:"created_at"`
	UpdatedAt       string `json:"updated_at"`
}

// Invoice is a bill (GET /invoices); Lines are present on single reads only.
type Invoice struct {
	ID        string `json:"id"`
	Number    string `json:"number"`
	MatterID  string `json:"matter_id"`
	ClientID  string `json:"client_id"`
	Status    string `json:"status"`
	IssueDate string `json:"issue_date"`
	DueDate   string `json:"due_date"`
	Total     int64  `json:"total"`
	Currency  string `json:"currency"`
	Lines     []struct {
		Description string `json:"description"`
		Amount      int64  `json:"amount"`
		TimeEntryID string `json:"time_entry_id,omitempty"`
	} `json:"lines,omitempty"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	SentAt    string `json:"sent_at,omitempty"`
	PaidAt    string `json:"paid_at,omitempty"`
}

// Document is document metadata (GET /documents).
type Document struct {
	ID            string `json:"id"`
	MatterID      string `json:"matter_id"`
	Name          string `json:"name"`
	Filename      string `json:"filename"`
	MimeType      string `json:"mime_type"`
	SizeBytes     int64  `json:"size_bytes"`
	Folder        string `json:"folder"`
	SigningFlowID string `json:"signing_flow_id,omitempty"`
	SignedAt      string `json:"signed_at,omitempty"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
}

// NewCompany is the body of POST /companies.
type NewCompany struct {
	Name string `json:"name"`
	CVR  string `json:"cvr"` // formatting characters are ignored
}

// NewPerson is the body of POST /people.
type NewPerson struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Phone string `json:"phone,omitempty"`
}

// NewClient is the body of POST /clients: exactly one of the two.
type NewClient struct {
	CompanyID string `json:"company_id,omitempty"`
	PersonID  string `json:"person_id,omitempty"`
}

// NewMatter is the body of POST /matters.
type NewMatter struct {
	ClientID     string `json:"client_id"`
	MatterNumber string `json:"matter_number,omitempty"` // default: the next SAG-<n>
	Title        string `json:"title,omitempty"`
	Status       string `json:"status,omitempty"`      // dormant (default) or active
	HourlyRate   *int64 `json:"hourly_rate,omitempty"` // minor units
	Currency     string `json:"currency,omitempty"`    // DKK
}

// NewTimeEntry is the body of POST /time-entries.
type NewTimeEntry struct {
	MatterID        string `json:"matter_id"`
	Date            string `json:"date"` // YYYY-MM-DD
	DurationMinutes int64  `json:"duration_minutes"`
	HourlyRate      *int64 `json:"hourly_rate,omitempty"` // default: the matter's
	UserID          string `json:"user_id,omitempty"`     // default: the key's API client
	Description     string `json:"description,omitempty"`
}

// Matters lists matters (filters: client_id, status, updated_since).
func (c *Client) Matters(ctx context.Context, f url.Values) iter.Seq2[Matter, error] {
	return List[Matter](ctx, c, "/matters", f)
}

// Matter reads one matter.
func (c *Client) Matter(ctx context.Context, id string) (Matter, error) {
	return Get[Matter](ctx, c, "/matters/"+url.PathEscape(id))
}

// Clients lists client engagements (GET /clients; filters: type,
// updated_since).
func (c *Client) Clients(ctx context.Context, f url.Values) iter.Seq2[Engagement, error] {
	return List[Engagement](ctx, c, "/clients", f)
}

// Client reads one client engagement (GET /clients/{id}).
func (c *Client) Client(ctx context.Context, id string) (Engagement, error) {
	return Get[Engagement](ctx, c, "/clients/"+url.PathEscape(id))
}

// Engagements lists client engagements.
//
// Deprecated: use Clients, named after the path.
func (c *Client) Engagements(ctx context.Context, f url.Values) iter.Seq2[Engagement, error] {
	return c.Clients(ctx, f)
}

// Person reads one person (GET /people/{id}).
func (c *Client) Person(ctx context.Context, id string) (Person, error) {
	return Get[Person](ctx, c, "/people/"+url.PathEscape(id))
}

// Company reads one company (GET /companies/{id}).
func (c *Client) Company(ctx context.Context, id string) (Company, error) {
	return Get[Company](ctx, c, "/companies/"+url.PathEscape(id))
}

// Invoice reads one invoice with its lines (GET /invoices/{id}).
func (c *Client) Invoice(ctx context.Context, id string) (Invoice, error) {
	return Get[Invoice](ctx, c, "/invoices/"+url.PathEscape(id))
}

// Document reads one document's metadata (GET /documents/{id}).
func (c *Client) Document(ctx context.Context, id string) (Document, error) {
	return Get[Document](ctx, c, "/documents/"+url.PathEscape(id))
}

// People lists people.
func (c *Client) People(ctx context.Context, f url.Values) iter.Seq2[Person, error] {
	return List[Person](ctx, c, "/people", f)
}

// Companies lists companies (filters: cvr, updated_since).
func (c *Client) Companies(ctx context.Context, f url.Values) iter.Seq2[Company, error] {
	return List[Company](ctx, c, "/companies", f)
}

// TimeEntries lists time entries (filters: matter_id, client_id, user_id,
// date_from, date_to, status, updated_since).
func (c *Client) TimeEntries(ctx context.Context, f url.Values) iter.Seq2[TimeEntry, error] {
	return List[TimeEntry](ctx, c, "/time-entries", f)
}

// Invoices lists invoices, lines omitted (filters: matter_id, client_id,
// status, issue_date_from, issue_date_to, updated_since).
func (c *Client) Invoices(ctx context.Context, f url.Values) iter.Seq2[Invoice, error] {
	return List[Invoice](ctx, c, "/invoices", f)
}

// Documents lists document metadata (filters: matter_id, folder,
// updated_since).
func (c *Client) Documents(ctx context.Context, f url.Values) iter.Seq2[Document, error] {
	return List[Document](ctx, c, "/documents", f)
}

// CreateCompany imports a company under idempotencyKey ("" for a fresh
// one; use your record's id, so a retry replays instead of creating twice).
func (c *Client) CreateCompany(ctx context.Context, idempotencyKey string, body NewCompany) (Company, Response, error) {
	return Create[Company](ctx, c, "/companies", idempotencyKey, body)
}

// CreatePerson imports a person (POST /people).
func (c *Client) CreatePerson(ctx context.Context, idempotencyKey string, body NewPerson) (Person, Response, error) {
	return Create[Person](ctx, c, "/people", idempotencyKey, body)
}

// CreateClient engages a party as a client (POST /clients).
func (c *Client) CreateClient(ctx context.Context, idempotencyKey string, body NewClient) (Engagement, Response, error) {
	return Create[Engagement](ctx, c, "/clients", idempotencyKey, body)
}

// CreateEngagement engages a party: field is "company_id" or "person_id".
//
// Deprecated: use CreateClient, named after the path.
func (c *Client) CreateEngagement(ctx context.Context, idempotencyKey, field, partyID string) (Engagement, Response, error) {
	body := NewClient{CompanyID: partyID}
	if field == "person_id" {
		body = NewClient{PersonID: partyID}
	}
	return c.CreateClient(ctx, idempotencyKey, body)
}

// CreateMatter imports a matter (POST /matters).
func (c *Client) CreateMatter(ctx context.Context, idempotencyKey string, body NewMatter) (Matter, Response, error) {
	return Create[Matter](ctx, c, "/matters", idempotencyKey, body)
}

// CreateTimeEntry imports a time entry (POST /time-entries).
func (c *Client) CreateTimeEntry(ctx context.Context, idempotencyKey string, body NewTimeEntry) (TimeEntry, Response, error) {
	return Create[TimeEntry](ctx, c, "/time-entries", idempotencyKey, body)
}

// MaxIDs is the most ids one list request takes; ByIDs asks in batches of
// it.
const MaxIDs = 100

// IDs is the filter of a batch read (a list's ids): the records with these
// ids that match the other filters, in one page. Add other filters to the
// url.Values it returns; at most MaxIDs ids a request (ByIDs splits more).
func IDs(ids ...string) url.Values { return url.Values{"ids": {strings.Join(ids, ",")}} }

// ByIDs reads the records of a list endpoint with the given ids (and the
// other filters), in batches of MaxIDs, one request each: the records found,
// in the order of ids; ids that name nothing of the organisation are left
// out. For what a page of events names: one request per hundred records,
// not one per record.
func ByIDs[T any](ctx context.Context, c *Client, path string, ids []string, filters url.Values) ([]T, error) {
	out := []T{}
	for start := 0; start < len(ids); start += MaxIDs {
		q := url.Values{}
		for k, v := range filters {
			q[k] = v
		}
		q.Set("ids", strings.Join(ids[start:min(start+MaxIDs, len(ids))], ","))
		var p page[T]
		if _, err := c.Do(ctx, http.MethodGet, path+"?"+q.Encode(), nil, nil, &p); err != nil {
			return nil, err
		}
		out = append(out, p.Data...)
	}
	return out, nil
}

// MattersByID reads the matters with these ids (GET /matters?ids=).
func (c *Client) MattersByID(ctx context.Context, ids ...string) ([]Matter, error) {
	return ByIDs[Matter](ctx, c, "/matters", ids, nil)
}

// ClientsByID reads the client engagements with these ids.
func (c *Client) ClientsByID(ctx context.Context, ids ...string) ([]Engagement, error) {
	return ByIDs[Engagement](ctx, c, "/clients", ids, nil)
}

// PeopleByID reads the people with these ids.
func (c *Client) PeopleByID(ctx context.Context, ids ...string) ([]Person, error) {
	return ByIDs[Person](ctx, c, "/people", ids, nil)
}

// CompaniesByID reads the companies with these ids.
func (c *Client) CompaniesByID(ctx context.Context, ids ...string) ([]Company, error) {
	return ByIDs[Company](ctx, c, "/companies", ids, nil)
}

// TimeEntriesByID reads the time entries with these ids (by id alone: a
// time_entry event's id).
func (c *Client) TimeEntriesByID(ctx context.Context, ids ...string) ([]TimeEntry, error) {
	return ByIDs[TimeEntry](ctx, c, "/time-entries", ids, nil)
}

// InvoicesByID reads the invoices with these ids, without their lines.
func (c *Client) InvoicesByID(ctx context.Context, ids ...string) ([]Invoice, error) {
	return ByIDs[Invoice](ctx, c, "/invoices", ids, nil)
}

// DocumentsByID reads the documents' metadata with these ids.
func (c *Client) DocumentsByID(ctx context.Context, ids ...string) ([]Document, error) {
	return ByIDs[Document](ctx, c, "/documents", ids, nil)
}
