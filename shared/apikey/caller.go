package apikey

import (
	"errors"
	"slices"
	"time"
)

// Caller is who a key identifies, as the edge needs it: the API client,
// the organisation that alone decides what a request may see, and the
// scopes granted when the key was made.
type Caller struct {
	ID     string // the API client's id
	OrgID  string
	Scopes []string
}

// HasScope reports whether the caller was granted scope.
func (c Caller) HasScope(scope string) bool { return slices.Contains(c.Scopes, scope) }

// Usage is the client's rate-limit state after counting a request.
type Usage struct {
	Count int64     // requests in the current window, this one included
	Limit int       // the client's own limit; 0: the stage's
	Reset time.Time // when the current window ends
}

// ErrUnauthenticated is the error of a key that is unknown, revoked or
// expired (the key store's auth.ErrUnauthenticated is this one).
var ErrUnauthenticated = errors.New("auth: unknown, revoked or expired key")
