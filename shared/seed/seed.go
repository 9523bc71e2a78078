// Package seed writes realistic bulk data for demos, tests and benchmarks,
// through the same item shapes, keys and derived ids the API uses.
package seed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
)

// Options size a seed run.
type Options struct {
	Matters          int
	EntriesPerMatter int
	// Now anchors the generated timestamps (the last 18 months before it).
	Now time.Time
	// Rand makes runs reproducible in tests; nil for a random seed.
	Rand *rand.Rand
	// EveryStatus gives the first matters each status in turn (Statuses'
	// order), the rest a random one: the demo organisation's, so that a
	// list filtered by any status (the reference page's console asks for
	// active ones) finds some. Drawn at random, 12 matters had none active
	// about once in 800 runs.
	EveryStatus bool
}

// Counts says what a seed run created.
type Counts struct {
	People      int `json:"people"`
	Companies   int `json:"companies"`
	Clients     int `json:"clients"`
	Matters     int `json:"matters"`
	TimeEntries int `json:"time_entries"`
	Invoices    int `json:"invoices"`
	Documents   int `json:"documents"`
}

var (
	firstNames = []string{"Anne", "Mads", "Sofie", "Lars", "Ida", "Jens", "Mette", "Henrik", "Freja", "Søren", "Line", "Rasmus"}
	lastNames  = []string{"Jensen", "Nielsen", "Hansen", "Pedersen", "Andersen", "Christensen", "Larsen", "Sørensen", "Rasmussen", "Holm"}
	firmWords  = []string{"Nordlys", "Havbris", "Kystlinje", "Egetræ", "Fjordby", "Skovsø", "Granit", "Lærkely", "Bølge", "Solsikke"}
	firmForms  = []string{"ApS", "A/S", "I/S", "IVS"}
	subjects   = []string{"Lejekontrakt", "Ansættelsessag", "Generationsskifte", "Erhvervsoverdragelse", "Inkasso", "Skilsmisse", "Dødsbo", "Voldgift", "Persondata", "Franchiseaftale"}
	statuses   = []matter.Status{matter.Active, matter.Active, matter.Active, matter.Dormant, matter.Dormant, matter.Closed, matter.Archived}
	// entryStatuses weights the statuses of seeded time as a practice sees them.
	entryStatuses = []timeentry.Status{timeentry.Draft, timeentry.Submitted, timeentry.Approved, timeentry.Approved,
		timeentry.Invoiced, timeentry.Invoiced, timeentry.Invoiced, timeentry.WrittenOff}
	invoiceStates = []billing.Status{billing.Sent, billing.Paid, billing.Paid, billing.Overdue, billing.PartiallyPaid, billing.Draft, billing.Approved}
	folders       = []string{"Korrespondance", "Kontrakter", "Processkrifter", "Notater"}
	tasks         = []string{"Møde med klient", "Udarbejdelse af processkrift", "Telefonmøde", "Gennemgang af kontrakt", "Korrespondance", "Retsmøde", "Research"}
)

// Run seeds org with opt.Matters matters on about opt.Matters/2 clients,
// half companies and half people.
func Run(ctx context.Context, db *store.DB, org string, opt Options) (Counts, error) {
	if opt.Matters < 0 || opt.Matters > 1_000_000 {
		return Counts{}, fmt.Errorf("seed: --matters must be from 0 to 1000000")
	}
	if opt.EntriesPerMatter < 0 || opt.EntriesPerMatter > 10_000 {
		return Counts{}, fmt.Errorf("seed: --entries-per-matter must be from 0 to 10000")
	}
	r := opt.Rand
	if r == nil {
		r = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	sd := &seeder{ctx: ctx, db: db, org: org, opt: opt, r: r}
	nClients := max((opt.Matters+1)/2, min(opt.Matters, 1))
	clients := make([]party.Client, 0, nClients)
	runID := uuid.NewString()[:8] // keeps e-mails and CVRs of repeated runs apart
	for i := range nClients {
		cl, err := sd.client(runID, i)
		if err != nil {
			return sd.c, err
		}
		clients = append(clients, cl)
	}
	if opt.Matters > 0 {
		last, err := db.Increment(ctx, store.OrgPK(org), "COUNTER#MATTER", int64(opt.Matters))
		if err != nil {
			return sd.c, err
		}
		first := last - int64(opt.Matters) + 1
		users := make([]string, 8) // the fee earners of the organisation
		for i := range users {
			users[i] = uuid.NewString()
		}
		for i := range opt.Matters {
			if err := sd.matter(i, clients[i%len(clients)], "SAG-"+strconv.FormatInt(first+int64(i), 10), users); err != nil {
				return sd.c, err
			}
		}
	}
	if err := sd.numberInvoices(); err != nil {
		return sd.c, err
	}
	return sd.c, db.BatchPut(ctx, sd.items)
}

// seeder is one Run: what it has made so far, and the items it writes at
// the end.
type seeder struct {
	ctx      context.Context
	db       *store.DB
	org      string
	opt      Options
	r        *rand.Rand
	items    []map[string]ddbtypes.AttributeValue
	c        Counts
	invoices []billing.Invoice // numbered at the end, in one counter step
}

// stamp is a time in the 18 months before opt.Now.
func (sd *seeder) stamp() string {
	return store.FormatTime(sd.opt.Now.Add(-time.Duration(sd.r.Int64N(int64(540 * 24 * time.Hour)))))
}

// add queues the items of vs.
func (sd *seeder) add(vs ...any) error {
	for _, v := range vs {
		m, err := store.Marshal(v)
		if err != nil {
			return err
		}
		sd.items = append(sd.items, m)
	}
	return nil
}

// client makes the i-th client of the run and its party: a company for
// even i, a person for odd.
func (sd *seeder) client(runID string, i int) (party.Client, error) {
	ctx, db, org, r := sd.ctx, sd.db, sd.org, sd.r
	var err error
	created := sd.stamp()
	cl := party.Client{KYCStatus: party.KYCPending, CreatedAt: created, UpdatedAt: created}
	if i%2 == 0 {
		co := party.Company{
			Name: firmWords[r.IntN(len(firmWords))] + " " + firmWords[r.IntN(len(firmWords))] + " " + firmForms[r.IntN(len(firmForms))],
			CVR:  cvr(runID, i), CreatedAt: created, UpdatedAt: created}
		if co.ID, err = party.CompanyID(ctx, db, org, co.CVR); err != nil {
			return cl, err
		}
		co.SetKeys(org)
		if err := sd.add(co); err != nil {
			return cl, err
		}
		cl.Type, cl.CompanyID = party.TypeCompany, co.ID
		sd.c.Companies++
	} else {
		first, last := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
		p := party.Person{Name: first + " " + last,
			Email:     fmt.Sprintf("%s.%s.%s-%d@example.dk", asciiLower(first), asciiLower(last), runID, i),
			CreatedAt: created, UpdatedAt: created}
		if p.ID, err = party.PersonID(ctx, db, org, p.Email); err != nil {
			return cl, err
		}
		p.SetKeys(org)
		if err := sd.add(p); err != nil {
			return cl, err
		}
		cl.Type, cl.PersonID = party.TypePerson, p.ID
		sd.c.People++
	}
	if cl.ID, err = party.ClientID(ctx, db, org, cl.PartyID()); err != nil {
		return cl, err
	}
	cl.SetKeys(org)
	if err := sd.add(cl); err != nil {
		return cl, err
	}
	sd.c.Clients++
	return cl, nil
}

// matter makes the i-th matter, of cl, numbered number, its time (some of
// it billed on invoices) and two documents.
func (sd *seeder) matter(i int, cl party.Client, number string, users []string) error {
	r, org := sd.r, sd.org
	updated := sd.stamp()
	if updated < cl.CreatedAt {
		updated = cl.CreatedAt
	}
	rate := int64(150000 + 5000*r.Int64N(40)) // 1,500.00 to 3,450.00 DKK
	m := matter.Matter{ClientID: cl.ID, MatterNumber: number,
		Title: subjects[r.IntN(len(subjects))], Status: statuses[r.IntN(len(statuses))],
		HourlyRate: &rate, Currency: "DKK", CreatedAt: cl.CreatedAt, UpdatedAt: updated}
	if sd.opt.EveryStatus && i < len(matter.Statuses) {
		m.Status = matter.Statuses[i]
	}
	var err error
	if m.ID, err = matter.ID(sd.ctx, sd.db, org, m.MatterNumber); err != nil {
		return err
	}
	if !m.Status.Open() {
		m.ClosedAt = updated
	}
	m.SetKeys(org)
	if err := sd.add(m); err != nil {
		return err
	}
	sd.c.Matters++
	var billed []timeentry.TimeEntry
	for range sd.opt.EntriesPerMatter {
		day := sd.opt.Now.AddDate(0, 0, -r.IntN(540)).Format(time.DateOnly)
		t := timeentry.TimeEntry{ID: store.DateID(day), MatterID: m.ID, ClientID: m.ClientID,
			UserID: users[r.IntN(len(users))], Date: day, DurationMinutes: int64(6 * (1 + r.IntN(40))),
			HourlyRate: rate, Currency: "DKK", Status: entryStatuses[r.IntN(len(entryStatuses))],
			Description: tasks[r.IntN(len(tasks))], CreatedAt: updated, UpdatedAt: updated}
		if t.Status == timeentry.Invoiced {
			billed = append(billed, t) // added once its invoice is known
			continue
		}
		t.SetKeys(org)
		if err := sd.add(t, t.ByID(org)); err != nil {
			return err
		}
		sd.c.TimeEntries++
	}
	if err := sd.bill(m, billed, updated); err != nil {
		return err
	}
	for d := range 2 {
		doc := document.Document{ID: store.NewID(), MatterID: m.ID, Name: fmt.Sprintf("%s – bilag %d", m.Title, d+1),
			Filename: fmt.Sprintf("bilag-%d.pdf", d+1), MimeType: "application/pdf", SizeBytes: int64(20_000 + r.IntN(2_000_000)),
			Folder: folders[r.IntN(len(folders))], CreatedAt: updated, UpdatedAt: updated}
		doc.SetKeys(org)
		if err := sd.add(doc); err != nil {
			return err
		}
		sd.c.Documents++
	}
	return nil
}

// bill puts m's billed time on invoices: each bills at most
// MaxBilledEntries, as the application's do (a cancellation gives them
// back in one transaction).
func (sd *seeder) bill(m matter.Matter, billed []timeentry.TimeEntry, updated string) error {
	for start := 0; start < len(billed); start += billing.MaxBilledEntries {
		inv := billing.Invoice{ID: store.NewID(), MatterID: m.ID, ClientID: m.ClientID,
			Status: invoiceStates[sd.r.IntN(len(invoiceStates))], Currency: "DKK", CreatedAt: updated, UpdatedAt: updated}
		for i := start; i < min(start+billing.MaxBilledEntries, len(billed)); i++ {
			t := &billed[i]
			t.InvoiceID = inv.ID
			inv.Lines = append(inv.Lines, billing.Line{Description: t.Date + " " + t.Description, Amount: t.Amount, TimeEntryID: t.ID})
			inv.Total += t.Amount
			inv.IssueDate = max(inv.IssueDate, t.Date)
			t.SetKeys(sd.org)
			if err := sd.add(t, t.ByID(sd.org)); err != nil {
				return err
			}
			sd.c.TimeEntries++
		}
		issue, _ := time.Parse(time.DateOnly, inv.IssueDate)
		inv.DueDate = issue.AddDate(0, 0, 30).Format(time.DateOnly)
		sd.invoices = append(sd.invoices, inv)
	}
	return nil
}

// numberInvoices numbers the run's invoices from the organisation's
// counter, in one step, and queues them.
func (sd *seeder) numberInvoices() error {
	if len(sd.invoices) == 0 {
		return nil
	}
	last, err := sd.db.Increment(sd.ctx, store.OrgPK(sd.org), "COUNTER#INVOICE", int64(len(sd.invoices)))
	if err != nil {
		return err
	}
	for i := range sd.invoices {
		v := &sd.invoices[i]
		v.Number = fmt.Sprintf("INV-%d", last-int64(len(sd.invoices))+int64(i)+1)
		v.SetKeys(sd.org)
		if err := sd.add(v, billing.LinesItem(sd.org, v), v.Guards(sd.org)[0]); err != nil {
			return err
		}
		sd.c.Invoices++
	}
	return nil
}

// cvr makes an 8-digit CVR unique within a run (and, with high
// probability, across runs on the same organisation).
func cvr(runID string, i int) string {
	h := uint32(2166136261)
	for _, b := range []byte(runID) {
		h = (h ^ uint32(b)) * 16777619
	}
	return fmt.Sprintf("%08d", (int(h%9000)*10000+i)%100000000)
}

func asciiLower(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			out = append(out, r+'a'-'A')
		case r == 'ø' || r == 'Ø':
			out = append(out, 'o')
		case r < 128:
			out = append(out, r)
		}
	}
	return string(out)
}
