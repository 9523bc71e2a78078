// Package apikey is what the edge (httpapi) knows of API keys: a bearer
// key parsed without the store (Token), the caller a key identifies
// (Caller: its organisation and scopes), and its rate-limit usage after a
// request (Usage). The key store (shared/auth) checks keys and counts
// requests; the edge depends on it through httpapi.Authenticator, whose
// types are these, so that it links no store and no AWS SDK, and its
// tests fake "this key has these scopes" without an engine.
//
// It imports nothing of ours.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/google/uuid"
)

// Modes of a key. The mode is part of the token's prefix, so a live key is
// told from a test key at a glance (and by secret scanners).
const (
	ModeLive = "live"
	ModeTest = "test"
)

const tokenPrefix = "pa_"

// ErrMalformed is returned for a bearer value that is not a key of ours.
var ErrMalformed = errors.New("auth: malformed token")

// Token is a parsed bearer key: pa_<mode>_<client id, 32 hex>_<secret id,
// 16 hex>_<secret, 64 hex>. The ids let one GetItem-sized write find the
// client; only the SHA-256 of the secret is ever stored.
type Token struct {
	Mode     string
	ClientID string // uuid
	SecretID string
	secret   string
}

// String renders the bearer value.
func (t Token) String() string {
	return tokenPrefix + t.Mode + "_" + strings.ReplaceAll(t.ClientID, "-", "") + "_" + t.SecretID + "_" + t.secret
}

// Hash is the stored form of the secret. Secrets are 256 random bits, so a
// fast hash is enough: there is nothing to brute-force.
func (t Token) Hash() string {
	sum := sha256.Sum256([]byte(t.secret))
	return hex.EncodeToString(sum[:])
}

// New returns a fresh key of mode for clientID: a random secret id and
// secret (the key store keeps only the secret's hash).
func New(mode, clientID string) (Token, error) {
	var sid [8]byte
	var sec [32]byte
	if _, err := rand.Read(sid[:]); err != nil {
		return Token{}, err
	}
	if _, err := rand.Read(sec[:]); err != nil {
		return Token{}, err
	}
	return Token{Mode: mode, ClientID: clientID, SecretID: hex.EncodeToString(sid[:]), secret: hex.EncodeToString(sec[:])}, nil
}

// Parse parses a bearer value without touching the store.
func Parse(s string) (Token, error) {
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok {
		return Token{}, ErrMalformed
	}
	parts := strings.Split(rest, "_")
	if len(parts) != 4 || (parts[0] != ModeLive && parts[0] != ModeTest) ||
		len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 64 ||
		!isHex(parts[1]) || !isHex(parts[2]) || !isHex(parts[3]) {
		return Token{}, ErrMalformed
	}
	id, err := uuid.Parse(parts[1])
	if err != nil {
		return Token{}, ErrMalformed
	}
	return Token{Mode: parts[0], ClientID: id.String(), SecretID: parts[2], secret: parts[3]}, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
