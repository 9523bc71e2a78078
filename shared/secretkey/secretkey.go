// Package secretkey reads keys from Secrets Manager for the workers (the
// company register's key of party enrichment, the synthetic check's API
// key). It is a package of its own so that what links party (every API
// function that reads a matter's client) does not link the Secrets
// Manager client: only the workers wire it (shared/app).
package secretkey

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/practice-api/practice-api/shared/clock"
)

// Key reads a key from Secrets Manager the first time it is asked
// for, and again once it is older than MaxAge (a rotated key reaches the
// workers within that), so that only the secret's name is a setting: the
// key is in no template, environment, URL or log. A failed read is not
// cached: the next lookup tries again.
type Key struct {
	Client *secretsmanager.Client
	Name   string // the secret's name or ARN
	MaxAge time.Duration
	// Clock is what MaxAge is counted on (the wall clock when nil).
	Clock clock.Clock

	mu      sync.Mutex
	key     string
	readAt  time.Time
	hasRead bool
}

// DefaultMaxAge is how long a read key is used before it is read again.
const DefaultMaxAge = time.Hour

// Get returns the key.
func (s *Key) Get(ctx context.Context) (string, error) {
	now := clock.Or(s.Clock).Now()
	maxAge := s.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hasRead && now.Sub(s.readAt) < maxAge {
		return s.key, nil
	}
	out, err := s.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.Name)})
	if err != nil {
		return "", err
	}
	if out.SecretString == nil || *out.SecretString == "" {
		return "", errors.New("the register key's secret holds no string")
	}
	s.key, s.readAt, s.hasRead = *out.SecretString, now, true
	return s.key, nil
}
