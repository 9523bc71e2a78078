package auth

import "github.com/practice-api/practice-api/shared/apikey"

// Modes of a key. The mode is part of the token's prefix, so a live key is
// told from a test key at a glance (and by secret scanners).
const (
	ModeLive = apikey.ModeLive
	ModeTest = apikey.ModeTest
)

// ErrMalformedToken is returned for a bearer value that is not a key of ours.
var ErrMalformedToken = apikey.ErrMalformed

// Token is a parsed bearer key (apikey.Token, which the edge parses
// without linking this store).
type Token = apikey.Token

// ParseToken parses a bearer value without touching the store.
func ParseToken(s string) (Token, error) { return apikey.Parse(s) }

func newToken(mode, clientID string) (Token, error) { return apikey.New(mode, clientID) }
