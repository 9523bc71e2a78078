// Package billing holds invoices: their item, the application-side
// workflow that creates them and moves their status, and the reads.
package billing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/workflow"
)

// Status is an invoice's state in its workflow (Transitions).
type Status string

// States of an invoice.
const (
	Draft         Status = "draft"
	Approved      Status = "approved"
	Sent          Status = "sent"
	PartiallyPaid Status = "partially_paid"
	Overdue       Status = "overdue"
	Paid          Status = "paid"
	Cancelled     Status = "cancelled"
	Credited      Status = "credited"
)

// Statuses lists an invoice's states in the spec's order.
var Statuses = []Status{Draft, Approved, Sent, PartiallyPaid, Overdue, Paid, Cancelled, Credited}

// Transitions of an invoice's status. A sent invoice is withdrawn by a
// credit note (credited), never by going back; paid never returns to draft.
var Transitions = workflow.Transitions[Status]{
	Draft:         {Approved, Sent, Cancelled},
	Approved:      {Draft, Sent, Cancelled},
	Sent:          {PartiallyPaid, Paid, Overdue, Credited},
	PartiallyPaid: {Paid, Overdue, Credited},
	Overdue:       {PartiallyPaid, Paid, Credited},
	Paid:          {Credited},
	Cancelled:     {},
	Credited:      {},
}

// Open reports whether an invoice in status st is a receivable: sent to
// the client and not settled (the receivables report lists these).
func (st Status) Open() bool { return st == Sent || st == PartiallyPaid || st == Overdue }

// Creatable reports whether an invoice may be created in status st: the
// states before it is settled, not the ones only a payment reaches.
func (st Status) Creatable() bool { return st == Draft || st == Approved || st == Sent }

// Event is the event a move into status st raises: sent raises
// invoice.issued, paid raises invoice.paid, any other invoice.updated.
func (st Status) Event() outbox.Type {
	switch st {
	case Sent:
		return outbox.InvoiceIssued
	case Paid:
		return outbox.InvoicePaid
	}
	return outbox.InvoiceUpdated
}

// createdEvent is the event an invoice created in status st raises:
// invoice.issued when it is created as sent, invoice.created otherwise.
func (st Status) createdEvent() outbox.Type {
	if st == Sent {
		return outbox.InvoiceIssued
	}
	return outbox.InvoiceCreated
}

// MaxBilledEntries bounds the time entries one invoice bills (and a
// cancellation gives back): each is written in the invoice's transaction
// with its copy by id and its time_entry.updated (three actions), beside
// the invoice, its lines, its number's guard and its own event, within the 100 actions DynamoDB allows a
// transaction (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
const MaxBilledEntries = 32

// MaxLines keeps an invoice's lines item far below DynamoDB's 400 KB.
const MaxLines = 200

// MaxLineDescription bounds a line's description, in characters.
const MaxLineDescription = 500

// Line is one invoice line in minor units; it may bill a time entry.
type Line struct {
	Description string `dynamodbav:"description" json:"description"`
	Amount      int64  `dynamodbav:"amount" json:"amount"`
	TimeEntryID string `dynamodbav:"time_entry_id,omitempty" json:"time_entry_id,omitempty"`
}

// Invoice is a bill on one matter. Lines are returned by the single read only.
type Invoice struct {
	store.Keys `json:"-"`
	ID         string `dynamodbav:"id" json:"id"`
	Number     string `dynamodbav:"number" json:"number"`
	MatterID   string `dynamodbav:"matter_id" json:"matter_id"`
	ClientID   string `dynamodbav:"client_id" json:"client_id"`
	Status     Status `dynamodbav:"status" json:"status"`
	IssueDate  string `dynamodbav:"issue_date" json:"issue_date"`
	DueDate    string `dynamodbav:"due_date" json:"due_date"`
	Currency   string `dynamodbav:"currency" json:"currency"`
	Total      int64  `dynamodbav:"total" json:"total"`
	// Lines live in an item of their own (INV#<id>#LINES), read with the
	// invoice by the single read: the invoice's five index entries stay
	// small, whatever its lines.
	Lines     []Line `dynamodbav:"-" json:"lines,omitempty"`
	CreatedAt string `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt string `dynamodbav:"updated_at" json:"updated_at"`
	SentAt    string `dynamodbav:"sent_at,omitempty" json:"sent_at,omitempty"`
	PaidAt    string `dynamodbav:"paid_at,omitempty" json:"paid_at,omitempty"`
}

func invoiceSK(id string) string { return "INV#" + id }

// linesItem holds an invoice's lines.
type linesItem struct {
	store.Keys
	Lines []Line `dynamodbav:"lines"`
}

// LinesItem is the item holding v's lines, for writers of whole invoices
// (seed).
func LinesItem(org string, v *Invoice) any { return linesOf(org, v) }

func linesOf(org string, v *Invoice) linesItem {
	return linesItem{Keys: store.Keys{PK: store.OrgPK(org), SK: invoiceSK(v.ID) + "#LINES", Kind: "invoice_lines"}, Lines: v.Lines}
}

// SetKeys fills the keys: GSI1 all by issue date, GSI2 by matter, GSI3 by
// client, GSI5 by status, GSI7 all by last change (updated_since); GSI4
// only while open, by due date (receivables).
func (v *Invoice) SetKeys(org string) {
	seq := store.Seq(v.IssueDate, v.ID)
	v.Keys = store.Keys{PK: store.OrgPK(org), SK: invoiceSK(v.ID), Kind: "invoice",
		GSI1PK: store.Collection(org, "INV"), GSI1SK: seq,
		GSI2PK: store.Collection(org, "INV", "MATTER", v.MatterID), GSI2SK: seq,
		GSI3PK: store.Collection(org, "INV", "CLIENT", v.ClientID), GSI3SK: seq,
		GSI5PK: store.Collection(org, "INV", "STATUS", string(v.Status)), GSI5SK: seq,
		GSI7PK: store.Collection(org, "INV"), GSI7SK: store.Seq(v.UpdatedAt, v.ID)}
	if v.Status.Open() {
		v.GSI4PK, v.GSI4SK = OpenPK(org), store.Seq(v.DueDate, v.ID)
	}
}

// OpenPK is the partition of open invoices, for the receivables report.
func OpenPK(org string) string { return store.Collection(org, "INV", "OPEN") }

// Guards: an invoice's number is unique.
func (v *Invoice) Guards(org string) []store.Guard {
	return []store.Guard{store.NewGuard(org, "INVOICENO", v.Number, v.ID)}
}

// Event is the invoice as webhook events carry it: identifiers and status.
func Event(v *Invoice) map[string]any {
	return map[string]any{"id": v.ID, "status": v.Status, "total": v.Total, "currency": v.Currency, "matter_id": v.MatterID, "client_id": v.ClientID}
}

// Store keeps invoices.
type Store struct{ db *store.DB }

// NewStore returns a Store on db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// Get reads an invoice with its lines: one consistent Query of the
// invoice's two items (INV#<id> and INV#<id>#LINES).
func (s *Store) Get(ctx context.Context, org, id string) (Invoice, error) {
	page, err := s.db.Query(ctx, store.ListQuery{PK: store.OrgPK(org), SKPrefix: invoiceSK(id), Limit: 2, Consistent: true})
	if err != nil {
		return Invoice{}, err
	}
	var v Invoice
	found := false
	for _, it := range page.Items {
		switch sk, _ := it[store.AttrSK].(*ddbtypes.AttributeValueMemberS); {
		case sk == nil:
		case sk.Value == invoiceSK(id):
			if err := store.Unmarshal(it, &v); err != nil {
				return Invoice{}, err
			}
			found = true
		case sk.Value == invoiceSK(id)+"#LINES":
			var l linesItem
			if err := store.Unmarshal(it, &l); err != nil {
				return Invoice{}, err
			}
			v.Lines = l.Lines
		}
	}
	if !found {
		return Invoice{}, store.ErrNotFound
	}
	if v.Lines == nil {
		v.Lines = []Line{}
	}
	return v, nil
}

// Filter holds the /invoices filters.
type Filter struct {
	MatterID string `json:"matter_id,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	Status   Status `json:"status,omitempty"`
	From     string `json:"issue_date_from,omitempty"`
	To       string `json:"issue_date_to,omitempty"`
	// UpdatedSince: invoices changed at or after it (store.FormatTime).
	UpdatedSince string `json:"updated_since,omitempty"`
}

// List picks the index by priority matter, client, updated_since, status
// (the rest become filter expressions). The issue-date range is the
// sort-key range of every index but GSI7, which orders by last change:
// there the issue dates are a filter expression, as updated_since is on
// the others. Lines are left out.
func (s *Store) List(ctx context.Context, org string, req store.ListRequest[Filter]) ([]Invoice, store.StartKey, error) {
	f := req.Filter
	q := store.ListQuery{Index: store.GSI1, PK: store.Collection(org, "INV"), Limit: req.PerPage, After: req.After}
	if f.UpdatedSince != "" && f.MatterID == "" && f.ClientID == "" {
		q.Index, q.SKFrom = store.GSI7, f.UpdatedSince
		if f.Status != "" {
			q.Equal = map[string]string{"status": string(f.Status)}
		}
		q.Between("issue_date", f.From, f.To)
	} else {
		q.Dates(f.From, f.To)
		q.NarrowBy(org, "INV",
			store.KeyFilter{Index: store.GSI2, Attr: "matter_id", Segment: "MATTER", Value: f.MatterID},
			store.KeyFilter{Index: store.GSI3, Attr: "client_id", Segment: "CLIENT", Value: f.ClientID},
			store.KeyFilter{Index: store.GSI5, Attr: "status", Segment: "STATUS", Value: string(f.Status)})
		q.Between("updated_at", f.UpdatedSince, "")
	}
	q.Project = true // lines are not in the invoice item: only the single read has them
	return store.QueryInto[Invoice](ctx, s.db, q)
}

// Matches reports whether v passes the filters (a batch read by ids).
func (f Filter) Matches(v Invoice) bool {
	return httpapi.Is(v.MatterID, f.MatterID) && httpapi.Is(v.ClientID, f.ClientID) && httpapi.Is(v.Status, f.Status) &&
		httpapi.Between(v.IssueDate, f.From, f.To) && httpapi.Since(v.UpdatedAt, f.UpdatedSince)
}

// ByIDs reads the invoices of org with the given ids, without their lines:
// one BatchGetItem.
func (s *Store) ByIDs(ctx context.Context, org string, ids []string) ([]Invoice, error) {
	sks := make([]string, len(ids))
	for i, id := range ids {
		sks[i] = invoiceSK(id)
	}
	return store.BatchReadInto[Invoice](ctx, s.db, store.OrgPK(org), sks)
}

// NewInvoice describes an invoice the application issues.
type NewInvoice struct {
	MatterID  string
	IssueDate string
	Lines     []Line
	Status    Status // Draft (default), Approved or Sent
}

// Create issues an invoice on a matter. Lines that bill a time entry need an
// approved entry of that matter; the entries become invoiced in the same
// transaction as the invoice, each with its time_entry.updated, and the
// invoice's own event (invoice.issued when created as sent,
// invoice.created otherwise), or nothing happens.
func (s *Store) Create(ctx context.Context, org string, in NewInvoice, now time.Time) (Invoice, error) {
	issue, err := in.check()
	if err != nil {
		return Invoice{}, err
	}
	mpk, msk := matter.Key(org, in.MatterID)
	m, err := store.ReadInto[matter.Matter](ctx, s.db, mpk, msk)
	if errors.Is(err, store.ErrNotFound) {
		return Invoice{}, fmt.Errorf("no matter %s in organisation %s", in.MatterID, org)
	}
	if err != nil {
		return Invoice{}, err
	}
	v := newInvoice(m, in, issue, now)
	billed, err := s.bill(ctx, org, m.ID, v.ID, in.Lines, now)
	if err != nil {
		return Invoice{}, err
	}
	if v.Total < 0 {
		return Invoice{}, fmt.Errorf("the lines add up to %d: an invoice's total cannot be negative (issue a credit note instead)", v.Total)
	}
	n, err := s.db.Increment(ctx, store.OrgPK(org), "COUNTER#INVOICE", 1)
	if err != nil {
		return Invoice{}, err
	}
	v.Number = fmt.Sprintf("INV-%d", n)
	v.SetKeys(org)
	if err := s.commitCreated(ctx, org, &v, billed, now); err != nil {
		return Invoice{}, err
	}
	return v, nil
}

// check refuses what no invoice can be created from, before any read, and
// returns the issue date; an unset status is Draft.
func (in *NewInvoice) check() (issue time.Time, err error) {
	if in.Status == "" {
		in.Status = Draft
	}
	if !in.Status.Creatable() {
		return time.Time{}, fmt.Errorf("%w: an invoice is created as draft, approved or sent, not %s", workflow.ErrRefused, in.Status)
	}
	issue, err = time.Parse(time.DateOnly, in.IssueDate)
	if err != nil {
		return time.Time{}, fmt.Errorf("issue date %q is not YYYY-MM-DD", in.IssueDate)
	}
	if len(in.Lines) == 0 || len(in.Lines) > MaxLines {
		return time.Time{}, fmt.Errorf("an invoice needs 1 to %d lines", MaxLines)
	}
	for i, l := range in.Lines {
		switch {
		case l.Description == "":
			return time.Time{}, fmt.Errorf("line %d has no description", i+1)
		case utf8.RuneCountInString(l.Description) > MaxLineDescription:
			return time.Time{}, fmt.Errorf("line %d: a description is at most %d characters", i+1, MaxLineDescription)
		}
	}
	return issue, nil
}

// newInvoice is the invoice in creates on m: due 30 days after issue, its
// total the sum of its lines; its number and keys come later.
func newInvoice(m matter.Matter, in NewInvoice, issue, now time.Time) Invoice {
	v := Invoice{ID: store.NewID(), MatterID: m.ID, ClientID: m.ClientID, Status: in.Status, IssueDate: in.IssueDate,
		DueDate: issue.AddDate(0, 0, 30).Format(time.DateOnly), Currency: "DKK", Lines: in.Lines,
		CreatedAt: store.FormatTime(now)}
	v.UpdatedAt = v.CreatedAt
	if v.Status == Sent {
		v.SentAt = v.CreatedAt
	}
	for _, l := range in.Lines {
		v.Total += l.Amount
	}
	return v
}

// billedEntry is a time entry an invoice bills, as it will be written.
type billedEntry struct {
	entry timeentry.TimeEntry
	prev  string // its updated_at as read
}

// bill reads the time entries that lines bill (each must be an approved
// entry of the matter) and marks them billed by the invoice.
func (s *Store) bill(ctx context.Context, org, matterID, invoiceID string, lines []Line, now time.Time) ([]billedEntry, error) {
	entries := timeentry.NewStore(s.db)
	var billed []billedEntry
	for i, l := range lines {
		if l.TimeEntryID == "" {
			continue
		}
		t, err := entries.Get(ctx, org, matterID, l.TimeEntryID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("line %d: no time entry %s on matter %s", i+1, l.TimeEntryID, matterID)
		}
		if err != nil {
			return nil, err
		}
		prev := t.UpdatedAt
		if err := t.Bill(invoiceID, now); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		t.SetKeys(org)
		billed = append(billed, billedEntry{t, prev})
	}
	if len(billed) > MaxBilledEntries {
		return nil, fmt.Errorf("%w: an invoice bills at most %d time entries (this one %d), each changed with its event in the invoice's transaction; bill the rest on another invoice",
			workflow.ErrRefused, MaxBilledEntries, len(billed))
	}
	return billed, nil
}

// commitCreated writes the invoice, its lines and its number's guard, the
// billed entries (each unchanged since read) with their time_entry.updated,
// and the invoice's own event, in one transaction.
func (s *Store) commitCreated(ctx context.Context, org string, v *Invoice, billed []billedEntry, now time.Time) error {
	tx := s.db.Tx()
	tx.PutNew(*v)
	tx.PutNew(linesOf(org, v))
	tx.PutNew(v.Guards(org)[0])
	for _, b := range billed {
		timeentry.Write(tx, org, &b.entry, timeentry.BilledCondition(b.prev))
		if err := timeentry.RaiseUpdated(tx, org, &b.entry, timeentry.Approved, now); err != nil {
			return err
		}
	}
	if err := addEvent(tx, org, v.Status.createdEvent(), v, "", now); err != nil {
		return err
	}
	err := tx.Commit(ctx)
	var failed *store.TxFailed
	if errors.As(err, &failed) && len(billed) > 0 {
		return fmt.Errorf("%w: a billed time entry changed while the invoice was created; try again", workflow.ErrRefused)
	}
	return err
}

// SetStatus moves an invoice: sent raises invoice.issued, paid raises
// invoice.paid, any other move invoice.updated; cancelled gives its time
// entries back as approved, each with its time_entry.updated.
func (s *Store) SetStatus(ctx context.Context, org, id string, to Status, now time.Time) (Invoice, error) {
	var v Invoice
	err := store.Optimistic("invoice "+id, func() error {
		var err error
		v, err = s.Get(ctx, org, id)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no invoice %s in organisation %s", id, org)
		}
		if err != nil {
			return err
		}
		if err := Transitions.Check("invoice", v.Status, to); err != nil {
			return err
		}
		prev, was := v.UpdatedAt, v.Status
		v.Status, v.UpdatedAt = to, store.NextUpdate(prev, now)
		switch to {
		case Sent:
			v.SentAt = v.UpdatedAt
		case Paid:
			v.PaidAt = v.UpdatedAt
		}
		v.SetKeys(org)
		tx := s.db.Tx()
		tx.PutWhen(v, store.UnchangedSince(prev))
		if to == Cancelled {
			if err := s.release(ctx, tx, org, &v, now); err != nil {
				return err
			}
		}
		if err := addEvent(tx, org, to.Event(), &v, was, now); err != nil {
			return err
		}
		err = tx.Commit(ctx)
		var failed *store.TxFailed
		if errors.As(err, &failed) {
			return store.ErrConflict // the invoice or an entry changed meanwhile: read again
		}
		return err
	})
	if err != nil {
		return Invoice{}, err
	}
	return v, nil
}

// release puts the invoice's time entries back to approved.
func (s *Store) release(ctx context.Context, tx *store.TxBuilder, org string, v *Invoice, now time.Time) error {
	entries := timeentry.NewStore(s.db)
	for _, l := range v.Lines {
		if l.TimeEntryID == "" {
			continue
		}
		t, err := entries.Get(ctx, org, v.MatterID, l.TimeEntryID)
		if err != nil {
			return err
		}
		prev := t.UpdatedAt
		if !t.Release(v.ID, now) {
			continue
		}
		t.SetKeys(org)
		timeentry.Write(tx, org, &t, store.UnchangedSince(prev))
		if err := timeentry.RaiseUpdated(tx, org, &t, timeentry.Invoiced, now); err != nil {
			return err
		}
	}
	return nil
}

// addEvent puts the invoice's event of type typ into tx; previous is the
// status it left ("" at its creation).
func addEvent(tx *store.TxBuilder, org string, typ outbox.Type, v *Invoice, previous Status, now time.Time) error {
	e := Event(v)
	if previous != "" {
		e["previous_status"] = previous
	}
	return outbox.Raise(tx, org, typ, "invoice", e, now)
}

// Handlers returns the handlers of the invoices family.
func Handlers(s *Store) httpapi.Handlers {
	return httpapi.Handlers{
		"invoices.list": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeList(w, r, "invoices", parseFilter, s.List, s.ByIDs)
		},
		"invoices.get": httpapi.GetHandler("invoice", "invoice", s.Get),
	}
}

func parseFilter(q url.Values) (Filter, error) {
	var f Filter
	var err error
	if f.MatterID, err = httpapi.UUIDParam(q, "matter_id"); err != nil {
		return Filter{}, err
	}
	if f.ClientID, err = httpapi.UUIDParam(q, "client_id"); err != nil {
		return Filter{}, err
	}
	if f.Status, err = httpapi.EnumParam(q, "status", Statuses...); err != nil {
		return Filter{}, err
	}
	if f.From, f.To, err = httpapi.DateRangeParams(q, "issue_date_from", "issue_date_to"); err != nil {
		return Filter{}, err
	}
	f.UpdatedSince, err = httpapi.SinceParam(q, "updated_since")
	return f, err
}
