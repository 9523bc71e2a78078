package party

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/workflow"
)

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
