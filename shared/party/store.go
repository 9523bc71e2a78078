package party

import (
	"context"
	"errors"

	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/store"
)

// Store reads parties and engagements of one organisation at a time.
type Store struct {
	db *store.DB
	// AfterCompanyCreate, when set, is told of each company created (the
	// devserver starts its enrichment at once; on AWS the table's stream
	// does).
	AfterCompanyCreate func(ctx context.Context, org string, c Company)
}

// NewStore returns a Store on db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// GetPerson reads a person of org; store.ErrNotFound for absent or foreign ids.
func (s *Store) GetPerson(ctx context.Context, org, id string) (Person, error) {
	return store.GetInto[Person](ctx, s.db, store.OrgPK(org), personSK(id))
}

// GetCompany reads a company of org.
func (s *Store) GetCompany(ctx context.Context, org, id string) (Company, error) {
	return store.GetInto[Company](ctx, s.db, store.OrgPK(org), companySK(id))
}

// GetClient reads an engagement of org.
func (s *Store) GetClient(ctx context.Context, org, id string) (Client, error) {
	return store.GetInto[Client](ctx, s.db, store.OrgPK(org), clientSK(id))
}

// PeopleFilter holds the /people filters.
type PeopleFilter struct {
	UpdatedSince string `json:"updated_since,omitempty"`
}

// CompanyFilter holds the /companies filters; CVR is digits only.
type CompanyFilter struct {
	UpdatedSince string `json:"updated_since,omitempty"`
	CVR          string `json:"cvr,omitempty"`
}

// ClientFilter holds the /clients filters.
type ClientFilter struct {
	Type         string `json:"type,omitempty"`
	UpdatedSince string `json:"updated_since,omitempty"`
}

// Matches reports whether p passes the filters (a batch read by ids).
func (f PeopleFilter) Matches(p Person) bool { return httpapi.Since(p.UpdatedAt, f.UpdatedSince) }

// Matches reports whether c passes the filters (a batch read by ids).
func (f CompanyFilter) Matches(c Company) bool {
	return httpapi.Is(c.CVR, f.CVR) && httpapi.Since(c.UpdatedAt, f.UpdatedSince)
}

// Matches reports whether c passes the filters (a batch read by ids).
func (f ClientFilter) Matches(c Client) bool {
	return httpapi.Is(c.Type, f.Type) && httpapi.Since(c.UpdatedAt, f.UpdatedSince)
}

// byIDs reads the items of org keyed sk(id) for each of ids: one
// BatchGetItem.
func byIDs[T any](ctx context.Context, db *store.DB, org string, ids []string, sk func(string) string) ([]T, error) {
	sks := make([]string, len(ids))
	for i, id := range ids {
		sks[i] = sk(id)
	}
	return store.BatchReadInto[T](ctx, db, store.OrgPK(org), sks)
}

// PeopleByIDs reads the people of org with the given ids.
func (s *Store) PeopleByIDs(ctx context.Context, org string, ids []string) ([]Person, error) {
	return byIDs[Person](ctx, s.db, org, ids, personSK)
}

// CompaniesByIDs reads the companies of org with the given ids.
func (s *Store) CompaniesByIDs(ctx context.Context, org string, ids []string) ([]Company, error) {
	return byIDs[Company](ctx, s.db, org, ids, companySK)
}

// ClientsByIDs reads the engagements of org with the given ids.
func (s *Store) ClientsByIDs(ctx context.Context, org string, ids []string) ([]Client, error) {
	return byIDs[Client](ctx, s.db, org, ids, clientSK)
}

// ListPeople: Query GSI1 "O#org#PERSON", sort key >= updated_since.
func (s *Store) ListPeople(ctx context.Context, org string, req store.ListRequest[PeopleFilter]) ([]Person, store.StartKey, error) {
	return store.QueryInto[Person](ctx, s.db, store.ListQuery{Index: store.GSI1, PK: store.Collection(org, "PERSON"),
		SKFrom: req.Filter.UpdatedSince, Limit: req.PerPage, After: req.After, Project: true})
}

// ListCompanies: Query GSI1 "O#org#COMPANY", sort key >= updated_since.
// With cvr, the one company that may hold it is read by its id (CompanyID),
// and listed when it changed at or after updated_since.
func (s *Store) ListCompanies(ctx context.Context, org string, req store.ListRequest[CompanyFilter]) ([]Company, store.StartKey, error) {
	if req.Filter.CVR != "" {
		id, err := CompanyID(ctx, s.db, org, req.Filter.CVR)
		if err != nil {
			return nil, nil, err
		}
		c, err := store.ReadInto[Company](ctx, s.db, store.OrgPK(org), companySK(id))
		switch {
		case errors.Is(err, store.ErrNotFound), err == nil && c.UpdatedAt < req.Filter.UpdatedSince, req.After != nil:
			return []Company{}, nil, nil
		case err != nil:
			return nil, nil, err
		}
		return []Company{c}, nil, nil
	}
	return store.QueryInto[Company](ctx, s.db, store.ListQuery{Index: store.GSI1, PK: store.Collection(org, "COMPANY"),
		SKFrom: req.Filter.UpdatedSince, Limit: req.PerPage, After: req.After, Project: true})
}

// ListClients: with type, Query GSI2 "O#org#CLIENT#TYPE#<type>"; otherwise
// GSI1 "O#org#CLIENT"; updated_since is the sort-key bound on either.
func (s *Store) ListClients(ctx context.Context, org string, req store.ListRequest[ClientFilter]) ([]Client, store.StartKey, error) {
	q := store.ListQuery{Index: store.GSI1, PK: store.Collection(org, "CLIENT"),
		SKFrom: req.Filter.UpdatedSince, Limit: req.PerPage, After: req.After}
	if req.Filter.Type != "" {
		q.Index, q.PK = store.GSI2, store.Collection(org, "CLIENT", "TYPE", req.Filter.Type)
	}
	q.Project = true
	return store.QueryInto[Client](ctx, s.db, q)
}
