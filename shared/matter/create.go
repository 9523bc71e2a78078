package matter

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/body"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party/engagement"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/workflow"
)

// A matter's title and number are at most this many characters.
const (
	MaxTitle  = 200
	MaxNumber = 50
)

// Key returns the primary key of a matter, for other packages that read it.
func Key(org, id string) (pk, sk string) { return store.OrgPK(org), matterSK(id) }

var numberPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,49}$`)

// errNumberTaken: an auto-assigned number collided with one sent explicitly earlier.
var errNumberTaken = errors.New("matter: number taken")

// maxNumberAttempts bounds how many auto-assigned numbers a create may skip
// because integrators sent those numbers explicitly.
const maxNumberAttempts = 5

// Create imports a matter on a client of the caller's organisation. Its
// number is the one sent, or the next SAG-<n> of the organisation's counter.
// status active requires the client's KYC to be approved and unexpired,
// checked inside the create's transaction so that no concurrent KYC change
// slips between check and write.
func (s *Store) Create(ctx context.Context, req *idempotency.Create) (string, any, error) {
	b, err := body.Decode(req.Body)
	if err != nil {
		return "", nil, err
	}
	b.Forbid("it is assigned by the service", "id", "created_at", "updated_at", "closed_at")
	m := Matter{ClientID: b.UUID("client_id", true), Status: Dormant, Currency: "DKK",
		Title: b.String("title", false, MaxTitle), HourlyRate: b.HourlyRate("hourly_rate", false),
		MatterNumber: b.String("matter_number", false, MaxNumber), CreatedAt: store.FormatTime(req.Now)}
	if b.Has("status") {
		switch st := Status(b.Enum("status", false, workflow.Strings(Statuses)...)); {
		case st == "": // not a status: refused by Enum
		case !st.Open():
			b.Fail("status", "a matter is imported as dormant or active; closing and archiving happen in the application")
		default:
			m.Status = st
		}
	}
	if m.MatterNumber != "" && !numberPattern.MatchString(m.MatterNumber) {
		b.Fail("matter_number", "matter_number may hold letters, digits and . _ / - (at most 50), starting with a letter or digit")
	}
	if b.Has("currency") && b.Enum("currency", false, "DKK") == "" {
		b.Fail("currency", "currency must be DKK")
	}
	if err := b.Err(); err != nil {
		return "", nil, err
	}
	m.UpdatedAt = m.CreatedAt
	auto := m.MatterNumber == ""
	if auto {
		// The number is drawn before the transaction: a replay must not
		// draw one.
		if err := req.CheckKey(ctx); err != nil {
			return "", nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		if auto {
			// Numbers come from an atomic counter before the transaction, so a
			// create that fails afterwards leaves a gap: numbers are unique and
			// increasing, not gapless.
			n, err := s.db.Increment(ctx, store.OrgPK(req.Org), "COUNTER#MATTER", 1)
			if err != nil {
				return "", nil, err
			}
			m.MatterNumber = fmt.Sprintf("SAG-%d", n)
		}
		err := s.create(ctx, req, &m)
		if errors.Is(err, errNumberTaken) {
			if auto && attempt+1 < maxNumberAttempts {
				continue
			}
			return "", nil, apperr.AlreadyExistsf("matter_number", m.ID, "the matter number %s is already used in your organisation (matter %s)", m.MatterNumber, m.ID)
		}
		return m.ID, m, err
	}
}

func (s *Store) create(ctx context.Context, req *idempotency.Create, m *Matter) error {
	id, err := ID(ctx, s.db, req.Org, m.MatterNumber)
	if err != nil {
		return err
	}
	m.ID = id
	m.SetKeys(req.Org)
	ev, err := outbox.New(req.Org, outbox.MatterCreated, "matter", Event(m), req.Now)
	if err != nil {
		return err
	}
	cpk, csk := engagement.Key(req.Org, m.ClientID)
	cond := store.ItemExists()
	if m.Status == Active {
		cond = cond.And(engagement.KYCInOrderCondition(req.Now))
	}
	tx := s.db.Tx()
	ci := tx.CheckWhen(cpk, csk, cond)
	mi := tx.PutNew(m)
	outbox.Add(tx, ev)
	return req.Commit(ctx, tx, m.ID, m, func(f *store.TxFailed) error {
		switch {
		case f.Has(ci):
			return s.explainClient(ctx, req, m)
		case f.Has(mi):
			return errNumberTaken
		}
		return nil
	})
}

// explainClient says why the client condition failed: no such client, or KYC.
func (s *Store) explainClient(ctx context.Context, req *idempotency.Create, m *Matter) error {
	pk, sk := engagement.Key(req.Org, m.ClientID)
	c, err := store.ReadInto[engagement.Client](ctx, s.db, pk, sk)
	if errors.Is(err, store.ErrNotFound) {
		return apperr.Invalidf("client_id", "no client with id %s exists in your organisation; create the engagement with POST /clients first", m.ClientID)
	}
	if err != nil {
		return err
	}
	why := "its KYC case is " + string(c.KYCStatus)
	if c.KYCStatus == engagement.KYCApproved {
		why = "its KYC approval expired at " + c.KYCExpiresAt
	}
	return apperr.Invalidf("status", "the matter cannot be imported as active: the client's KYC is not in order (%s); import it with status dormant and activate it in the application once KYC is approved", why)
}

// Event is the matter as webhook events carry it: identifiers and status.
func Event(m *Matter) map[string]any {
	return map[string]any{"id": m.ID, "status": m.Status, "client_id": m.ClientID, "matter_number": m.MatterNumber}
}

// ChangeEvent is the matter as a change's event carries it (matter.closed,
// matter.updated): Event's fields and previous_status, the status it left.
func ChangeEvent(m *Matter, previous Status) map[string]any {
	e := Event(m)
	e["previous_status"] = previous
	return e
}
