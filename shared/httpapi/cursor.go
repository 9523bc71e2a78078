package httpapi

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/practice-api/practice-api/shared/listing"
)

// Sealer seals list cursors with AES-256-GCM: a cursor is opaque to the
// client, and any change to it fails to open (a clean 422, never a foreign
// row or a 500).
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a Sealer keyed with a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("cursor key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// cursor binds a continuation to its organisation, resource and filters.
type cursor struct {
	Org      string           `json:"o"`
	Resource string           `json:"r"`
	Filter   json.RawMessage  `json:"f"`
	After    listing.StartKey `json:"k"`
}

var errBadCursor = errors.New("cursor does not open")

var cursorAD = []byte("practice-api cursor v1")

func (s *Sealer) seal(c cursor) (string, error) {
	plain, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, cursorAD)), nil
}

func (s *Sealer) open(v string) (cursor, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(v)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return cursor{}, errBadCursor
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], cursorAD)
	if err != nil {
		return cursor{}, errBadCursor
	}
	var c cursor
	if err := json.Unmarshal(plain, &c); err != nil {
		return cursor{}, errBadCursor
	}
	return c, nil
}
