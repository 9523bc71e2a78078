package party

import (
	"context"
	"errors"
	"net/mail"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

const assigned = "it is assigned by the service"

// CreatePerson imports a person. The e-mail is unique among the
// organisation's people (case-insensitive). A CPR is refused wherever and
// however it appears, as in every write body (httpapi.DecodeBody).
func (s *Store) CreatePerson(ctx context.Context, req *httpapi.CreateRequest) (string, any, error) {
	b, err := httpapi.DecodeBody(req.Body)
	if err != nil {
		return "", nil, err
	}
	b.Forbid(assigned, "id", "created_at", "updated_at")
	p := Person{ID: uuid.NewString(), Name: b.String("name", true, 200), Email: b.String("email", true, 254),
		Phone: b.String("phone", false, 40), CreatedAt: store.FormatTime(req.Now)}
	if p.Email != "" {
		if a, err := mail.ParseAddress(p.Email); err != nil || a.Address != p.Email {
			b.Fail("email", "email must be a plain address such as anne@example.dk")
		}
	}
	if err := b.Err(); err != nil {
		return "", nil, err
	}
	p.UpdatedAt = p.CreatedAt
	p.SetKeys(req.Org)
	guard := p.Guards(req.Org)[0]
	tx := s.db.Tx()
	tx.PutNew(p)
	gi := tx.PutNew(guard)
	err = req.Commit(ctx, tx, p.ID, p, func(f *store.TxFailed) error {
		if f.Has(gi) {
			return s.conflict(ctx, guard, "email", "another person in your organisation already has the e-mail %s (person %s); e-mail addresses are unique among people", p.Email)
		}
		return nil
	})
	return p.ID, p, err
}

// CreateCompany imports a company; the CVR (8 digits, formatting ignored) is
// unique among the organisation's companies.
func (s *Store) CreateCompany(ctx context.Context, req *httpapi.CreateRequest) (string, any, error) {
	b, err := httpapi.DecodeBody(req.Body)
	if err != nil {
		return "", nil, err
	}
	b.Forbid(assigned, "id", "created_at", "updated_at")
	b.Forbid("the service fetches the register snapshot and logo itself", "enrichment")
	c := Company{ID: uuid.NewString(), Name: b.String("name", true, 200), CreatedAt: store.FormatTime(req.Now)}
	if raw := b.String("cvr", true, 40); raw != "" {
		if c.CVR = DigitsOnly(raw); len(c.CVR) != 8 {
			b.Fail("cvr", "cvr must hold 8 digits (formatting characters are ignored), e.g. 12345678")
		}
	}
	if err := b.Err(); err != nil {
		return "", nil, err
	}
	c.UpdatedAt = c.CreatedAt
	c.Enrichment = &Enrichment{Status: EnrichmentPending}
	c.SetKeys(req.Org)
	guard := c.Guards(req.Org)[0]
	// The enrichment job starts from the outbox, so it cannot be lost
	// between this commit and a queue.
	ev, err := outbox.New(req.Org, outbox.CompanyCreated, "company", map[string]string{"id": c.ID, "cvr": c.CVR}, req.Now)
	if err != nil {
		return "", nil, err
	}
	tx := s.db.Tx()
	tx.PutNew(c)
	gi := tx.PutNew(guard)
	tx.PutNew(ev)
	err = req.Commit(ctx, tx, c.ID, c, func(f *store.TxFailed) error {
		if f.Has(gi) {
			return s.conflict(ctx, guard, "cvr", "the CVR %s is already held by company %s in your organisation; CVRs are unique among companies", c.CVR)
		}
		return nil
	})
	return c.ID, c, err
}

// CreateClient engages exactly one party of the caller's organisation, once.
func (s *Store) CreateClient(ctx context.Context, req *httpapi.CreateRequest) (string, any, error) {
	b, err := httpapi.DecodeBody(req.Body)
	if err != nil {
		return "", nil, err
	}
	b.Forbid(assigned, "id", "created_at", "updated_at")
	b.Forbid("it is derived from the party", "type")
	b.Forbid("every imported engagement opens at pending; KYC is managed in the application", "kyc_status", "kyc_expires_at")
	c := Client{ID: uuid.NewString(), KYCStatus: "pending", CreatedAt: store.FormatTime(req.Now),
		CompanyID: b.UUID("company_id", false), PersonID: b.UUID("person_id", false)}
	field, sk := "company_id", companySK(c.CompanyID)
	c.Type = TypeCompany
	switch {
	case b.Has("company_id") && b.Has("person_id"):
		b.Fail("company_id", "send exactly one of company_id and person_id, not both")
	case !b.Has("company_id") && !b.Has("person_id"):
		b.Fail("company_id", "send exactly one of company_id and person_id")
	case b.Has("person_id"):
		field, sk, c.Type = "person_id", personSK(c.PersonID), TypePerson
	}
	if err := b.Err(); err != nil {
		return "", nil, err
	}
	c.UpdatedAt = c.CreatedAt
	c.SetKeys(req.Org)
	guard := c.Guards(req.Org)[0]
	tx := s.db.Tx()
	pi := tx.Check(store.OrgPK(req.Org), sk, "attribute_exists(PK)", nil, nil)
	tx.PutNew(c)
	gi := tx.PutNew(guard)
	err = req.Commit(ctx, tx, c.ID, c, func(f *store.TxFailed) error {
		switch {
		case f.Has(pi):
			return httpapi.Invalid(field, "no %s with id %s exists in your organisation; import the party first", c.Type, c.PartyID())
		case f.Has(gi):
			return s.conflict(ctx, guard, field, "this %s is already engaged as client %s; a party can have one engagement", c.Type)
		}
		return nil
	})
	return c.ID, c, err
}

// conflict builds the 422 for a uniqueness guard that is taken, naming the
// item that holds it. format takes the formatted args followed by that id.
func (s *Store) conflict(ctx context.Context, g store.Guard, field, format string, args ...any) error {
	var held store.Guard
	holder := "(unknown)"
	if err := s.db.Get(ctx, g.PK, g.SK, &held); err == nil {
		holder = held.Ref
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return httpapi.Invalid(field, format, append(args, holder)...)
}
