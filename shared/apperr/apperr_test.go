package apperr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/practice-api/practice-api/shared/apperr"
)

func TestAnErrorIsItsKind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		kind apperr.Kind
	}{
		{"missing", apperr.Missing("matter"), apperr.NotFound},
		{"wrapped", fmt.Errorf("get: %w", apperr.Invalidf("id", "bad")), apperr.Invalid},
		{"conflict", apperr.Conflictf("closed"), apperr.Conflict},
		{"the kind itself", apperr.Unavailable, apperr.Unavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range apperr.Kinds {
				if got := errors.Is(c.err, k); got != (k == c.kind) {
					t.Errorf("errors.Is(%v, %v) = %v", c.err, k, got)
				}
			}
		})
	}
}
