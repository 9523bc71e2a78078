// Package engagement is the client item (an engagement on one party) and
// its KYC state: what another family needs of a client, apart from the
// parties family itself. A matter reads its client's KYC before it opens
// and checks it in the transaction that activates it; that is all it needs
// of party, so it links this package and not party, whose e-mail rules
// carry Unicode's case folding and IDNA tables (golang.org/x/text/cases,
// golang.org/x/net/idna: 197-262 KB of each family function that linked
// them).
// Package party holds the rest and names these under its own names.
package engagement

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/practice-api/practice-api/shared/store"
)

// Client is an engagement on exactly one party; it has no party data of its own.
type Client struct {
	store.Keys   `json:"-"`
	ID           string    `dynamodbav:"id" json:"id"`
	Type         string    `dynamodbav:"type" json:"type"`
	CompanyID    string    `dynamodbav:"company_id,omitempty" json:"company_id,omitempty"`
	PersonID     string    `dynamodbav:"person_id,omitempty" json:"person_id,omitempty"`
	KYCStatus    KYCStatus `dynamodbav:"kyc_status" json:"kyc_status"`
	KYCExpiresAt string    `dynamodbav:"kyc_expires_at,omitempty" json:"kyc_expires_at,omitempty"`
	CreatedAt    string    `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt    string    `dynamodbav:"updated_at" json:"updated_at"`
}

// PartyID is the id of the engaged party, whichever kind it is.
func (c *Client) PartyID() string {
	if c.CompanyID != "" {
		return c.CompanyID
	}
	return c.PersonID
}

// SetKeys fills the item keys: GSI1 lists clients by last change, GSI2 by
// type and last change.
func (c *Client) SetKeys(org string) {
	c.Keys = store.Keys{PK: store.OrgPK(org), SK: SK(c.ID), Kind: "client",
		GSI1PK: store.Collection(org, "CLIENT"), GSI1SK: store.Seq(c.UpdatedAt, c.ID),
		GSI2PK: store.Collection(org, "CLIENT", "TYPE", c.Type), GSI2SK: store.Seq(c.UpdatedAt, c.ID)}
}

// KYCStatus is the state of an engagement's KYC case.
type KYCStatus string

// KYC statuses of an engagement. Imports open at pending; the application
// (scripts/admin kyc set) moves them.
const (
	KYCPending    KYCStatus = "pending"
	KYCInProgress KYCStatus = "in_progress"
	KYCApproved   KYCStatus = "approved"
	KYCRejected   KYCStatus = "rejected"
)

// KYCStatuses lists every KYC status.
var KYCStatuses = []KYCStatus{KYCPending, KYCInProgress, KYCApproved, KYCRejected}

// KYCInOrder reports whether the engagement's KYC allows an active matter
// at now: approved, and not expired (an approval without an expiry holds).
func (c *Client) KYCInOrder(now time.Time) bool {
	return c.KYCStatus == KYCApproved && (c.KYCExpiresAt == "" || c.KYCExpiresAt > store.FormatTime(now))
}

// KYCInOrderCondition is KYCInOrder as a condition on the client's item,
// for a transaction that must not commit past a concurrent KYC change.
func KYCInOrderCondition(now time.Time) expression.ConditionBuilder {
	expires := expression.Name("kyc_expires_at")
	return expression.Name("kyc_status").Equal(expression.Value(string(KYCApproved))).
		And(expression.AttributeNotExists(expires).Or(expires.GreaterThan(expression.Value(store.FormatTime(now)))))
}

// Key returns the primary key of the engagement id of org.
func Key(org, id string) (pk, sk string) { return store.OrgPK(org), SK(id) }

// SK is the sort key of the engagement id (partition store.OrgPK(org)).
func SK(id string) string { return "CLIENT#" + id }
