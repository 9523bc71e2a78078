// Package auth holds API clients (keys), their scopes, and the single
// round trip that authenticates a bearer token and counts it against the
// client's rate limit.
package auth

import (
	"fmt"
	"slices"
	"strings"
)

// Catalogue is every scope a key can carry (spec: Authentication 7).
// settings:read and settings:write are reserved: keys may carry them, and
// no route requires them, so they open nothing.
var Catalogue = []string{
	"matters:read", "matters:write",
	"clients:read", "clients:write", "parties:write",
	"time:read", "time:write",
	"invoices:read", "reports:read", "documents:read",
	"settings:read", "settings:write",
	"webhooks:manage",
}

// ParseScopes validates a comma-separated scope list against the catalogue.
func ParseScopes(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(Catalogue, p) {
			return nil, fmt.Errorf("unknown scope %q (known: %s)", p, strings.Join(Catalogue, ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("at least one scope is required (known: %s)", strings.Join(Catalogue, ", "))
	}
	return out, nil
}
