// Package matter holds matters: their item, reads and HTTP handlers.
package matter

import (
	"context"
	"net/http"
	"net/url"

	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/store"
)

// Status is a matter's state in its workflow (Transitions).
type Status string

// States of a matter.
const (
	Active   Status = "active"
	Dormant  Status = "dormant"
	Closed   Status = "closed"
	Archived Status = "archived"
)

// Statuses lists a matter's states in the spec's order.
var Statuses = []Status{Active, Dormant, Closed, Archived}

// Open reports whether a matter in status st is open: active or dormant.
// Matters are imported open (closing and archiving happen in the
// application, where matter.closed is raised), and time is logged on open
// matters only.
func (st Status) Open() bool { return st == Active || st == Dormant }

// Matter is a case, always belonging to one client engagement.
type Matter struct {
	store.Keys   `json:"-"`
	ID           string `dynamodbav:"id" json:"id"`
	ClientID     string `dynamodbav:"client_id" json:"client_id"`
	MatterNumber string `dynamodbav:"matter_number" json:"matter_number"`
	Title        string `dynamodbav:"title,omitempty" json:"title,omitempty"`
	Status       Status `dynamodbav:"status" json:"status"`
	// HourlyRate is in minor units of Currency; null when the matter has none.
	HourlyRate *int64 `dynamodbav:"hourly_rate,omitempty" json:"hourly_rate"`
	Currency   string `dynamodbav:"currency" json:"currency"`
	CreatedAt  string `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt  string `dynamodbav:"updated_at" json:"updated_at"`
	ClosedAt   string `dynamodbav:"closed_at,omitempty" json:"closed_at,omitempty"`
}

func matterSK(id string) string { return "MATTER#" + id }

// SetKeys fills the item keys. Every index sorts by last change, so
// updated_since is a key condition whichever index a filter picks:
// GSI1 all matters, GSI2 by client, GSI3 by status.
func (m *Matter) SetKeys(org string) {
	seq := store.Seq(m.UpdatedAt, m.ID)
	m.Keys = store.Keys{PK: store.OrgPK(org), SK: matterSK(m.ID), Kind: "matter",
		GSI1PK: store.Collection(org, "MATTER"), GSI1SK: seq,
		GSI2PK: store.Collection(org, "MATTER", "CLIENT", m.ClientID), GSI2SK: seq,
		GSI3PK: store.Collection(org, "MATTER", "STATUS", string(m.Status)), GSI3SK: seq}
}

// ID is the id of the matter of org numbered number: derived from the
// number, so the matter's own key keeps numbers unique in an organisation.
func ID(ctx context.Context, db *store.DB, org, number string) (string, error) {
	return db.DerivedID(ctx, org, "MATTERNO", number)
}

// Filter holds the /matters filters.
type Filter struct {
	ClientID     string `json:"client_id,omitempty"`
	Status       Status `json:"status,omitempty"`
	UpdatedSince string `json:"updated_since,omitempty"`
}

// Matches reports whether m passes the filters (a batch read by ids).
func (f Filter) Matches(m Matter) bool {
	return httpapi.Is(m.ClientID, f.ClientID) && httpapi.Is(m.Status, f.Status) && httpapi.Since(m.UpdatedAt, f.UpdatedSince)
}

// ByIDs reads the matters of org with the given ids: one BatchGetItem.
func (s *Store) ByIDs(ctx context.Context, org string, ids []string) ([]Matter, error) {
	sks := make([]string, len(ids))
	for i, id := range ids {
		sks[i] = matterSK(id)
	}
	return store.BatchReadInto[Matter](ctx, s.db, store.OrgPK(org), sks)
}

// Store reads matters of one organisation at a time.
type Store struct{ db *store.DB }

// NewStore returns a Store on db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// Get reads a matter of org; store.ErrNotFound for absent or foreign ids.
func (s *Store) Get(ctx context.Context, org, id string) (Matter, error) {
	return store.GetInto[Matter](ctx, s.db, store.OrgPK(org), matterSK(id))
}

// List picks the index that answers the most selective filter: client_id →
// GSI2 (status, when also given, as a filter expression: a client has few
// matters); status → GSI3; neither → GSI1. updated_since bounds the sort key.
func (s *Store) List(ctx context.Context, org string, req store.ListRequest[Filter]) ([]Matter, store.StartKey, error) {
	f := req.Filter
	q := store.ListQuery{Index: store.GSI1, PK: store.Collection(org, "MATTER"),
		SKFrom: f.UpdatedSince, Limit: req.PerPage, After: req.After}
	q.NarrowBy(org, "MATTER",
		store.KeyFilter{Index: store.GSI2, Attr: "client_id", Segment: "CLIENT", Value: f.ClientID},
		store.KeyFilter{Index: store.GSI3, Attr: "status", Segment: "STATUS", Value: string(f.Status)})
	q.Project = true
	return store.QueryInto[Matter](ctx, s.db, q)
}

// Handlers returns the handlers of the matters family.
func Handlers(s *Store) httpapi.Handlers {
	return httpapi.Handlers{
		"matters.list": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeList(w, r, "matters", parseFilter, s.List, s.ByIDs)
		},
		"matters.get": httpapi.GetHandler("matter", "matter", func(ctx context.Context, org, id string) (Matter, error) {
			return store.ReadInto[Matter](ctx, s.db, store.OrgPK(org), matterSK(id))
		}),
		"matters.create": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeCreate(w, r, "matters", "/matters", s.Create)
		},
	}
}

func parseFilter(q url.Values) (Filter, error) {
	client, err := httpapi.UUIDParam(q, "client_id")
	if err != nil {
		return Filter{}, err
	}
	status, err := httpapi.EnumParam(q, "status", Statuses...)
	if err != nil {
		return Filter{}, err
	}
	since, err := httpapi.SinceParam(q, "updated_since")
	return Filter{ClientID: client, Status: status, UpdatedSince: since}, err
}
