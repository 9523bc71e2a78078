package timeentry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/workflow"
)

// Transitions of a time entry's status. invoiced is entered and left only
// through an invoice (created on approved entries; cancelled invoices give
// their entries back as approved), never by a status change of its own.
var Transitions = workflow.Transitions[Status]{
	Draft:      {Submitted, WrittenOff},
	Submitted:  {Draft, Approved, WrittenOff},
	Approved:   {Submitted, WrittenOff, Invoiced},
	Invoiced:   {Approved},
	WrittenOff: {},
}

// CheckManual refuses a status change of the entry's own (the approval
// flow) that the workflow does not allow: invoiced is entered and left
// only through an invoice (Bill, Release).
func CheckManual(from, to Status) error {
	if to == Invoiced || from == Invoiced {
		return fmt.Errorf("%w: a time entry becomes invoiced, and stops being invoiced, only through an invoice (create one with its time_entry_id, or cancel that invoice)", workflow.ErrRefused)
	}
	return Transitions.Check("time entry", from, to)
}

// Bill marks an approved entry as invoiced by invoiceID, as of now. Only
// approved time is invoiced; the caller writes the entry on condition
// BilledCondition, so that a concurrent change refuses the invoice, with
// its time_entry.updated (RaiseUpdated).
func (t *TimeEntry) Bill(invoiceID string, now time.Time) error {
	if t.Status != Approved {
		return fmt.Errorf("%w: time entry %s is %s; only approved time is invoiced", workflow.ErrRefused, t.ID, t.Status)
	}
	t.Status, t.InvoiceID, t.UpdatedAt = Invoiced, invoiceID, store.NextUpdate(t.UpdatedAt, now)
	return nil
}

// BilledCondition is the condition on an entry's item under which Bill's
// change is written: unchanged since it was read at prev, and approved.
func BilledCondition(prev string) expression.ConditionBuilder {
	return expression.Name("updated_at").Equal(expression.Value(prev)).And(expression.Name("status").Equal(expression.Value(string(Approved))))
}

// Release gives an entry invoiced by invoiceID back as approved (its
// invoice was cancelled), as of now. It reports false, changing nothing,
// for an entry that invoice does not hold.
func (t *TimeEntry) Release(invoiceID string, now time.Time) bool {
	if t.InvoiceID != invoiceID || t.Status != Invoiced {
		return false
	}
	t.Status, t.InvoiceID, t.UpdatedAt = Approved, "", store.NextUpdate(t.UpdatedAt, now)
	return true
}

// ErrNotFound is returned for an entry absent from the organisation.
var ErrNotFound = errors.New("time entry: not found")

// SetStatus moves an entry through the workflow (the application's approval
// flow), recomputing its amount as every save does, and raises
// time_entry.updated in the same transaction.
func (s *Store) SetStatus(ctx context.Context, org, id string, to Status, now time.Time) (TimeEntry, error) {
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
		if err := CheckManual(t.Status, to); err != nil {
			return err
		}
		prev, was := t.UpdatedAt, t.Status
		t.Status, t.UpdatedAt = to, store.NextUpdate(prev, now)
		t.SetKeys(org)
		// The move and its time_entry.updated commit together.
		tx := s.db.Tx()
		Write(tx, org, &t, store.UnchangedSince(prev))
		if err := RaiseUpdated(tx, org, &t, was, now); err != nil {
			return err
		}
		var failed *store.TxFailed
		if err := tx.Commit(ctx); errors.As(err, &failed) {
			return store.ErrConflict // changed meanwhile: read again
		} else if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return TimeEntry{}, err
	}
	return t, nil
}

// timeEntries is the Scan filter of BackfillCopies: constant, built once.
var timeEntries = store.MustBuild(expression.NewBuilder().WithFilter(expression.Name("kind").Equal(expression.Value("time_entry"))))

// BackfillCopies writes the copy by id of every entry that has none (the
// entries written before copies were: a batch read by ids finds an entry
// only by its copy). A Scan of the table, a page at a time, and one
// conditional PutItem per entry: a copy already there (written by a
// change meanwhile, which is newer) is left as it is. It runs once, as a
// data change of the release (shared/migrate).
func BackfillCopies(ctx context.Context, db *store.DB) error {
	var start map[string]ddbtypes.AttributeValue
	for {
		out, err := db.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(db.Table), ExclusiveStartKey: start,
			FilterExpression: timeEntries.Filter(), ExpressionAttributeNames: timeEntries.Names(), ExpressionAttributeValues: timeEntries.Values()})
		if err != nil {
			return err
		}
		for _, it := range out.Items {
			var t TimeEntry
			if err := store.Unmarshal(it, &t); err != nil {
				return err
			}
			org, ok := strings.CutPrefix(t.PK, "O#")
			if !ok {
				continue
			}
			item, err := store.Marshal(t.ByID(org))
			if err != nil {
				return err
			}
			if err := db.PutNew(ctx, item); err != nil && !errors.Is(err, store.ErrConflict) {
				return err
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		start = out.LastEvaluatedKey
	}
}
