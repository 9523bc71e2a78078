// Package signature signs and verifies webhook deliveries: the header
// Service-Signature is "t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "{t}.{raw body}" keyed with the endpoint's secret>". Receivers use Verify
// on the raw bytes they received, never on re-serialised JSON.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Header is the signature header's name.
const Header = "Service-Signature"

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock.
const DefaultTolerance = 300 * time.Second

// Errors of Verify.
var (
	ErrMalformed = errors.New("signature: malformed Service-Signature header")
	ErrTimestamp = errors.New("signature: timestamp outside the tolerance")
	ErrMismatch  = errors.New("signature: no v1 signature matches")
)

// Sign returns the header value for body sent at t.
func Sign(secret string, t time.Time, body []byte) string { return SignAll([]string{secret}, t, body) }

// SignAll returns the header value with one v1 signature per secret: during
// a secret rotation's grace period deliveries carry two, one made with the
// new secret and one with the old, and a receiver holding either verifies.
func SignAll(secrets []string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	h := "t=" + ts
	for _, s := range secrets {
		h += ",v1=" + digest(s, ts, body)
	}
	return h
}

func digest(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// VerifyAny is Verify for a receiver that holds several secrets (the new and
// the old while it switches over): one match of any of them passes.
func VerifyAny(secrets []string, header string, body []byte, now time.Time, tolerance time.Duration) error {
	err := ErrMismatch
	for _, s := range secrets {
		if err = Verify(s, header, body, now, tolerance); !errors.Is(err, ErrMismatch) {
			return err
		}
	}
	return err
}

// Verify checks a delivery: the header's timestamp is within tolerance of
// now, and one of its v1 signatures (several may be sent during a secret
// rotation) matches the raw body, compared in constant time.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrMalformed
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrMalformed
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrTimestamp
	}
	want := []byte(digest(secret, ts, body))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return ErrMismatch
}

// Standard Webhooks (standardwebhooks.com) headers, sent beside
// Service-Signature so that any of its libraries verifies a delivery:
// webhook-id is the event's id, webhook-timestamp the same Unix seconds,
// and webhook-signature holds "v1,<base64 HMAC-SHA256 of
// "{id}.{timestamp}.{raw body}">" per secret, space-separated. Its key is
// the secret's part after "whsec_", base64-decoded (Standard Webhooks' rule):
// the secrets this service issues are "whsec_" and the base64 of 32
// random bytes; older ones, "whsec_" and 64 hex digits, decode too (hex
// digits are base64 characters), so both verify with the libraries.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// StandardKey is a secret's Standard Webhooks key; ok is false when its
// part after "whsec_" is not base64.
func StandardKey(secret string) ([]byte, bool) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	return k, err == nil && len(k) > 0
}

// StandardSign returns the webhook-signature value of a delivery of event
// id sent at t: one "v1,<base64>" per secret that has a key.
func StandardSign(secrets []string, id string, t time.Time, body []byte) string {
	var sigs []string
	for _, s := range secrets {
		key, ok := StandardKey(s)
		if !ok {
			continue
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + strconv.FormatInt(t.Unix(), 10) + "."))
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}
