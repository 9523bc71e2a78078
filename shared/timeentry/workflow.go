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
	var t TimeEntry
	matterID := ""
	err := store.Optimistic("time entry "+id, func() error {
		var err error
		if matterID == "" {
			t, err = s.Find(ctx, org, id)
			matterID = t.MatterID
		} else {
			t, err = s.Get(ctx, org, matterID, id)
		}
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		if to == "invoiced" || t.Status == "invoiced" {
			return fmt.Errorf("%w: a time entry becomes invoiced, and stops being invoiced, only through an invoice (create one with its time_entry_id, or cancel that invoice)", workflow.ErrRefused)
		}
		if err := Transitions.Check("time entry", t.Status, to); err != nil {
			return err
		}
		prev := t.UpdatedAt
		t.Status, t.UpdatedAt = to, store.NextUpdate(prev, now)
		t.SetKeys(org)
		item, err := store.Marshal(t)
		if err != nil {
			return err
		}
		return s.db.Replace(ctx, item, prev) // ErrConflict: changed meanwhile, read again
	})
	if err != nil {
		return TimeEntry{}, err
	}
	return t, nil
}
