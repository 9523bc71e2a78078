// Package party holds the parties behind engagements (people and companies)
// and the engagements themselves (clients): their items, reads and HTTP
// handlers.
package party

import (
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/practice-api/practice-api/shared/body"
	"github.com/practice-api/practice-api/shared/party/engagement"
	"github.com/practice-api/practice-api/shared/store"
)

// Client kinds, filterable as type.
const (
	TypeCompany = "company"
	TypePerson  = "person"
)

// Person is a person party. There is no CPR field, by design: it is never
// accepted, stored or returned.
type Person struct {
	store.Keys `json:"-"`
	ID         string `dynamodbav:"id" json:"id"`
	Name       string `dynamodbav:"name" json:"name"`
	Email      string `dynamodbav:"email" json:"email"`
	Phone      string `dynamodbav:"phone,omitempty" json:"phone,omitempty"`
	CreatedAt  string `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt  string `dynamodbav:"updated_at" json:"updated_at"`
}

// Company is a company party.
type Company struct {
	store.Keys `json:"-"`
	ID         string      `dynamodbav:"id" json:"id"`
	Name       string      `dynamodbav:"name" json:"name"`
	CVR        string      `dynamodbav:"cvr" json:"cvr"` // digits only
	Enrichment *Enrichment `dynamodbav:"enrichment,omitempty" json:"enrichment,omitempty"`
	CreatedAt  string      `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt  string      `dynamodbav:"updated_at" json:"updated_at"`
}

// EnrichmentStatus is the state of a company's enrichment.
type EnrichmentStatus string

// Enrichment states of a company.
const (
	EnrichmentPending EnrichmentStatus = "pending" // queued or being retried
	EnrichmentDone    EnrichmentStatus = "done"
	EnrichmentFailed  EnrichmentStatus = "failed"  // gave up after the last retry
	EnrichmentSkipped EnrichmentStatus = "skipped" // no company register is configured
)

// Enrichment is what the background job fetched from the company register.
type Enrichment struct {
	Status   EnrichmentStatus `dynamodbav:"status" json:"status"`
	Attempts int              `dynamodbav:"attempts,omitempty" json:"attempts,omitempty"`
	// Register is the register's snapshot of the company, as it answered.
	Register  json.RawMessage `dynamodbav:"register,omitempty" json:"register,omitempty"`
	Logo      *Logo           `dynamodbav:"logo,omitempty" json:"logo,omitempty"`
	Error     string          `dynamodbav:"error,omitempty" json:"error,omitempty"`
	UpdatedAt string          `dynamodbav:"updated_at,omitempty" json:"updated_at,omitempty"`
}

// Logo describes the stored logo; its bytes live in their own item.
type Logo struct {
	ContentType string `dynamodbav:"content_type" json:"content_type"`
	Size        int    `dynamodbav:"size" json:"size"`
	SHA256      string `dynamodbav:"sha256" json:"sha256"`
}

// Client is an engagement on exactly one party (package engagement, which
// the families that read a client's KYC link instead of party).
type Client = engagement.Client

// KYCStatus is the state of an engagement's KYC case.
type KYCStatus = engagement.KYCStatus

// KYC statuses of an engagement (engagement's).
const (
	KYCPending    = engagement.KYCPending
	KYCInProgress = engagement.KYCInProgress
	KYCApproved   = engagement.KYCApproved
	KYCRejected   = engagement.KYCRejected
)

// KYCStatuses lists every KYC status.
var KYCStatuses = engagement.KYCStatuses

// Sort keys of the base table (partition store.OrgPK(org)).
func personSK(id string) string  { return "PERSON#" + id }
func companySK(id string) string { return "COMPANY#" + id }
func clientSK(id string) string  { return engagement.SK(id) }

// NormalizeEmail is the form in which e-mail uniqueness is decided: two
// addresses that people read as the same are the same person. It is the
// address in NFKC (full-width and other compatibility forms become their
// plain letters, a decomposed é its composed one), case-folded (Unicode's
// full folding: Ｂ, B and b alike, ß as ss), with its domain in Unicode
// form (an xn-- label as the name it encodes). Invisible characters need
// no folding: CheckEmail refuses them.
func NormalizeEmail(e string) string {
	e = norm.NFKC.String(strings.TrimSpace(e))
	if at := strings.LastIndexByte(e, '@'); at >= 0 {
		if u, err := idna.Lookup.ToUnicode(e[at+1:]); err == nil {
			e = e[:at+1] + u
		}
	}
	return norm.NFKC.String(cases.Fold().String(e))
}

// CheckEmail returns the address to store for the one sent (the same, in
// NFC), or why it is refused: an invisible or direction-changing
// character anywhere (body.Invisible; the address would look like
// another, or read backwards), or not a plain address.
func CheckEmail(sent string) (string, string) {
	for _, r := range sent {
		if r != ' ' && body.Invisible(r) { // a plain space: not a plain address, said below
			return "", fmt.Sprintf("email contains U+%04X, an invisible or direction-changing character, with which one address can be "+
				"written in ways that look alike; send the address without it", r)
		}
	}
	addr := norm.NFC.String(sent)
	if a, err := mail.ParseAddress(addr); err != nil || a.Address != addr {
		return "", "email must be a plain address such as anne@example.dk"
	}
	return addr, ""
}

// DigitsOnly strips everything but digits, as the cvr rules require.
func DigitsOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Ids are derived from the value each item must hold alone in its
// organisation (store.DB.DerivedID), so the item's own key is the
// uniqueness guard: a person's from the e-mail, a company's from the CVR,
// an engagement's from its party.

// PersonID is the id of the person of org with e-mail email.
func PersonID(ctx context.Context, db *store.DB, org, email string) (string, error) {
	return db.DerivedID(ctx, org, "EMAIL", NormalizeEmail(email))
}

// CompanyID is the id of the company of org with CVR cvr (digits).
func CompanyID(ctx context.Context, db *store.DB, org, cvr string) (string, error) {
	return db.DerivedID(ctx, org, "CVR", cvr)
}

// ClientID is the id of the engagement of org on the party partyID.
func ClientID(ctx context.Context, db *store.DB, org, partyID string) (string, error) {
	return db.DerivedID(ctx, org, "ENGAGEMENT", partyID)
}

// SetKeys fills the item keys: GSI1 lists people by last change.
func (p *Person) SetKeys(org string) {
	p.Keys = store.Keys{PK: store.OrgPK(org), SK: personSK(p.ID), Kind: "person",
		GSI1PK: store.Collection(org, "PERSON"), GSI1SK: store.Seq(p.UpdatedAt, p.ID)}
}

// SetKeys fills the item keys: GSI1 lists companies by last change (a CVR
// finds its company by id: CompanyID).
func (c *Company) SetKeys(org string) {
	c.Keys = store.Keys{PK: store.OrgPK(org), SK: companySK(c.ID), Kind: "company",
		GSI1PK: store.Collection(org, "COMPANY"), GSI1SK: store.Seq(c.UpdatedAt, c.ID)}
}

// Events carry a party's and an engagement's ids and status, never a
// name, an e-mail, a phone or a CVR: read those through the API.

// PersonEvent is the person as person.created carries it: its id.
func PersonEvent(p *Person) map[string]any { return map[string]any{"id": p.ID} }

// CompanyEvent is the company as company.created and company.updated
// carry it: its id and its enrichment's status.
func CompanyEvent(c *Company) map[string]any {
	st := EnrichmentPending
	if c.Enrichment != nil {
		st = c.Enrichment.Status
	}
	return map[string]any{"id": c.ID, "enrichment_status": st}
}

// ClientEvent is the engagement as client.created and client.updated
// carry it: ids, type and KYC status, and previous, the KYC status before
// the change (client.updated) when not "".
func ClientEvent(c *Client, previous KYCStatus) map[string]any {
	m := map[string]any{"id": c.ID, "type": c.Type, "kyc_status": c.KYCStatus}
	if c.CompanyID != "" {
		m["company_id"] = c.CompanyID
	}
	if c.PersonID != "" {
		m["person_id"] = c.PersonID
	}
	if previous != "" {
		m["previous_kyc_status"] = previous
	}
	return m
}
