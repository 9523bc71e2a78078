// Package timeentry holds time entries: their item, the import create, the
// list with its filters, and HTTP handlers.
package timeentry

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// Statuses of a time entry.
var Statuses = []string{"draft", "submitted", "approved", "invoiced", "written_off"}

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
	Status          string `dynamodbav:"status" json:"status"`
	Description     string `dynamodbav:"description,omitempty" json:"description,omitempty"`
	InvoiceID       string `dynamodbav:"invoice_id,omitempty" json:"invoice_id,omitempty"`
	CreatedAt       string `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt       string `dynamodbav:"updated_at" json:"updated_at"`
}

// Amount is duration × hourly rate / 60 in minor units, rounded half up to
// a whole øre (rates and durations are never negative).
func Amount(durationMinutes, hourlyRate int64) int64 {
	return (durationMinutes*hourlyRate + 30) / 60
}

func entrySK(id string) string { return "TE#" + id }

// Key returns the primary key of an entry.
func Key(org, id string) (pk, sk string) { return store.OrgPK(org), entrySK(id) }

// SetKeys fills the keys and derives the amount. Every index sorts by
// entry date, so date_from/date_to is a key range on whichever index a
// filter picks: GSI1 all, GSI2 matter, GSI3 client, GSI4 user, GSI5 status.
func (t *TimeEntry) SetKeys(org string) {
	t.Amount = Amount(t.DurationMinutes, t.HourlyRate)
	seq := store.Seq(t.Date, t.ID)
	t.Keys = store.Keys{PK: store.OrgPK(org), SK: entrySK(t.ID), Kind: "time_entry",
		GSI1PK: store.Collection(org, "TE"), GSI1SK: seq,
		GSI2PK: store.Collection(org, "TE", "MATTER", t.MatterID), GSI2SK: seq,
		GSI3PK: store.Collection(org, "TE", "CLIENT", t.ClientID), GSI3SK: seq,
		GSI4PK: store.Collection(org, "TE", "USER", t.UserID), GSI4SK: seq,
		GSI5PK: store.Collection(org, "TE", "STATUS", t.Status), GSI5SK: seq}
}

// Guards: a time entry holds no unique values.
func (t *TimeEntry) Guards(string) []store.Guard { return nil }

// Event is the entry as webhook events carry it: identifiers and status.
func Event(t *TimeEntry) map[string]any {
	return map[string]any{"id": t.ID, "status": t.Status, "matter_id": t.MatterID, "user_id": t.UserID, "date": t.Date}
}

// Store reads and writes time entries.
type Store struct{ db *store.DB }

// NewStore returns a Store on db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// Get reads an entry of org.
func (s *Store) Get(ctx context.Context, org, id string) (TimeEntry, error) {
	pk, sk := Key(org, id)
	return store.GetInto[TimeEntry](ctx, s.db, pk, sk)
}

// Create imports a time entry in draft on an open matter. hourly_rate falls
// back to the matter's; user_id falls back to the API client that logs it.
func (s *Store) Create(ctx context.Context, req *httpapi.CreateRequest) (string, any, error) {
	b, err := httpapi.DecodeBody(req.Body)
	if err != nil {
		return "", nil, err
	}
	b.Forbid("it is derived on every save: duration_minutes × hourly_rate / 60, rounded half up to whole øre", "amount")
	b.Forbid("every time entry created over the API opens at draft; its status moves in the application", "status")
	b.Forbid("it is assigned by the service", "id", "created_at", "updated_at")
	b.Forbid("it is taken from the matter", "client_id", "currency")
	t := TimeEntry{ID: uuid.NewString(), MatterID: b.UUID("matter_id", true), Date: b.Date("date", true),
		UserID: b.UUID("user_id", false), Description: b.String("description", false, 2000),
		Status: "draft", Currency: "DKK", CreatedAt: store.FormatTime(req.Now)}
	t.DurationMinutes, _ = b.Int("duration_minutes", true, 1, 24*60, " (whole minutes; 1440 is a day)")
	rate := b.Money("hourly_rate", false)
	if t.Date != "" && (t.Date < "1900-01-01" || t.Date > "2100-12-31") {
		b.Fail("date", "date must be between 1900-01-01 and 2100-12-31")
	}
	if err := b.Err(); err != nil {
		return "", nil, err
	}
	mpk, msk := matter.Key(req.Org, t.MatterID)
	m, err := store.ReadInto[matter.Matter](ctx, s.db, mpk, msk)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, httpapi.Invalid("matter_id", "no matter with id %s exists in your organisation", t.MatterID)
	}
	if err != nil {
		return "", nil, err
	}
	if m.Status != "active" && m.Status != "dormant" {
		return "", nil, httpapi.Invalid("matter_id", "matter %s is %s; time can be logged on active and dormant matters only", m.ID, m.Status)
	}
	switch {
	case rate != nil:
		t.HourlyRate = *rate
	case m.HourlyRate != nil:
		t.HourlyRate = *m.HourlyRate
	default:
		return "", nil, httpapi.Invalid("hourly_rate", "matter %s has no hourly_rate, so the entry needs one%s", m.ID, httpapi.MoneyHint)
	}
	if t.UserID == "" {
		t.UserID = req.ClientID
	}
	t.ClientID, t.UpdatedAt = m.ClientID, t.CreatedAt
	t.SetKeys(req.Org)
	ev, err := outbox.New(req.Org, outbox.TimeEntryCreated, "time_entry", Event(&t), req.Now)
	if err != nil {
		return "", nil, err
	}
	tx := s.db.Tx()
	// The matter must still be open when the entry commits.
	mi := tx.Check(mpk, msk, "#st IN (:active, :dormant)", map[string]string{"#st": "status"}, map[string]ddbtypes.AttributeValue{
		":active": &ddbtypes.AttributeValueMemberS{Value: "active"}, ":dormant": &ddbtypes.AttributeValueMemberS{Value: "dormant"}})
	tx.PutNew(t)
	tx.PutNew(ev)
	err = req.Commit(ctx, tx, t.ID, t, func(f *store.TxFailed) error {
		if f.Has(mi) {
			return httpapi.Invalid("matter_id", "matter %s was closed while the entry was being saved", t.MatterID)
		}
		return nil
	})
	return t.ID, t, err
}

// Filter holds the /time-entries filters.
type Filter struct {
	MatterID string `json:"matter_id,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	UserID   string `json:"user_id,omitempty"`
	DateFrom string `json:"date_from,omitempty"`
	DateTo   string `json:"date_to,omitempty"`
	Status   string `json:"status,omitempty"`
}

// List picks the index of the most selective filter, in the order matter,
// client, user, status, and applies the others as filter expressions; the
// date range is always a key condition.
func (s *Store) List(ctx context.Context, org string, req httpapi.ListRequest[Filter]) ([]TimeEntry, store.StartKey, error) {
	f := req.Filter
	q := store.ListQuery{Index: "GSI1", PK: store.Collection(org, "TE"), Limit: req.PerPage, After: req.After}
	q.Dates(f.DateFrom, f.DateTo)
	q.NarrowBy(org, "TE",
		store.KeyFilter{Index: "GSI2", Attr: "matter_id", Segment: "MATTER", Value: f.MatterID},
		store.KeyFilter{Index: "GSI3", Attr: "client_id", Segment: "CLIENT", Value: f.ClientID},
		store.KeyFilter{Index: "GSI4", Attr: "user_id", Segment: "USER", Value: f.UserID},
		store.KeyFilter{Index: "GSI5", Attr: "status", Segment: "STATUS", Value: f.Status})
	q.Project = true
	return store.QueryInto[TimeEntry](ctx, s.db, q)
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
	return f, nil
}

// Handlers returns the handlers of the time entries family.
func Handlers(s *Store) httpapi.Handlers {
	return httpapi.Handlers{
		"time_entries.list": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeList(w, r, "time_entries", parseFilter, s.List)
		},
		"time_entries.create": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeCreate(w, r, "time_entries", "", s.Create) // no single read, so no Location
		},
	}
}
