// Package workflow holds the state machines of matters, time entries and
// invoices as data: which state may move to which. The services enforce
// them; docs/workflows.md shows them as tables.
package workflow

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrRefused is wrapped by every refused transition.
var ErrRefused = errors.New("workflow: transition refused")

// Transitions maps each state to the states it may move to directly.
type Transitions map[string][]string

// Check refuses a move that the table does not allow, saying what is.
func (t Transitions) Check(what, from, to string) error {
	next, known := t[from]
	if _, ok := t[to]; !ok {
		return fmt.Errorf("%w: %q is not a %s status", ErrRefused, to, what)
	}
	if !known {
		return fmt.Errorf("%w: %s is in unknown status %q", ErrRefused, what, from)
	}
	if slices.Contains(next, to) {
		return nil
	}
	allowed := "none: it is final"
	if len(next) > 0 {
		allowed = strings.Join(next, ", ")
	}
	return fmt.Errorf("%w: a %s cannot move from %s to %s (from %s it can move to: %s)", ErrRefused, what, from, to, from, allowed)
}
