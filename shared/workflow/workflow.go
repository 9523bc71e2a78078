// Package workflow holds the state machines of matters, time entries and
// invoices as data: which state may move to which. The services enforce
// them; docs/workflows.md shows them as tables.
//
// Each domain names its states with its own string type (matter.Status,
// timeentry.Status, billing.Status), so a misspelt state, or one domain's
// state used in another's, does not compile.
package workflow

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrRefused is wrapped by every refused transition.
var ErrRefused = errors.New("workflow: transition refused")

// Transitions maps each state of one kind to the states it may move to
// directly. Every state is a key, final ones with no successors.
type Transitions[S ~string] map[S][]S

// Check refuses a move that the table does not allow, saying what is.
func (t Transitions[S]) Check(what string, from, to S) error {
	next, known := t[from]
	if !t.Has(to) {
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
		allowed = strings.Join(Strings(next), ", ")
	}
	return fmt.Errorf("%w: a %s cannot move from %s to %s (from %s it can move to: %s)", ErrRefused, what, from, to, from, allowed)
}

// Has reports whether s is a state of the table.
func (t Transitions[S]) Has(s S) bool {
	_, ok := t[s]
	return ok
}

// States lists the table's states in sorted order.
func (t Transitions[S]) States() []S {
	out := make([]S, 0, len(t))
	for s := range t {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Strings converts typed states to the strings the HTTP layer checks
// parameters and fields against.
func Strings[S ~string](states []S) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}
