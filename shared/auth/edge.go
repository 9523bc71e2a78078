package auth

import (
	"context"
	"time"

	"github.com/practice-api/practice-api/shared/apikey"
)

// Identify is Authenticate as the edge asks it (httpapi.Authenticator):
// the caller the key identifies and its usage after counting the request,
// in apikey's types, so that the edge links no store. Its errors are
// Authenticate's (ErrUnauthenticated is apikey.ErrUnauthenticated).
func (s *Store) Identify(ctx context.Context, tok apikey.Token, now time.Time) (apikey.Caller, apikey.Usage, error) {
	c, u, err := s.Authenticate(ctx, tok, now)
	if err != nil {
		return apikey.Caller{}, apikey.Usage{}, err
	}
	return apikey.Caller{ID: c.ID, OrgID: c.OrgID, Scopes: c.Scopes}, apikey.Usage{Count: u.Count, Limit: u.Limit, Reset: u.Reset}, nil
}
