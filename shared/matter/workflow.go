package matter

import (
	"context"
	"errors"
	"fmt"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/workflow"
)

// Transitions of a matter's status, applied by the application (the API
// only creates). Activating needs the client's KYC in order, as at import.
var Transitions = workflow.Transitions{
	"active":   {"dormant", "closed"},
	"dormant":  {"active", "closed"},
	"closed":   {"active", "archived"}, // reopened, or archived for good
	"archived": {},
}

// ErrNotFound is returned for a matter absent from the organisation.
var ErrNotFound = errors.New("matter: not found")

// SetStatus moves a matter to status `to`, with the change and its event
// (matter.closed) in one transaction, conditional on the matter being
// unchanged since it was read.
func (s *Store) SetStatus(ctx context.Context, org, id, to string, now time.Time) (Matter, error) {
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
		prev := m.UpdatedAt
		m.Status, m.UpdatedAt = to, store.NextUpdate(prev, now)
		if to == "closed" {
			m.ClosedAt = m.UpdatedAt
		} else if to == "active" || to == "dormant" {
			m.ClosedAt = ""
		}
		m.SetKeys(org)
		tx := s.db.Tx()
		cond, vals := store.Unchanged(prev)
		mi := tx.PutIf(m, cond, nil, vals)
		ki := -1
		if to == "active" {
			cpk, csk := party.ClientKey(org, m.ClientID)
			ki = tx.Check(cpk, csk, "kyc_status = :approved AND (attribute_not_exists(kyc_expires_at) OR kyc_expires_at > :now)", nil,
				map[string]ddbtypes.AttributeValue{
					":approved": &ddbtypes.AttributeValueMemberS{Value: party.KYCApproved},
					":now":      &ddbtypes.AttributeValueMemberS{Value: store.FormatTime(now)},
				})
		}
		if to == "closed" {
			ev, err := outbox.New(org, outbox.MatterClosed, "matter", Event(&m), now)
			if err != nil {
				return err
			}
			outbox.Add(tx, ev)
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
