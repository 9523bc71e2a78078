package timeentry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/workflow"
)

// Transitions of a time entry's status. invoiced is entered and left only
// through an invoice (created on approved entries; cancelled invoices give
// their entries back as approved), never by a status change of its own.
var Transitions = workflow.Transitions{
	"draft":       {"submitted", "written_off"},
	"submitted":   {"draft", "approved", "written_off"},
	"approved":    {"submitted", "written_off", "invoiced"},
	"invoiced":    {"approved"},
	"written_off": {},
}

// ErrNotFound is returned for an entry absent from the organisation.
var ErrNotFound = errors.New("time entry: not found")

// SetStatus moves an entry through the workflow (the application's approval
// flow), recomputing its amount as every save does.
func (s *Store) SetStatus(ctx context.Context, org, id, to string, now time.Time) (TimeEntry, error) {
	for attempt := 0; attempt < 3; attempt++ {
		t, err := s.Get(ctx, org, id)
		if errors.Is(err, store.ErrNotFound) {
			return TimeEntry{}, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		if err != nil {
			return TimeEntry{}, err
		}
		if to == "invoiced" || t.Status == "invoiced" {
			return TimeEntry{}, fmt.Errorf("%w: a time entry becomes invoiced, and stops being invoiced, only through an invoice (create one with its time_entry_id, or cancel that invoice)", workflow.ErrRefused)
		}
		if err := Transitions.Check("time entry", t.Status, to); err != nil {
			return TimeEntry{}, err
		}
		prev := t.UpdatedAt
		t.Status, t.UpdatedAt = to, store.NextUpdate(prev, now)
		t.SetKeys(org)
		item, err := store.Marshal(t)
		if err != nil {
			return TimeEntry{}, err
		}
		if err := s.db.Replace(ctx, item, prev); errors.Is(err, store.ErrConflict) {
			continue
		} else if err != nil {
			return TimeEntry{}, err
		}
		return t, nil
	}
	return TimeEntry{}, fmt.Errorf("time entry %s keeps changing; try again", id)
}
