package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/practice-api/practice-api/shared/apperr"
)

// GetHandler serves a single read of the path id named param in the caller's
// organisation as {"data": ...}, with a strong ETag of the body; a matching
// If-None-Match answers 304 without a body. A malformed, absent or foreign
// id is the same 404.
func GetHandler[T any](param, what string, get func(ctx context.Context, org, id string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := PathID(r.PathValue(param))
		if !ok {
			WriteError(w, r, NotFound(what))
			return
		}
		v, err := get(r.Context(), OrgID(r.Context()), id)
		var domain *apperr.Error
		if errors.Is(err, apperr.NotFound) && !errors.As(err, &domain) { // the store's ErrNotFound: no such item
			err = NotFound(what)
		}
		if err != nil {
			WriteError(w, r, err)
			return
		}
		body, err := json.Marshal(Data(v))
		if err != nil {
			WriteError(w, r, err)
			return
		}
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		w.Header().Set("ETag", etag)
		if MatchesETag(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append(body, '\n'))
	}
}

// MatchesETag applies If-None-Match: "*" or any listed tag, weak or strong
// (RFC 9110 compares weakly for GET).
func MatchesETag(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
