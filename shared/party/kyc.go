package party

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/workflow"
)

// SetKYC records the outcome of a client's KYC case, as the application's
// KYC workflow does, and raises client.updated in the same transaction.
// expires (optional) ends an approval; a status without expires clears any
// earlier expiry.
func (s *Store) SetKYC(ctx context.Context, org, clientID string, status KYCStatus, expires time.Time, now time.Time) (Client, error) {
	if !slices.Contains(KYCStatuses, status) {
		return Client{}, fmt.Errorf("unknown KYC status %q (known: %s)", status, strings.Join(workflow.Strings(KYCStatuses), ", "))
	}
	var c Client
	err := store.Optimistic("client "+clientID, func() error {
		var err error
		c, err = s.GetClient(ctx, org, clientID)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no client %s in organisation %s", clientID, org)
		}
		if err != nil {
			return err
		}
		prev, was := c.UpdatedAt, c.KYCStatus
		c.KYCStatus, c.KYCExpiresAt = status, ""
		if !expires.IsZero() {
			c.KYCExpiresAt = store.FormatTime(expires)
		}
		c.UpdatedAt = store.NextUpdate(prev, now)
		c.SetKeys(org)
		// The change and its client.updated commit together.
		tx := s.db.Tx()
		tx.PutWhen(c, store.UnchangedSince(prev))
		if err := outbox.Raise(tx, org, outbox.ClientUpdated, "client", ClientEvent(&c, was), now); err != nil {
			return err
		}
		var failed *store.TxFailed
		if err := tx.Commit(ctx); errors.As(err, &failed) {
			return store.ErrConflict // changed meanwhile: read again
		} else if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return Client{}, err
	}
	return c, nil
}
