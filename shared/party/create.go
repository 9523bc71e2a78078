package party

import (
	"context"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/body"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

const assigned = "it is assigned by the service"

// A party's name and phone are at most this many characters.
const (
	MaxName  = 200
	MaxPhone = 40
	// MaxCVRParam bounds a CVR as sent (the body's cvr, the ?cvr= filter),
	// formatting included.
	MaxCVRParam = 40
)

// CreatePerson imports a person. The e-mail is unique among the
// organisation's people, compared as NormalizeEmail reads it: the person's
// id is derived from that form, so a second person with it (in any
// spelling that reads the same) collides with the first. The address is
// stored as sent, in NFC (CheckEmail). A CPR is refused wherever and
// however it appears, as in every write body (body.Decode).
func (s *Store) CreatePerson(ctx context.Context, req *idempotency.Create) (string, any, error) {
	b, err := body.Decode(req.Body)
	if err != nil {
		return "", nil, err
	}
	b.Forbid(assigned, "id", "created_at", "updated_at")
	p := Person{Name: b.String("name", true, MaxName), Email: b.String("email", true, 254),
		Phone: b.String("phone", false, MaxPhone), CreatedAt: store.FormatTime(req.Now)}
	if p.Email != "" {
		var problem string
		if p.Email, problem = CheckEmail(p.Email); problem != "" {
			b.Fail("email", "%s", problem)
		}
	}
	if err := b.Err(); err != nil {
		return "", nil, err
	}
	if p.ID, err = PersonID(ctx, s.db, req.Org, p.Email); err != nil {
		return "", nil, err
	}
	p.UpdatedAt = p.CreatedAt
	p.SetKeys(req.Org)
	tx := s.db.Tx()
	pi := tx.PutNew(p)
	if err := outbox.Raise(tx, req.Org, outbox.PersonCreated, "person", PersonEvent(&p), req.Now); err != nil {
		return "", nil, err
	}
	err = req.Commit(ctx, tx, p.ID, p, func(f *store.TxFailed) error {
		if f.Has(pi) {
			return apperr.AlreadyExistsf("email", p.ID, "another person in your organisation already has the e-mail %s, or one that reads the same "+
				"(person %s); e-mail addresses are unique among people, compared in Unicode's compatibility form and without case", p.Email, p.ID)
		}
		return nil
	})
	return p.ID, p, err
}

// CreateCompany imports a company; the CVR (8 digits, formatting ignored) is
// unique among the organisation's companies: the company's id is derived
// from it. It raises company.created; its enrichment starts from the
// table's stream (the company's insert): see Enricher.
func (s *Store) CreateCompany(ctx context.Context, req *idempotency.Create) (string, any, error) {
	b, err := body.Decode(req.Body)
	if err != nil {
		return "", nil, err
	}
	b.Forbid(assigned, "id", "created_at", "updated_at")
	b.Forbid("the service fetches the register snapshot and logo itself", "enrichment")
	c := Company{Name: b.String("name", true, MaxName), CreatedAt: store.FormatTime(req.Now)}
	if raw := b.String("cvr", true, MaxCVRParam); raw != "" {
		if c.CVR = DigitsOnly(raw); len(c.CVR) != 8 {
			b.Fail("cvr", "cvr must hold 8 digits (formatting characters are ignored), e.g. 12345678")
		}
	}
	if err := b.Err(); err != nil {
		return "", nil, err
	}
	if c.ID, err = CompanyID(ctx, s.db, req.Org, c.CVR); err != nil {
		return "", nil, err
	}
	c.UpdatedAt = c.CreatedAt
	c.Enrichment = &Enrichment{Status: EnrichmentPending}
	c.SetKeys(req.Org)
	tx := s.db.Tx()
	ci := tx.PutNew(c)
	if err := outbox.Raise(tx, req.Org, outbox.CompanyCreated, "company", CompanyEvent(&c), req.Now); err != nil {
		return "", nil, err
	}
	err = req.Commit(ctx, tx, c.ID, c, func(f *store.TxFailed) error {
		if f.Has(ci) {
			return apperr.AlreadyExistsf("cvr", c.ID, "the CVR %s is already held by company %s in your organisation; CVRs are unique among companies", c.CVR, c.ID)
		}
		return nil
	})
	if err == nil && s.AfterCompanyCreate != nil {
		s.AfterCompanyCreate(ctx, req.Org, c)
	}
	return c.ID, c, err
}

// CreateClient engages exactly one party of the caller's organisation,
// once: the engagement's id is derived from its party's.
func (s *Store) CreateClient(ctx context.Context, req *idempotency.Create) (string, any, error) {
	b, err := body.Decode(req.Body)
	if err != nil {
		return "", nil, err
	}
	b.Forbid(assigned, "id", "created_at", "updated_at")
	b.Forbid("it is derived from the party", "type")
	b.Forbid("every imported engagement opens at pending; KYC is managed in the application", "kyc_status", "kyc_expires_at")
	c := Client{KYCStatus: KYCPending, CreatedAt: store.FormatTime(req.Now),
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
	if c.ID, err = ClientID(ctx, s.db, req.Org, c.PartyID()); err != nil {
		return "", nil, err
	}
	c.UpdatedAt = c.CreatedAt
	c.SetKeys(req.Org)
	tx := s.db.Tx()
	pi := tx.CheckWhen(store.OrgPK(req.Org), sk, store.ItemExists())
	ci := tx.PutNew(c)
	if err := outbox.Raise(tx, req.Org, outbox.ClientCreated, "client", ClientEvent(&c, ""), req.Now); err != nil {
		return "", nil, err
	}
	err = req.Commit(ctx, tx, c.ID, c, func(f *store.TxFailed) error {
		switch {
		case f.Has(pi):
			return apperr.Invalidf(field, "no %s with id %s exists in your organisation; import the party first", c.Type, c.PartyID())
		case f.Has(ci):
			return apperr.AlreadyExistsf(field, c.ID, "this %s is already engaged as client %s; a party can have one engagement", c.Type, c.ID)
		}
		return nil
	})
	return c.ID, c, err
}
