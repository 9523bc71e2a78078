package apitest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
)

// Record is an item that knows its keys (every domain item).
type Record interface {
	SetKeys(org string)
}

// Put writes records of org as a create would. Records whose id the API
// derives from a unique value (people, companies, engagements, matters;
// time entries' ids begin with their date) get that id here, in place,
// and records after them that refer to the old id are pointed at the new
// one: give them in the order a create would (party, client, matter,
// entries).
func (e *Env) Put(org string, recs ...Record) {
	e.t.Helper()
	ctx := context.Background()
	renamed := map[string]string{}
	re := func(id *string) {
		if n, ok := renamed[*id]; ok {
			*id = n
		}
	}
	derive := func(id *string, f func() (string, error)) {
		n, err := f()
		if err != nil {
			e.t.Fatal(err)
		}
		renamed[*id], *id = n, n
	}
	var items []map[string]ddbtypes.AttributeValue
	for _, r := range recs {
		switch v := r.(type) {
		case *party.Person:
			derive(&v.ID, func() (string, error) { return party.PersonID(ctx, e.DB, org, v.Email) })
		case *party.Company:
			derive(&v.ID, func() (string, error) { return party.CompanyID(ctx, e.DB, org, v.CVR) })
		case *party.Client:
			re(&v.CompanyID)
			re(&v.PersonID)
			derive(&v.ID, func() (string, error) { return party.ClientID(ctx, e.DB, org, v.PartyID()) })
		case *matter.Matter:
			re(&v.ClientID)
			derive(&v.ID, func() (string, error) { return matter.ID(ctx, e.DB, org, v.MatterNumber) })
		case *timeentry.TimeEntry:
			re(&v.MatterID)
			re(&v.ClientID)
			if !strings.HasPrefix(v.ID, store.DateOf(v.Date)) {
				derive(&v.ID, func() (string, error) { return store.DateID(v.Date), nil })
			}
		}
		r.SetKeys(org)
		for _, v := range []any{r, extra(org, r)} {
			if v == nil {
				continue
			}
			m, err := store.Marshal(v)
			if err != nil {
				e.t.Fatal(err)
			}
			items = append(items, m)
		}
	}
	if err := e.DB.BatchPut(ctx, items); err != nil {
		e.t.Fatal(err)
	}
}

// extra is the item a record keeps beside its own (an invoice's lines).
func extra(org string, r Record) any {
	if v, ok := r.(*billing.Invoice); ok {
		return billing.LinesItem(org, v)
	}
	return nil
}

var seq atomic.Int64

// Stamp is a fixed-width timestamp for fixtures.
func Stamp(t time.Time) string { return store.FormatTime(t) }

// Company returns a company fixture with a unique CVR.
func Company(updated time.Time) *party.Company {
	n := seq.Add(1)
	return &party.Company{ID: uuid.NewString(), Name: fmt.Sprintf("Firma %d ApS", n), CVR: fmt.Sprintf("%08d", 10000000+n),
		CreatedAt: Stamp(updated), UpdatedAt: Stamp(updated)}
}

// Person returns a person fixture with a unique e-mail.
func Person(updated time.Time) *party.Person {
	n := seq.Add(1)
	return &party.Person{ID: uuid.NewString(), Name: fmt.Sprintf("Person %d", n), Email: fmt.Sprintf("p%d@example.dk", n),
		CreatedAt: Stamp(updated), UpdatedAt: Stamp(updated)}
}

// ClientOf returns an engagement fixture on a company or a person.
func ClientOf(p any, updated time.Time) *party.Client {
	c := &party.Client{ID: uuid.NewString(), KYCStatus: "pending", CreatedAt: Stamp(updated), UpdatedAt: Stamp(updated)}
	switch v := p.(type) {
	case *party.Company:
		c.Type, c.CompanyID = party.TypeCompany, v.ID
	case *party.Person:
		c.Type, c.PersonID = party.TypePerson, v.ID
	default:
		panic(fmt.Sprintf("ClientOf(%T)", p))
	}
	return c
}

// Matter returns a matter fixture on client.
func Matter(client *party.Client, status matter.Status, updated time.Time) *matter.Matter {
	n := seq.Add(1)
	rate := int64(150000)
	return &matter.Matter{ID: uuid.NewString(), ClientID: client.ID, MatterNumber: fmt.Sprintf("SAG-%d", n),
		Title: "Sag", Status: status, HourlyRate: &rate, Currency: "DKK", CreatedAt: Stamp(updated), UpdatedAt: Stamp(updated)}
}

// WantInvalid fails t unless err is the 422 of a domain package's
// validation naming field, with says in that field's message: the check
// of the table-driven tests beside the domain packages.
func WantInvalid(t testing.TB, err error, field, says string) {
	t.Helper()
	he := httpapi.AnswerOf(err)
	if err == nil || he.Status != http.StatusUnprocessableEntity {
		t.Errorf("got %v, want a 422 on %s", err, field)
		return
	}
	for _, fe := range he.Errors {
		if fe.Field == field && strings.Contains(fe.Message, says) {
			return
		}
	}
	t.Errorf("got %+v, want %s: …%s…", he.Errors, field, says)
}

// Engagement puts a company of org engaged as a client whose KYC is kyc,
// as of at: where most domain tests start.
func (e *Env) Engagement(org string, kyc party.KYCStatus, at time.Time) *party.Client {
	e.t.Helper()
	co := Company(at)
	cl := ClientOf(co, at)
	cl.KYCStatus = kyc
	e.Put(org, co, cl)
	return cl
}

// Entry returns an hour's time entry fixture on m in status st, at
// 1,000 kr. an hour; its id is made from n.
func Entry(m *matter.Matter, st timeentry.Status, n int, at time.Time) *timeentry.TimeEntry {
	return &timeentry.TimeEntry{ID: fmt.Sprintf("entry-%d", n), MatterID: m.ID, ClientID: m.ClientID, UserID: m.ClientID, Date: at.Format(time.DateOnly),
		DurationMinutes: 60, HourlyRate: 100000, Currency: "DKK", Status: st, CreatedAt: Stamp(at), UpdatedAt: Stamp(at)}
}

// BodyCase is a body a create must refuse: the field it names, and a
// fragment of why.
type BodyCase struct{ Body, Field, Says string }

// RefusesBodies checks that create refuses each body, for organisation
// "org" at now, with a 422 naming its field (WantInvalid). A domain's
// refusals come before its store is read, so create may be a store's on
// nothing.
func RefusesBodies(t testing.TB, create httpapi.CreateFunc[*idempotency.Create], now time.Time, cases ...BodyCase) {
	t.Helper()
	for _, c := range cases {
		_, _, err := create(context.Background(), &idempotency.Create{Org: "org", Body: []byte(c.Body), Now: now})
		WantInvalid(t, err, c.Field, c.Says)
	}
}

// Race runs do n times at once and returns the calls that succeeded, by
// index, failing t for any error that is not the loss a race may end in
// (lost reports which errors are).
func Race(t testing.TB, n int, do func(i int) error, lost func(error) bool) []int {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = do(i) })
	}
	wg.Wait()
	var won []int
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, i)
		case !lost(err):
			t.Errorf("call %d of the race: %v, which is not a loss", i, err)
		}
	}
	return won
}

// World is a small organisation put straight into the table: four
// companies and four people, each engaged as a client, and ten matters in
// several states, one an hour from At, on the clients in turn.
type World struct {
	Org, Key  string
	At        time.Time // the first record's updated_at (2025-03-01 12:00 UTC)
	Companies []*party.Company
	People    []*party.Person
	Clients   []*party.Client // company i's at 2i, person i's at 2i+1
	Matters   []*matter.Matter
}

// NewWorld puts a World for an organisation named name, with a key of
// every scope: company i and its client at At plus i days, person i and
// its client an hour later; matter i at At plus i hours, on client i mod
// 8, active, dormant, closed, archived, active in turn.
func (e *Env) NewWorld(name string) *World {
	e.t.Helper()
	w := &World{Org: e.Org(name), At: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	w.Key = e.Key(w.Org)
	statuses := []matter.Status{matter.Active, matter.Dormant, matter.Closed, matter.Archived, matter.Active}
	for i := range 4 {
		at := w.At.Add(time.Duration(i) * 24 * time.Hour)
		co, pe := Company(at), Person(at.Add(time.Hour))
		cc, pc := ClientOf(co, at), ClientOf(pe, at.Add(time.Hour))
		w.Companies, w.People, w.Clients = append(w.Companies, co), append(w.People, pe), append(w.Clients, cc, pc)
		e.Put(w.Org, co, pe, cc, pc)
	}
	for i := range 10 {
		m := Matter(w.Clients[i%len(w.Clients)], statuses[i%len(statuses)], w.At.Add(time.Duration(i)*time.Hour))
		w.Matters = append(w.Matters, m)
		e.Put(w.Org, m)
	}
	return w
}

// IDs returns the id of every record in a list response's data, in order.
func (r Response) IDs() []string {
	var out []string
	for _, d := range r.Data() {
		id, _ := d["id"].(string)
		out = append(out, id)
	}
	return out
}
