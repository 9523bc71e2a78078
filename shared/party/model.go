// Package party holds the parties behind engagements (people and companies)
// and the engagements themselves (clients): their items, reads and HTTP
// handlers.
package party

import (
	"strings"

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
	ID         string `dynamodbav:"id" json:"id"`
	Name       string `dynamodbav:"name" json:"name"`
	CVR        string `dynamodbav:"cvr" json:"cvr"` // digits only
	CreatedAt  string `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt  string `dynamodbav:"updated_at" json:"updated_at"`
}

// Client is an engagement on exactly one party; it has no party data of its own.
type Client struct {
	store.Keys   `json:"-"`
	ID           string `dynamodbav:"id" json:"id"`
	Type         string `dynamodbav:"type" json:"type"`
	CompanyID    string `dynamodbav:"company_id,omitempty" json:"company_id,omitempty"`
	PersonID     string `dynamodbav:"person_id,omitempty" json:"person_id,omitempty"`
	KYCStatus    string `dynamodbav:"kyc_status" json:"kyc_status"`
	KYCExpiresAt string `dynamodbav:"kyc_expires_at,omitempty" json:"kyc_expires_at,omitempty"`
	CreatedAt    string `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt    string `dynamodbav:"updated_at" json:"updated_at"`
}

// PartyID is the id of the engaged party, whichever kind it is.
func (c *Client) PartyID() string {
	if c.CompanyID != "" {
		return c.CompanyID
	}
	return c.PersonID
}

// Sort keys of the base table (partition store.OrgPK(org)).
func personSK(id string) string  { return "PERSON#" + id }
func companySK(id string) string { return "COMPANY#" + id }
func clientSK(id string) string  { return "CLIENT#" + id }

// NormalizeEmail is the form in which e-mail uniqueness is decided.
func NormalizeEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

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

// SetKeys fills the item keys: GSI1 lists people by last change.
func (p *Person) SetKeys(org string) {
	p.Keys = store.Keys{PK: store.OrgPK(org), SK: personSK(p.ID), Kind: "person",
		GSI1PK: store.Collection(org, "PERSON"), GSI1SK: store.Seq(p.UpdatedAt, p.ID)}
}

// SetKeys fills the item keys: GSI1 lists companies by last change, GSI2
// finds them by CVR.
func (c *Company) SetKeys(org string) {
	c.Keys = store.Keys{PK: store.OrgPK(org), SK: companySK(c.ID), Kind: "company",
		GSI1PK: store.Collection(org, "COMPANY"), GSI1SK: store.Seq(c.UpdatedAt, c.ID),
		GSI2PK: store.Collection(org, "COMPANY", "CVR", c.CVR), GSI2SK: store.Seq(c.UpdatedAt, c.ID)}
}

// SetKeys fills the item keys: GSI1 lists clients by last change, GSI2 by
// type and last change.
func (c *Client) SetKeys(org string) {
	c.Keys = store.Keys{PK: store.OrgPK(org), SK: clientSK(c.ID), Kind: "client",
		GSI1PK: store.Collection(org, "CLIENT"), GSI1SK: store.Seq(c.UpdatedAt, c.ID),
		GSI2PK: store.Collection(org, "CLIENT", "TYPE", c.Type), GSI2SK: store.Seq(c.UpdatedAt, c.ID)}
}

// Guards returns the uniqueness guards a person holds.
func (p *Person) Guards(org string) []store.Guard {
	return []store.Guard{store.NewGuard(org, "EMAIL", NormalizeEmail(p.Email), p.ID)}
}

// Guards returns the uniqueness guards a company holds.
func (c *Company) Guards(org string) []store.Guard {
	return []store.Guard{store.NewGuard(org, "CVR", c.CVR, c.ID)}
}

// Guards returns the guard that allows one engagement per party.
func (c *Client) Guards(org string) []store.Guard {
	return []store.Guard{store.NewGuard(org, "ENGAGEMENT", c.PartyID(), c.ID)}
}
