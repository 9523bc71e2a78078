package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/practice-api/practice-api/shared/store"
)

// GetHandler serves a single read of the path id named param in the caller's
// organisation as {"data": ...}. A malformed, absent or foreign id is the
// same 404.
func GetHandler[T any](param, what string, get func(ctx context.Context, org, id string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := PathID(r.PathValue(param))
		if !ok {
			WriteError(w, r, NotFound(what))
			return
		}
		v, err := get(r.Context(), OrgID(r.Context()), id)
		if errors.Is(err, store.ErrNotFound) {
			err = NotFound(what)
		}
		if err != nil {
			WriteError(w, r, err)
			return
		}
		WriteJSON(w, http.StatusOK, Data(v))
	}
}
