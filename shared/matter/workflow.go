package matter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party/engagement"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/workflow"
)

// Transitions of a matter's status, applied by the application (the API
// only creates). Activating needs the client's KYC in order, as at import.
var Transitions = workflow.Transitions[Status]{
	Active:   {Dormant, Closed},
	Dormant:  {Active, Closed},
	Closed:   {Active, Archived}, // reopened, or archived for good
	Archived: {},
}

// ErrNotFound is returned for a matter absent from the organisation.
var ErrNotFound = errors.New("matter: not found")

// SetStatus moves a matter to status `to`, with the change and its event
// (matter.closed for a close, matter.updated for any other move, each with
// the status it left) in one transaction, conditional on the matter being
// unchanged since it was read.
func (s *Store) SetStatus(ctx context.Context, org, id string, to Status, now time.Time) (Matter, error) {
	var m Matter
	err := store.Optimistic("matter "+id, func() error {
		var err error
		m, err = s.Get(ctx, org, id)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		if err := Transitions.Check("matter", m.Status, to); err != nil {
			return err
		}
		prev, was := m.UpdatedAt, m.Status
		m.Status, m.UpdatedAt = to, store.NextUpdate(prev, now)
		if to == Closed {
			m.ClosedAt = m.UpdatedAt
		} else if to == Active || to == Dormant {
			m.ClosedAt = ""
		}
		m.SetKeys(org)
		tx := s.db.Tx()
		mi := tx.PutWhen(m, store.UnchangedSince(prev))
		ki := -1
		if to == Active {
			cpk, csk := engagement.Key(org, m.ClientID)
			ki = tx.CheckWhen(cpk, csk, engagement.KYCInOrderCondition(now))
		}
		typ := outbox.MatterUpdated
		if to == Closed {
			typ = outbox.MatterClosed
		}
		if err := outbox.Raise(tx, org, typ, "matter", ChangeEvent(&m, was), now); err != nil {
			return err
		}
		err = tx.Commit(ctx)
		var failed *store.TxFailed
		switch {
		case errors.As(err, &failed) && failed.Has(ki):
			return fmt.Errorf("%w: the client's KYC is not approved and unexpired, so the matter cannot be activated", workflow.ErrRefused)
		case errors.As(err, &failed) && failed.Has(mi):
			return store.ErrConflict // changed meanwhile: read again
		case err != nil:
			return err
		}
		return nil
	})
	if err != nil {
		return Matter{}, err
	}
	return m, nil
}
