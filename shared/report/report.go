// Package report computes the reports of GET /reports/{type} from the
// organisation's own data. Each report's work is bounded by its query (see
// docs/api.md): a date range of at most 366 days, the unbilled entries, or
// the open invoices.
package report

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
)

// MaxSpanDays bounds a time summary's date range.
const MaxSpanDays = 366

// MaxGroups bounds the groups of a report (a summary's users and matters,
// the WIP's matters): one answer must fit Lambda's 6 MB, which holds about
// 30,000 of the largest. A report that would hold more is refused with a
// 422 saying so, not cut short.
const MaxGroups = 20_000

// Types lists the reports.
var Types = []string{"time-summary", "wip", "receivables-aging"}

// Totals sums time or money.
type Totals struct {
	Entries int   `json:"entries"`
	Minutes int64 `json:"minutes"`
	Amount  int64 `json:"amount"`
}

func (t *Totals) add(e timeentry.TimeEntry) {
	t.Entries++
	t.Minutes += e.DurationMinutes
	t.Amount += e.Amount
}

// Group is Totals for one user, matter or status.
type Group struct {
	Key string `json:"key"`
	Totals
}

// TimeSummary is minutes and amounts over a date range, by status, user and matter.
type TimeSummary struct {
	Type     string  `json:"type"`
	DateFrom string  `json:"date_from"`
	DateTo   string  `json:"date_to"`
	Currency string  `json:"currency"`
	Totals   Totals  `json:"totals"`
	ByStatus []Group `json:"by_status"`
	ByUser   []Group `json:"by_user"`
	ByMatter []Group `json:"by_matter"`
}

// WIPMatter is the unbilled time of one matter.
type WIPMatter struct {
	MatterID   string           `json:"matter_id"`
	ClientID   string           `json:"client_id"`
	OldestDate string           `json:"oldest_date"`
	ByStatus   map[string]int64 `json:"amount_by_status"`
	Totals
}

// WIP is the work in progress: time not yet invoiced or written off.
type WIP struct {
	Type     string      `json:"type"`
	Currency string      `json:"currency"`
	Totals   Totals      `json:"totals"`
	Matters  []WIPMatter `json:"matters"`
}

// Bucket is the open invoices of one age bucket.
type Bucket struct {
	Bucket   string `json:"bucket"`
	Invoices int    `json:"invoices"`
	Total    int64  `json:"total"`
}

// Aging is the receivables by days past due.
type Aging struct {
	Type     string   `json:"type"`
	AsOf     string   `json:"as_of"`
	Currency string   `json:"currency"`
	Invoices int      `json:"invoices"`
	Total    int64    `json:"total"`
	Buckets  []Bucket `json:"buckets"`
}

// Store computes reports.
type Store struct{ db *store.DB }

// NewStore returns a Store on db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

func groups(m map[string]*Totals) []Group {
	out := make([]Group, 0, len(m))
	for k, t := range m {
		out = append(out, Group{Key: k, Totals: *t})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func bump(m map[string]*Totals, k string, e timeentry.TimeEntry) {
	if m[k] == nil {
		m[k] = &Totals{}
	}
	m[k].add(e)
}

// TimeSummary: one Query of each status partition of GSI1
// ("O#org#TE#S#<status>") over the date range (entry ids begin with their
// date): every entry of the range, read once.
func (s *Store) TimeSummary(ctx context.Context, org, from, to string) (TimeSummary, error) {
	r := TimeSummary{Type: "time-summary", DateFrom: from, DateTo: to, Currency: "DKK"}
	byStatus, byUser, byMatter := map[string]*Totals{}, map[string]*Totals{}, map[string]*Totals{}
	for _, pk := range timeentry.StatusPKs(org) {
		q := store.ListQuery{Index: store.GSI1, PK: pk, SKFrom: store.DateOf(from), SKTo: store.DateOf(to) + "~", Project: true}
		err := store.Each(ctx, s.db, q,
			func(e timeentry.TimeEntry) {
				r.Totals.add(e)
				bump(byStatus, string(e.Status), e)
				bump(byUser, e.UserID, e)
				bump(byMatter, e.MatterID, e)
			})
		if err != nil {
			return TimeSummary{}, err
		}
	}
	if n := max(len(byUser), len(byMatter)); n > MaxGroups {
		return TimeSummary{}, apperr.Invalidf("date_to", "the range holds time of %d matters or users; a report answers at most %d: ask for a shorter range", n, MaxGroups)
	}
	r.ByStatus, r.ByUser, r.ByMatter = groups(byStatus), groups(byUser), groups(byMatter)
	return r, nil
}

// WIP: one Query of GSI1 "O#org#TE#S#<s>" per unbilled status; its work
// follows the unbilled entries, not the organisation's history.
func (s *Store) WIP(ctx context.Context, org string) (WIP, error) {
	r := WIP{Type: "wip", Currency: "DKK"}
	byMatter := map[string]*WIPMatter{}
	for _, st := range timeentry.WorkInProgress {
		err := store.Each(ctx, s.db, store.ListQuery{Index: store.GSI1, PK: timeentry.StatusPK(org, st), Project: true},
			func(e timeentry.TimeEntry) {
				m := byMatter[e.MatterID]
				if m == nil {
					m = &WIPMatter{MatterID: e.MatterID, ClientID: e.ClientID, OldestDate: e.Date, ByStatus: map[string]int64{}}
					byMatter[e.MatterID] = m
				}
				m.add(e)
				m.ByStatus[string(e.Status)] += e.Amount
				m.OldestDate = min(m.OldestDate, e.Date)
				r.Totals.add(e)
			})
		if err != nil {
			return WIP{}, err
		}
	}
	if len(byMatter) > MaxGroups {
		return WIP{}, apperr.Invalidf("type", "%d matters hold unbilled time; the report answers at most %d: list them with /time-entries?status=… instead", len(byMatter), MaxGroups)
	}
	for _, m := range byMatter {
		r.Matters = append(r.Matters, *m)
	}
	sort.Slice(r.Matters, func(i, j int) bool {
		if r.Matters[i].Amount != r.Matters[j].Amount {
			return r.Matters[i].Amount > r.Matters[j].Amount
		}
		return r.Matters[i].MatterID < r.Matters[j].MatterID
	})
	if r.Matters == nil {
		r.Matters = []WIPMatter{}
	}
	return r, nil
}

// AgingBuckets are the age buckets, by days past the due date.
var AgingBuckets = []string{"current", "1-30", "31-60", "61-90", "90+"}

// AgeBucket is the index in AgingBuckets of an invoice daysPastDue days
// past its due date (0 or less: not yet due).
func AgeBucket(daysPastDue int) int {
	switch {
	case daysPastDue <= 0:
		return 0
	case daysPastDue <= 30:
		return 1
	case daysPastDue <= 60:
		return 2
	case daysPastDue <= 90:
		return 3
	}
	return 4
}

// ReceivablesAging: one Query of the sparse GSI4 "O#org#INV#OPEN" (sent,
// partially paid and overdue invoices only). An open invoice counts at its
// full total: part payments are not recorded per amount.
func (s *Store) ReceivablesAging(ctx context.Context, org string, asOf time.Time) (Aging, error) {
	r := Aging{Type: "receivables-aging", AsOf: asOf.Format(time.DateOnly), Currency: "DKK"}
	totals := make([]Bucket, len(AgingBuckets))
	for i, b := range AgingBuckets {
		totals[i].Bucket = b
	}
	err := store.Each(ctx, s.db, store.ListQuery{Index: store.GSI4, PK: billing.OpenPK(org), Project: true}, func(v billing.Invoice) {
		due, err := time.Parse(time.DateOnly, v.DueDate)
		if err != nil {
			return
		}
		i := AgeBucket(int(asOf.Sub(due).Hours() / 24))
		totals[i].Invoices++
		totals[i].Total += v.Total
		r.Invoices++
		r.Total += v.Total
	})
	r.Buckets = totals
	return r, err
}

// Handlers returns the handlers of the reports family.
func Handlers(s *Store) httpapi.Handlers {
	return httpapi.Handlers{"reports.get": func(w http.ResponseWriter, r *http.Request) {
		typ := r.PathValue("type")
		if !slices.Contains(Types, typ) {
			httpapi.WriteError(w, r, &apperr.Error{Kind: apperr.NotFound, Message: "no report " + typ + "; reports: " + strings.Join(Types, ", ")})
			return
		}
		v, err := s.run(r.Context(), httpapi.OrgID(r.Context()), typ, r.URL.Query(), httpapi.Now(r.Context()))
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, httpapi.Data(v))
	}}
}

func (s *Store) run(ctx context.Context, org, typ string, q url.Values, now time.Time) (any, error) {
	switch typ {
	case "time-summary":
		from, to, err := httpapi.DateRangeParams(q, "date_from", "date_to")
		switch {
		case err != nil:
			return nil, err
		case from == "":
			return nil, apperr.Invalidf("date_from", "date_from is required (YYYY-MM-DD)")
		case to == "":
			return nil, apperr.Invalidf("date_to", "date_to is required (YYYY-MM-DD)")
		}
		f, _ := time.Parse(time.DateOnly, from)
		t, _ := time.Parse(time.DateOnly, to)
		if t.Sub(f) >= MaxSpanDays*24*time.Hour {
			return nil, apperr.Invalidf("date_to", "the range may span at most %d days; ask for several ranges", MaxSpanDays)
		}
		return s.TimeSummary(ctx, org, from, to)
	case "wip":
		return s.WIP(ctx, org)
	default: // receivables-aging
		asOf := now.UTC().Truncate(24 * time.Hour)
		if v, err := httpapi.DateParam(q, "as_of"); err != nil {
			return nil, err
		} else if v != "" {
			asOf, _ = time.Parse(time.DateOnly, v)
		}
		return s.ReceivablesAging(ctx, org, asOf)
	}
}
