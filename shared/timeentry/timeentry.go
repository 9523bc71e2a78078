// Package timeentry holds time entries: their item, the import create, the
// list with its filters, and HTTP handlers.
package timeentry

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/body"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// Status is a time entry's state in its workflow (Transitions).
type Status string

// States of a time entry.
const (
	Draft      Status = "draft"
	Submitted  Status = "submitted"
	Approved   Status = "approved"
	Invoiced   Status = "invoiced"
	WrittenOff Status = "written_off"
)

// Statuses lists a time entry's states in the spec's order.
var Statuses = []Status{Draft, Submitted, Approved, Invoiced, WrittenOff}

// WorkInProgress are the states of unbilled work (the WIP report): logged
// and not yet invoiced or written off.
var WorkInProgress = []Status{Draft, Submitted, Approved}

// TimeEntry is logged time on a matter. Amount is derived on every save.
type TimeEntry struct {
	store.Keys      `json:"-"`
	ID              string `dynamodbav:"id" json:"id"`
	MatterID        string `dynamodbav:"matter_id" json:"matter_id"`
	ClientID        string `dynamodbav:"client_id" json:"client_id"`
	UserID          string `dynamodbav:"user_id" json:"user_id"`
	Date            string `dynamodbav:"date" json:"date"`
	DurationMinutes int64  `dynamodbav:"duration_minutes" json:"duration_minutes"`
	HourlyRate      int64  `dynamodbav:"hourly_rate" json:"hourly_rate"`
	Amount          int64  `dynamodbav:"amount" json:"amount"`
	Currency        string `dynamodbav:"currency" json:"currency"`
	Status          Status `dynamodbav:"status" json:"status"`
	Description     string `dynamodbav:"description,omitempty" json:"description,omitempty"`
	InvoiceID       string `dynamodbav:"invoice_id,omitempty" json:"invoice_id,omitempty"`
	CreatedAt       string `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt       string `dynamodbav:"updated_at" json:"updated_at"`
}

// MaxDescription bounds an entry's description, in characters.
const MaxDescription = 2000

// Amount is duration × hourly rate / 60 in minor units, rounded half up to
// a whole øre (rates and durations are never negative).
func Amount(durationMinutes, hourlyRate int64) int64 {
	return (durationMinutes*hourlyRate + 30) / 60
}

// An entry's id is a store.DateID of its date, so ids sort by entry date.
// Its item lives under its matter, and four indexes list it:
//
//	base  O#<org>  TE#M#<matter>#<id>    by matter (and a date range)
//	GSI1  O#<org>#TE#S#<status>  <id>    by status; all entries are the five
//	                                     status partitions merged (store.Merge)
//	GSI2  O#<org>#TE#C#<client>  <id>    by client
//	GSI3  O#<org>#TE#U#<user>    <id>    by user
//	GSI4  O#<org>#TE  <updated_at>#<id>  by last change (updated_since)
//
// so an entry is written with four index entries, not five (status and
// "all" share GSI1), and every filter is still a key.
func entrySK(matterID, id string) string { return "TE#M#" + matterID + "#" + id }

// Key returns the primary key of an entry of a matter.
func Key(org, matterID, id string) (pk, sk string) { return store.OrgPK(org), entrySK(matterID, id) }

// StatusPK is the GSI1 partition of an organisation's entries in status.
func StatusPK(org string, status Status) string {
	return store.Collection(org, "TE", "S", string(status))
}

// StatusPKs are the GSI1 partitions of every status: all of an
// organisation's entries.
func StatusPKs(org string, statuses ...Status) []string {
	if len(statuses) == 0 {
		statuses = Statuses
	}
	pks := make([]string, len(statuses))
	for i, st := range statuses {
		pks[i] = StatusPK(org, st)
	}
	return pks
}

// SetKeys fills the keys and derives the amount.
func (t *TimeEntry) SetKeys(org string) {
	t.Amount = Amount(t.DurationMinutes, t.HourlyRate)
	t.Keys = store.Keys{PK: store.OrgPK(org), SK: entrySK(t.MatterID, t.ID), Kind: "time_entry",
		GSI1PK: StatusPK(org, t.Status), GSI1SK: t.ID,
		GSI2PK: store.Collection(org, "TE", "C", t.ClientID), GSI2SK: t.ID,
		GSI3PK: store.Collection(org, "TE", "U", t.UserID), GSI3SK: t.ID,
		GSI4PK: ChangedPK(org), GSI4SK: store.Seq(t.UpdatedAt, t.ID)}
}

// An entry is also written as a copy keyed by its id alone
// (O#<org> / TEID#<id>, in no index), in the same transaction as every
// change of it: a batch read by ids (GET /time-entries?ids=) reads the
// copies in one BatchGetItem, where the entry's own key needs its matter.
func idSK(id string) string { return "TEID#" + id }

// ByID is t's copy keyed by its id alone, for the transaction that writes
// t (Write does both).
func (t *TimeEntry) ByID(org string) *TimeEntry {
	c := *t
	c.Keys = store.Keys{PK: store.OrgPK(org), SK: idSK(t.ID), Kind: "time_entry_by_id"}
	return &c
}

// Write adds t and its copy by id to tx: t on condition cond (unset, the
// zero ConditionBuilder, for a new entry), the copy as it is. It returns
// the index of t's write, to match against failed conditions.
func Write(tx *store.TxBuilder, org string, t *TimeEntry, cond expression.ConditionBuilder) int {
	var i int
	if !cond.IsSet() {
		i = tx.PutNew(t)
	} else {
		i = tx.PutWhen(t, cond)
	}
	tx.Put(t.ByID(org))
	return i
}

// Matches reports whether t passes the filters (a batch read by ids).
func (f Filter) Matches(t TimeEntry) bool {
	return httpapi.Is(t.MatterID, f.MatterID) && httpapi.Is(t.ClientID, f.ClientID) && httpapi.Is(t.UserID, f.UserID) &&
		httpapi.Is(t.Status, f.Status) && httpapi.Between(t.Date, f.DateFrom, f.DateTo) && httpapi.Since(t.UpdatedAt, f.UpdatedSince)
}

// ByIDs reads the entries of org with the given ids: one BatchGetItem of
// their copies by id.
func (s *Store) ByIDs(ctx context.Context, org string, ids []string) ([]TimeEntry, error) {
	sks := make([]string, len(ids))
	for i, id := range ids {
		sks[i] = idSK(id)
	}
	return store.BatchReadInto[TimeEntry](ctx, s.db, store.OrgPK(org), sks)
}

// ChangedPK is the GSI4 partition of an organisation's entries by last
// change.
func ChangedPK(org string) string { return store.Collection(org, "TE") }

// Guards: a time entry holds no unique values.
func (t *TimeEntry) Guards(string) []store.Guard { return nil }

// Event is the entry as webhook events carry it: identifiers and status.
func Event(t *TimeEntry) map[string]any {
	return map[string]any{"id": t.ID, "status": t.Status, "matter_id": t.MatterID, "user_id": t.UserID, "date": t.Date}
}

// ChangeEvent is the entry as time_entry.updated carries it: Event's
// fields, previous_status (the status it left) and, while an invoice
// bills it, invoice_id.
func ChangeEvent(t *TimeEntry, previous Status) map[string]any {
	e := Event(t)
	e["previous_status"] = previous
	if t.InvoiceID != "" {
		e["invoice_id"] = t.InvoiceID
	}
	return e
}

// RaiseUpdated puts t's time_entry.updated (it left status previous) into
// tx, the transaction that writes t's change.
func RaiseUpdated(tx *store.TxBuilder, org string, t *TimeEntry, previous Status, now time.Time) error {
	return outbox.Raise(tx, org, outbox.TimeEntryUpdated, "time_entry", ChangeEvent(t, previous), now)
}

// Store reads and writes time entries.
type Store struct{ db *store.DB }

// NewStore returns a Store on db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// Get reads an entry of a matter of org (consistently).
func (s *Store) Get(ctx context.Context, org, matterID, id string) (TimeEntry, error) {
	pk, sk := Key(org, matterID, id)
	return store.GetInto[TimeEntry](ctx, s.db, pk, sk)
}

// Find reads an entry of org by its id alone, through the status index
// (the application's tools, which name an entry by id): an eventually
// consistent read of at most one partition per status.
func (s *Store) Find(ctx context.Context, org, id string) (TimeEntry, error) {
	for _, pk := range StatusPKs(org) {
		out, _, err := store.QueryInto[TimeEntry](ctx, s.db, store.ListQuery{Index: store.GSI1, PK: pk, SKFrom: id, SKTo: id, Limit: 1})
		if err != nil {
			return TimeEntry{}, err
		}
		if len(out) == 1 {
			return s.Get(ctx, org, out[0].MatterID, id)
		}
	}
	return TimeEntry{}, store.ErrNotFound
}

// Create imports a time entry in draft on an open matter. hourly_rate falls
// back to the matter's; user_id falls back to the API client that logs it.
func (s *Store) Create(ctx context.Context, req *idempotency.Create) (string, any, error) {
	b, err := body.Decode(req.Body)
	if err != nil {
		return "", nil, err
	}
	b.Forbid("it is derived on every save: duration_minutes × hourly_rate / 60, rounded half up to whole øre", "amount")
	b.Forbid("every time entry created over the API opens at draft; its status moves in the application", "status")
	b.Forbid("it is assigned by the service", "id", "created_at", "updated_at")
	b.Forbid("it is taken from the matter", "client_id", "currency")
	t := TimeEntry{MatterID: b.UUID("matter_id", true), Date: b.Date("date", true),
		UserID: b.UUID("user_id", false), Description: b.String("description", false, MaxDescription),
		Status: Draft, Currency: "DKK", CreatedAt: store.FormatTime(req.Now)}
	t.DurationMinutes, _ = b.Int("duration_minutes", true, 1, 24*60, " (whole minutes; 1440 is a day)")
	rate := b.HourlyRate("hourly_rate", false)
	if t.Date != "" && (t.Date < "1900-01-01" || t.Date > "2100-12-31") {
		b.Fail("date", "date must be between 1900-01-01 and 2100-12-31")
	}
	if err := b.Err(); err != nil {
		return "", nil, err
	}
	mpk, msk := matter.Key(req.Org, t.MatterID)
	m, err := store.ReadInto[matter.Matter](ctx, s.db, mpk, msk)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, apperr.Invalidf("matter_id", "no matter with id %s exists in your organisation", t.MatterID)
	}
	if err != nil {
		return "", nil, err
	}
	if !m.Status.Open() {
		return "", nil, apperr.Invalidf("matter_id", "matter %s is %s; time can be logged on active and dormant matters only", m.ID, m.Status)
	}
	switch {
	case rate != nil:
		t.HourlyRate = *rate
	case m.HourlyRate != nil:
		t.HourlyRate = *m.HourlyRate
	default:
		return "", nil, apperr.Invalidf("hourly_rate", "matter %s has no hourly_rate, so the entry needs one%s", m.ID, body.MoneyHint)
	}
	if t.UserID == "" {
		t.UserID = req.ClientID
	}
	t.ID = store.DateID(t.Date)
	t.ClientID, t.UpdatedAt = m.ClientID, t.CreatedAt
	t.SetKeys(req.Org)
	ev, err := outbox.New(req.Org, outbox.TimeEntryCreated, "time_entry", Event(&t), req.Now)
	if err != nil {
		return "", nil, err
	}
	// The matter's status is the one read just now, consistently: a close
	// that lands between that read and this commit (milliseconds) finds the
	// entry already there. A check of the matter inside the transaction
	// would close that window for two more write units on every entry
	// (docs/data-model.md).
	tx := s.db.Tx()
	Write(tx, req.Org, &t, expression.ConditionBuilder{})
	outbox.Add(tx, ev)
	err = req.Commit(ctx, tx, t.ID, t, func(*store.TxFailed) error { return nil })
	return t.ID, t, err
}

// Filter holds the /time-entries filters.
type Filter struct {
	MatterID string `json:"matter_id,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	UserID   string `json:"user_id,omitempty"`
	DateFrom string `json:"date_from,omitempty"`
	DateTo   string `json:"date_to,omitempty"`
	Status   Status `json:"status,omitempty"`
	// UpdatedSince: entries changed at or after it (store.FormatTime).
	UpdatedSince string `json:"updated_since,omitempty"`
}

// List picks the key of the most selective filter, in the order matter
// (the base table), client (GSI2), user (GSI3), updated_since (GSI4),
// status (GSI1), and applies the others as filter expressions; with none,
// it merges the five status partitions of GSI1. The date range is a key
// condition on every key but GSI4 (ids begin with their entry's date), and
// a filter expression there; updated_since is a filter expression on the
// keys that order by date. So a list is ordered by entry date, or by last
// change when updated_since picks the key.
func (s *Store) List(ctx context.Context, org string, req store.ListRequest[Filter]) ([]TimeEntry, store.StartKey, error) {
	f := req.Filter
	q := store.ListQuery{Index: store.GSI1, Limit: req.PerPage, After: req.After, Project: true}
	prefix := ""
	switch {
	case f.MatterID != "":
		q.Index, q.PK, prefix = "", store.OrgPK(org), entrySK(f.MatterID, "")
		q.Equal = equals(f.ClientID, f.UserID, f.Status)
	case f.ClientID != "":
		q.Index, q.PK, q.Equal = store.GSI2, store.Collection(org, "TE", "C", f.ClientID), equals("", f.UserID, f.Status)
	case f.UserID != "":
		q.Index, q.PK, q.Equal = store.GSI3, store.Collection(org, "TE", "U", f.UserID), equals("", "", f.Status)
	case f.UpdatedSince != "":
		q.Index, q.PK, q.Equal, q.SKFrom = store.GSI4, ChangedPK(org), equals("", "", f.Status), f.UpdatedSince
		q.Between("date", f.DateFrom, f.DateTo)
		return store.QueryInto[TimeEntry](ctx, s.db, q)
	case f.Status != "":
		q.PK = StatusPK(org, f.Status)
	}
	q.SKFrom, q.SKTo = prefix, ""
	if f.DateFrom != "" {
		q.SKFrom = prefix + store.DateOf(f.DateFrom)
	}
	if f.DateTo != "" {
		q.SKTo = prefix + store.DateOf(f.DateTo) + "~"
	} else if prefix != "" {
		q.SKTo = prefix + "~"
	}
	q.Between("updated_at", f.UpdatedSince, "")
	if q.PK == "" {
		return store.MergeInto[TimeEntry](ctx, s.db, q, StatusPKs(org))
	}
	return store.QueryInto[TimeEntry](ctx, s.db, q)
}

// equals is the filter expression of the filters that no key answers.
func equals(client, user string, status Status) map[string]string {
	eq := map[string]string{}
	for attr, v := range map[string]string{"client_id": client, "user_id": user, "status": string(status)} {
		if v != "" {
			eq[attr] = v
		}
	}
	if len(eq) == 0 {
		return nil
	}
	return eq
}

func parseFilter(q url.Values) (Filter, error) {
	var f Filter
	var err error
	for _, p := range []struct {
		name string
		dst  *string
	}{{"matter_id", &f.MatterID}, {"client_id", &f.ClientID}, {"user_id", &f.UserID}} {
		if *p.dst, err = httpapi.UUIDParam(q, p.name); err != nil {
			return Filter{}, err
		}
	}
	if f.DateFrom, f.DateTo, err = httpapi.DateRangeParams(q, "date_from", "date_to"); err != nil {
		return Filter{}, err
	}
	if f.Status, err = httpapi.EnumParam(q, "status", Statuses...); err != nil {
		return Filter{}, err
	}
	if f.UpdatedSince, err = httpapi.SinceParam(q, "updated_since"); err != nil {
		return Filter{}, err
	}
	return f, nil
}

// Handlers returns the handlers of the time entries family.
func Handlers(s *Store) httpapi.Handlers {
	return httpapi.Handlers{
		"time_entries.list": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeList(w, r, "time_entries", parseFilter, s.List, s.ByIDs)
		},
		"time_entries.create": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeCreate(w, r, "time_entries", "", s.Create) // no single read, so no Location
		},
	}
}
