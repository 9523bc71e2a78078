package party

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/practice-api/practice-api/shared/store"
)

// SetKYC records the outcome of a client's KYC case, as the application's
// KYC workflow does. expires (optional) ends an approval; a status without
// expires clears any earlier expiry.
func (s *Store) SetKYC(ctx context.Context, org, clientID, status string, expires time.Time, now time.Time) (Client, error) {
	if !slices.Contains(KYCStatuses, status) {
		return Client{}, fmt.Errorf("unknown KYC status %q (known: %s)", status, strings.Join(KYCStatuses, ", "))
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
		prev := c.UpdatedAt
		c.KYCStatus, c.KYCExpiresAt = status, ""
		if !expires.IsZero() {
			c.KYCExpiresAt = store.FormatTime(expires)
		}
		c.UpdatedAt = store.NextUpdate(prev, now)
		c.SetKeys(org)
		item, err := store.Marshal(c)
		if err != nil {
			return err
		}
		return s.db.Replace(ctx, item, prev)
	})
	if err != nil {
		return Client{}, err
	}
	return c, nil
}
