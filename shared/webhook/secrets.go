package webhook

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// SecretBox keeps webhook signing secrets encrypted at rest: the table
// holds only what Seal returns, and deliveries Open it. Each sealed secret
// is bound to the endpoint it belongs to (Binding: the organisation and
// the endpoint, as the cipher's associated data), so a sealed secret
// copied onto another endpoint's item, or another organisation's, does not
// open there.
type SecretBox interface {
	Seal(ctx context.Context, secret, binding string) (string, error)
	Open(ctx context.Context, sealed, binding string) (string, error)
}

// Binding is the associated data a secret of an endpoint is sealed with.
func Binding(org, endpoint string) string {
	return bindingPrefix + org + "/" + endpoint
}

const bindingPrefix = "practice-api/webhook-secret/"

// bindingContext is a binding's KMS encryption context: the organisation
// and the endpoint it names, which the key's policy requires (and
// CloudTrail shows with every use of the key).
func bindingContext(binding string) (map[string]string, error) {
	rest, ok := strings.CutPrefix(binding, bindingPrefix)
	org, endpoint, cut := strings.Cut(rest, "/")
	if !ok || !cut || org == "" || endpoint == "" || strings.Contains(endpoint, "/") {
		return nil, fmt.Errorf("webhook: %q names no organisation and endpoint", binding)
	}
	return map[string]string{"org": org, "endpoint": endpoint}, nil
}

// gcmSeal encrypts with AES-256-GCM under key, binding aad: nonce followed
// by ciphertext.
func gcmSeal(key []byte, plain, aad string) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, []byte(plain), []byte(aad)), nil
}

func gcmOpen(key, sealed []byte, aad string) (string, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return "", err
	}
	if len(sealed) < aead.NonceSize() {
		return "", errors.New("webhook: sealed secret too short")
	}
	var ad []byte
	if aad != "" {
		ad = []byte(aad)
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], ad)
	if err != nil {
		return "", fmt.Errorf("webhook: open secret: %w", err)
	}
	return string(plain), nil
}

var b64 = base64.RawURLEncoding

// LocalBox seals with a key kept in the table itself (the devserver, and
// stages without a customer-managed key): it keeps secrets out of plain
// sight in the items, not from whoever can read the whole table.
type LocalBox struct{ Key []byte }

// Sealed forms: v2 binds the endpoint (associated data); v1, written
// before that, opens without it (only local data folders can hold one:
// no stage was deployed before v2).
const (
	localPrefix   = "v2:local:"
	localPrefixV1 = "v1:local:"
)

// Seal implements SecretBox.
func (b LocalBox) Seal(_ context.Context, secret, binding string) (string, error) {
	if binding == "" {
		return "", errors.New("webhook: a secret is sealed for its endpoint")
	}
	ct, err := gcmSeal(b.Key, secret, binding)
	if err != nil {
		return "", err
	}
	return localPrefix + b64.EncodeToString(ct), nil
}

// Open implements SecretBox.
func (b LocalBox) Open(ctx context.Context, sealed, binding string) (string, error) {
	aad := binding
	rest, ok := strings.CutPrefix(sealed, localPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(sealed, localPrefixV1); !ok {
			return openPlain(sealed)
		}
		aad = ""
	}
	ct, err := b64.DecodeString(rest)
	if err != nil {
		return "", fmt.Errorf("webhook: sealed secret: %w", err)
	}
	return gcmOpen(b.Key, ct, aad)
}

// openPlain accepts a secret written before sealing existed.
func openPlain(s string) (string, error) {
	if strings.HasPrefix(s, "whsec_") {
		return s, nil
	}
	return "", errors.New("webhook: secret sealed in an unknown form")
}

// KMSBox is envelope encryption under a KMS key: each secret is sealed
// with a data key KMS generates for its endpoint, under an encryption
// context naming the organisation and the endpoint (which the key's
// policy requires of every call), and stored beside it, encrypted; opening
// decrypts each data key once per process, under the same context. A
// sealed secret copied to another endpoint opens neither at KMS nor in
// the cipher (its binding is the associated data too).
type KMSBox struct {
	Client *kms.Client
	KeyID  string

	mu     sync.Mutex
	opened map[string][]byte // encrypted data key → data key
}

// Sealed forms: v3 seals with a data key of the endpoint's own, under its
// encryption context; v2 (a data key shared for an hour, no context) and
// v1 (no binding) were written before and open without a context, which
// the key's policy now refuses: no stage held data before v3.
const (
	kmsPrefix   = "v3:kms:"
	kmsPrefixV2 = "v2:kms:"
	kmsPrefixV1 = "v1:kms:"
)

// Seal implements SecretBox: GenerateDataKey under the binding's context.
func (b *KMSBox) Seal(ctx context.Context, secret, binding string) (string, error) {
	if binding == "" {
		return "", errors.New("webhook: a secret is sealed for its endpoint")
	}
	ec, err := bindingContext(binding)
	if err != nil {
		return "", err
	}
	out, err := b.Client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(b.KeyID), KeySpec: kmstypes.DataKeySpecAes256, EncryptionContext: ec})
	if err != nil {
		return "", fmt.Errorf("webhook: data key: %w", err)
	}
	ct, err := gcmSeal(out.Plaintext, secret, binding)
	if err != nil {
		return "", err
	}
	return kmsPrefix + b64.EncodeToString(out.CiphertextBlob) + ":" + b64.EncodeToString(ct), nil
}

// Open implements SecretBox: Decrypt only (the delivery function may
// call nothing else on the key), under the binding's context.
func (b *KMSBox) Open(ctx context.Context, sealed, binding string) (string, error) {
	aad := binding
	ec, err := bindingContext(binding)
	if err != nil {
		return "", err
	}
	rest, ok := strings.CutPrefix(sealed, kmsPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(sealed, kmsPrefixV2); ok {
			ec = nil
		} else if rest, ok = strings.CutPrefix(sealed, kmsPrefixV1); ok {
			ec, aad = nil, ""
		} else {
			return openPlain(sealed)
		}
	}
	blob, body, ok := strings.Cut(rest, ":")
	ct, err := b64.DecodeString(body)
	if !ok || err != nil {
		return "", errors.New("webhook: sealed secret in an unknown form")
	}
	b.mu.Lock()
	key, cached := b.opened[blob]
	b.mu.Unlock()
	if !cached {
		raw, err := b64.DecodeString(blob)
		if err != nil {
			return "", errors.New("webhook: sealed secret in an unknown form")
		}
		out, err := b.Client.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: raw, KeyId: aws.String(b.KeyID), EncryptionContext: ec})
		if err != nil {
			return "", fmt.Errorf("webhook: decrypt data key: %w", err)
		}
		key = out.Plaintext
		b.mu.Lock()
		if b.opened == nil {
			b.opened = map[string][]byte{}
		}
		b.opened[blob] = key
		b.mu.Unlock()
	}
	return gcmOpen(key, ct, aad)
}
