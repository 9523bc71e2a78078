// Command import loads a CSV or JSONL export (parties, engagements, matters,
// time entries) through the public API, in the spec's order.
//
//	scripts/import --file export.jsonl --key $KEY [--base-url URL] [--state F] [--report F]
//
// Each row is {"kind": company|person|client|matter|time_entry,
// "source_id": …, fields…}; references name earlier rows by source id:
// a client's "party", a matter's "client", a time entry's "matter". CSV
// files have a header row with the same names.
//
// Resumable: every create's Idempotency-Key is derived from its kind and
// source id, and finished rows are appended to a state file, so a killed run
// started again skips what was done and replays (never duplicates) what was
// in flight. Refused rows (4xx) are written to the report with the API's
// message (the report is this run's: a rerun writes it afresh); a failure
// of the service (5xx, network) stops the run. Exit status: 0 every row
// imported, 3 some rows refused, 1 the run stopped, 2 a usage error.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/practice-api/practice-api/shared/client"
	"github.com/practice-api/practice-api/shared/cpr"
)

// order is the spec's import order.
var order = map[string]int{"company": 0, "person": 0, "client": 1, "matter": 2, "time_entry": 3}

var paths = map[string]string{"company": "/companies", "person": "/people", "client": "/clients", "matter": "/matters", "time_entry": "/time-entries"}

// refs name the field that references an earlier row, and the body field it becomes.
var refs = map[string]struct{ from, kinds string }{
	"client": {"party", "company,person"}, "matter": {"client", "client"}, "time_entry": {"matter", "matter"},
}

type row map[string]any

func (r row) str(k string) string { s, _ := r[k].(string); return s }

func main() {
	file := flag.String("file", "", "CSV or JSONL export")
	base := flag.String("base-url", envOr("PRACTICE_API_URL", "http://127.0.0.1:8080/api/v1"), "API base URL")
	key := flag.String("key", os.Getenv("PRACTICE_API_KEY"), "API key (or PRACTICE_API_KEY)")
	state := flag.String("state", "", "state file (default: <file>.state; for a report of refused rows, the state of the run that wrote it)")
	report := flag.String("report", "", "refused rows of this run (default: <file>.refused, JSON lines; for NAME.csv, NAME.refused.csv in its layout)")
	maxWait := flag.Duration("max-wait", client.DefaultMaxWait, "the longest the importer waits when the API asks it to (Retry-After, a rate limit's reset); a longer wait stops the run, saying so")
	flag.Usage = func() {
		fmt.Fprint(os.Stderr, usage)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *file == "" || *key == "" {
		fmt.Fprintln(os.Stderr, "import: --file and --key are required (import --help shows the file's layout)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *maxWait <= 0 {
		fmt.Fprintln(os.Stderr, "import: --max-wait must be longer than 0 (such as 15m)")
		os.Exit(2)
	}
	refused, err := run(ctx, options{file: *file, base: *base, key: *key, state: *state, report: *report, maxWait: *maxWait})
	var usageErr *usageError
	if errors.As(err, &usageErr) {
		fmt.Fprintln(os.Stderr, "import:", err)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "\nimport:", err)
		os.Exit(1)
	}
	if refused > 0 {
		os.Exit(3)
	}
}

const usage = `usage: import --file EXPORT --key KEY [--base-url URL] [--state FILE] [--report FILE] [--max-wait 15m]

Loads an export through the API in the spec's order (companies and people,
then client engagements, then matters, then time entries), whatever the
order of its rows. Each row has a kind, a source_id (your record's id: it
keys the create, so a rerun never duplicates), the fields of the API's
write body, and, instead of an id, the source_id of the row it refers to:

  kind        refers with   fields
  company     -             name, cvr
  person      -             name, email, phone
  client      party         (party: the source_id of a company or person row)
  matter      client        status, matter_number, hourly_rate, title
  time_entry  matter        date, duration_minutes, hourly_rate, user_id, description

JSONL, one object per line (export.jsonl):

  {"kind":"company","source_id":"crm-42","name":"Nordlys ApS","cvr":"12345678"}
  {"kind":"client","source_id":"crm-42","party":"crm-42"}
  {"kind":"matter","source_id":"case-7","client":"crm-42","hourly_rate":125000,"title":"Lejekontrakt"}
  {"kind":"time_entry","source_id":"hours-991","matter":"case-7","date":"2025-03-14","duration_minutes":90}

CSV (a file named *.csv), a header row of the column names above, in any
order and any subset; an empty cell is an absent field; hourly_rate and
duration_minutes are read as integers (minor units, minutes):

  kind,source_id,name,cvr,party,client,hourly_rate,title,matter,date,duration_minutes
  company,crm-42,Nordlys ApS,12345678,,,,,,,
  client,crm-42,,,crm-42,,,,,,
  matter,case-7,,,,crm-42,125000,Lejekontrakt,,,
  time_entry,hours-991,,,,,,,case-7,2025-03-14,90

A spreadsheet's CSV reads as it is saved: separated by commas,
semicolons (a Danish Excel's default) or tabs, in UTF-8 with or without a
byte-order mark (Excel's "CSV UTF-8") or in Windows-1252 (an older
Excel's), with CRLF line ends; the importer says in one line how it read
the file. A file that mixes encodings (a UTF-8 file with lines an older
tool saved in Windows-1252) is refused whole, naming those lines: read
either way it would store letters nobody wrote. Amounts are whole øre:
1.250,00 is refused, saying to write 125000.

It paces itself under the rate limit and prints progress, its ETA at the
pace the limit allows. Rows the API
refuses go, with every problem the API found, to the report (this run's
only).

State: the state file (FILE.state unless --state names another) lists the
rows done, by kind and source_id, with the id each got: a run that is
stopped resumes where it was, a row done before counts as "already done",
and a row refers to any row the state holds, from this file or an earlier
one imported into the same state. Keep one state per organisation and
import every file of it with the same --state. A report fed back (below)
finds the state of the run that wrote it by itself.
Each report line names its row's line in the file, and whether the API
refused the row, the importer did (no kind, an unknown reference), or it
was not sent because the row it refers to was refused. For a CSV input the
report is a CSV in the input's layout and encoding (NAME.refused.csv):
the refused rows as they were, plus refused_line, refused_status,
refused_field, refused_reason (every problem of the row) and
refused_state (the run's state file). Fix it in the spreadsheet, save it
as it is and import it (import --file NAME.refused.csv): its refused_
columns are ignored, and its rows' references are looked up in the state
named in refused_state, so a matter refers to the client the first run
imported. A source_id that holds
a CPR-like number is never written to the state or the report, nor sent:
such a row is named by its line (line-12). The state file and the report
must not be the input or each other.

Files: the state file and the report are created readable by you only
(0600; an older one is narrowed to 0600), and only as regular files
reached through no symbolic link, in the name or any folder of the path
(a named pipe, a device or a link is refused, naming it; where a system
folder is a link, as /tmp is on macOS, name the path it points to, such
as /private/tmp/…). A state file holds only the lines the importer
writes: any other file (one a crafted report names in refused_state) is
refused, neither read nor written. Every text of the report is redacted of CPR-like
numbers, the CSV report's header included. The CSV report is safe to open
in a spreadsheet: a cell that starts as a formula does (= + - @, a TAB or
a CR) is written with an apostrophe before it ('=…, '+45 12 34 56 78),
which reading the report back removes, and control characters are
stripped (a cell of the input keeps its line breaks).

Waits: the importer paces itself under the rate limit and retries when the
API asks it to wait (429, 503), but never waits longer than --max-wait
(default 15m) at once: an answer asking for longer (a Retry-After, or a
rate limit's reset, hours away) stops the run, saying how long it asked
(exit 1: run it again later to resume). It reads at most 16 MiB of an
answer and follows no redirect (one would carry your key elsewhere):
--base-url must be the API's own address.
Exit status: 0 every row imported, 3 some rows refused, 1 the run stopped
(the service failed: run it again), 2 a usage error.

`

// defaultReport is <file>.refused (JSON lines), or for a CSV input
// <name>.refused.csv, in the input's layout.
func defaultReport(file string) string {
	if isCSV(file) {
		return strings.TrimSuffix(file, filepath.Ext(file)) + ".refused.csv"
	}
	return file + ".refused"
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

// usageError is a mistake in what the importer was asked to do: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// stateFor is the state file of file when --state is not given: for a
// report of refused rows fed back, the state of the run that wrote it (its
// refused_state column, or, for an older report NAME.refused.csv, the
// NAME.csv.state beside it), so the rows it refers to that that run
// imported are found; otherwise <file>.state.
func stateFor(file string, layout *csvLayout) (string, error) {
	if layout != nil && layout.reportState != "" {
		p := layout.reportState
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		if _, err := os.Stat(p); err != nil {
			return "", &usageError{fmt.Sprintf("%s is a report of refused rows, and the run that wrote it kept its state in %s, which is not there: "+
				"name the state file with --state (the rows it refers to are found there)", file, p)}
		}
		fmt.Fprintf(os.Stderr, "%s: a report of refused rows; the rows it refers to are looked up in the state of the run that wrote it, %s (and this run's rows go there too)\n", file, p)
		return p, nil
	}
	if name, ok := strings.CutSuffix(file, ".refused.csv"); ok && layout != nil {
		orig := name + ".csv.state"
		if _, err := os.Stat(orig); err == nil {
			fmt.Fprintf(os.Stderr, "%s: a report of refused rows; the rows it refers to are looked up in %s\n", file, orig)
			return orig, nil
		}
	}
	return file + ".state", nil
}

// options are what a run is asked to do: the flags.
type options struct {
	file, base, key string
	// state, report: "" is the file's own (stateFor, defaultReport).
	state, report string
	// maxWait caps one wait the API asks for (0: client.DefaultMaxWait).
	maxWait time.Duration
}

// run imports file and returns how many rows were refused.
func run(ctx context.Context, o options) (int, error) {
	file, base, key, statePath, reportPath := o.file, o.base, o.key, o.state, o.report
	if reportPath == "" {
		reportPath = defaultReport(file)
	}
	maxWait := cmp.Or(o.maxWait, client.DefaultMaxWait)
	layout, rows, err := load(file)
	if err != nil {
		return 0, err
	}
	if statePath == "" {
		if statePath, err = stateFor(file, layout); err != nil {
			return 0, err
		}
	}
	if err := distinctPaths(file, statePath, reportPath); err != nil {
		return 0, err
	}
	sort.SliceStable(rows, func(i, j int) bool { return order[rows[i].r.str("kind")] < order[rows[j].r.str("kind")] })
	alias := map[string]string{} // kind:source_id -> kind:what the state file and key name it by
	for _, e := range rows {
		kind, src := e.r.str("kind"), e.r.str("source_id")
		alias[stateKey(kind, src)] = stateKey(kind, e.ref())
	}
	st, err := openPlain(statePath, os.O_CREATE|os.O_APPEND|os.O_RDWR, "state file")
	if err != nil {
		return 0, err
	}
	defer st.Close()
	done, err := loadState(st)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", statePath, err)
	}
	if err := narrow(st); err != nil {
		return 0, err
	}
	if err := endLine(st); err != nil {
		return 0, err
	}
	// The report is this run's: rows refused before and imported since
	// must not linger in it.
	rf, err := openPrivate(reportPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, "report")
	if err != nil {
		return 0, err
	}
	defer rf.Close()
	var rep reporter = jsonReport{rf}
	if layout != nil {
		rep = &csvReport{w: rf, layout: layout, state: relativeTo(reportPath, statePath)}
	}
	c := client.New(base, key)
	c.MaxWait = maxWait
	// A row whose key is still held (the request a killed run left in
	// flight, or a crashed one until its 30 s lock lapses) is retried, not
	// refused.
	c.MaxRetries = 40
	im := &importer{c: c, rep: rep, st: st, done: done, alias: alias, maxWait: maxWait,
		p:       &progress{total: len(rows), start: time.Now(), tty: isTTY()},
		refused: map[string]string{}}
	p := im.p
	for _, e := range rows {
		if err := im.row(ctx, e); err != nil {
			return p.refused, err
		}
	}
	if err := rep.flush(); err != nil {
		return p.refused, err
	}
	p.finish(reportPath, statePath)
	return p.refused, nil
}

// importer sends the rows of one run, in order.
type importer struct {
	c       *client.Client
	rep     reporter
	st      io.Writer         // the state file: a line per row imported
	done    map[string]string // "kind:ref" -> the id the API gave it
	refused map[string]string // "kind:source" -> why, for rows that depend on them
	alias   map[string]string // kind:source_id -> kind:what the state file and key name it by
	maxWait time.Duration
	p       *progress
}

// row imports one row: skipped when an earlier run did, refused (in the
// report) when it or a row it needs is wrong; an error stops the run.
func (im *importer) row(ctx context.Context, e entry) error {
	r, line := e.r, e.line
	kind, src := r.str("kind"), r.str("source_id")
	ref := e.ref()
	id := stateKey(kind, ref)
	im.p.step()
	if _, ok := im.done[id]; ok {
		im.p.skipped++
		return nil
	}
	path, ok := paths[kind]
	if kind == "" || src == "" || !ok {
		im.rep.refuse(e, refusal{cause: "row", reason: "each row needs kind (company, person, client, matter, time_entry) and source_id"})
		im.p.refused++
		return nil
	}
	body, why := resolve(r, im.done, im.refused, im.alias)
	if why.reason != "" {
		im.rep.refuse(e, why)
		im.refused[id] = why.reason
		im.p.refused++
		return nil
	}
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	resp, err := im.c.Do(ctx, "POST", path, map[string]string{"Idempotency-Key": idempotencyKey(kind, ref)}, body, &out)
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status < 500 && apiErr.RetryAfter == 0:
		why := problems(r, apiErr)
		im.rep.refuse(e, refusal{cause: "api", status: apiErr.Status, field: apiErr.Field, reason: why})
		im.refused[id] = why
		im.p.refused++
		return nil
	case errors.As(err, new(*client.WaitTooLongError)):
		var long *client.WaitTooLongError
		errors.As(err, &long)
		return fmt.Errorf("row %s %s (line %d): %v; the API asked to wait %s, longer than --max-wait %s: the run stopped (run again later to resume, or raise --max-wait)",
			kind, cpr.Redact(src), line, long.Err, long.Wait, im.maxWait)
	case err != nil:
		return fmt.Errorf("row %s %s (line %d): %w (run again to resume)", kind, cpr.Redact(src), line, err)
	}
	im.done[id] = out.Data.ID
	if _, err := fmt.Fprintf(im.st, "{\"row\":%q,\"id\":%q}\n", id, out.Data.ID); err != nil {
		return err
	}
	if resp.Replayed {
		im.p.skipped++ // created by an earlier run whose state lost it (a kill mid-row): already done
	} else {
		im.p.imported++
	}
	im.p.limit = resp.RateLimit.Limit
	// Pace under the limit instead of running into 429s.
	if rl := resp.RateLimit; rl.Limit > 0 && rl.Remaining == 0 {
		if wait := time.Until(rl.Reset); wait > 0 {
			if wait > im.maxWait {
				return fmt.Errorf("the rate limit's window resets in %s (X-RateLimit-Reset), longer than --max-wait %s: the run stopped after row %s %s (line %d) (run again later to resume, or raise --max-wait)",
					wait.Round(time.Second), im.maxWait, kind, cpr.Redact(src), line)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// resolve builds the body: the row without kind/source_id, its reference
// replaced by the id the earlier row got.
func resolve(r row, done map[string]string, refused map[string]string, alias map[string]string) (map[string]any, refusal) {
	kind := r.str("kind")
	body := map[string]any{}
	for k, v := range r {
		if k != "kind" && k != "source_id" {
			body[k] = v
		}
	}
	ref, ok := refs[kind]
	if !ok {
		return body, refusal{}
	}
	target := r.str(ref.from)
	delete(body, ref.from)
	if target == "" {
		return nil, refusal{cause: "row", field: ref.from, reason: fmt.Sprintf("%s needs %s (the source_id of a %s row)", kind, ref.from, ref.kinds)}
	}
	shown := cpr.Redact(target)
	for _, k := range strings.Split(ref.kinds, ",") {
		key := cmp.Or(alias[stateKey(k, target)], stateKey(k, target))
		if id, ok := done[key]; ok {
			switch {
			case kind == "client" && k == "company":
				body["company_id"] = id
			case kind == "client":
				body["person_id"] = id
			case kind == "matter":
				body["client_id"] = id
			default:
				body["matter_id"] = id
			}
			return body, refusal{}
		}
		if why, ok := refused[key]; ok {
			return nil, refusal{cause: "parent", field: ref.from, parent: k + " " + shown,
				reason: fmt.Sprintf("not sent: its %s %s was refused (%s); fix that row and run again", k, shown, why)}
		}
	}
	return nil, refusal{cause: "row", field: ref.from, reason: fmt.Sprintf("no %s row with source_id %s", ref.kinds, shown)}
}

// sourceRef names a row in the state file, the report and its
// Idempotency-Key: its source_id, or, when that holds a CPR number (a
// system that keys people by CPR), its line in the file, which stays the
// same when a run is resumed on the same file.
func sourceRef(src string, line int) string {
	if src != "" && cpr.Find(src) {
		return fmt.Sprintf("line-%d", line)
	}
	return src
}

// distinctPaths refuses a state file or report that is the input (or
// each other): the report is truncated at start, and the state appended to.
func distinctPaths(file, state, report string) error {
	same := func(a, b string) bool {
		aa, err1 := filepath.Abs(a)
		bb, err2 := filepath.Abs(b)
		if err1 == nil && err2 == nil && aa == bb {
			return true
		}
		fa, err1 := os.Stat(a)
		fb, err2 := os.Stat(b)
		return err1 == nil && err2 == nil && os.SameFile(fa, fb)
	}
	for _, p := range []struct{ a, b, what string }{
		{report, file, "--report is the input file"}, {state, file, "--state is the input file"}, {report, state, "--report is the state file"},
	} {
		if same(p.a, p.b) {
			return fmt.Errorf("%s (%s): it would be overwritten; name another file", p.what, p.a)
		}
	}
	return nil
}

func stateKey(kind, src string) string { return kind + ":" + src }

// idempotencyKey is derived from the row, so a rerun replays it.
func idempotencyKey(kind, src string) string {
	k := "import:" + kind + ":" + src
	if len(k) > 255 {
		sum := sha256.Sum256([]byte(k))
		k = "import:" + kind + ":sha256:" + hex.EncodeToString(sum[:])
	}
	return k
}

// loadState reads the rows a state file holds as done (f is open for
// reading and appending, at its start). A file with a line the importer
// does not write (but for a torn last one) is refused, not appended to: a
// report fed back names its state file, and a crafted report could name
// any file of the user's (~/.bashrc).
func loadState(f io.Reader) (map[string]string, error) {
	done := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var s struct{ Row, ID string }
		switch {
		case json.Unmarshal(line, &s) == nil && s.Row != "" && s.ID != "":
			done[s.Row] = s.ID
		case bytes.HasPrefix(line, []byte(`{"row":`)):
			// A line a killed run tore: ignored, the key replays its row.
		default:
			return nil, fmt.Errorf("not a state file of the importer (line %d is not a line it writes), so it is neither read nor written: name the run's state file with --state", n)
		}
	}
	return done, sc.Err()
}

// endLine ends a state file's torn last line (a run killed mid-write), so
// the next line appended starts a line of its own.
func endLine(f *os.File) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
		return err
	}
	if last[0] != '\n' {
		_, err = f.Write([]byte("\n"))
	}
	return err
}

// entry is a row and its line in the file (CSV: counting the header),
// and a CSV row's cells as read, for the report.
type entry struct {
	r     row
	line  int
	cells []string
	// origLine is, for a row of a report fed back, its line in the file
	// the report was made from (0 otherwise).
	origLine int
}

// ref names the row in the state file and its Idempotency-Key.
func (e entry) ref() string { return sourceRef(e.r.str("source_id"), cmp.Or(e.origLine, e.line)) }

// load reads JSONL, or CSV with a header row (numbers stay numbers; the
// CSV's layout is returned, for a report in it).
func load(path string) (*csvLayout, []entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var rows []entry
	if isCSV(path) {
		l, rows, err := readCSV(path, f)
		if err == nil {
			fmt.Fprintf(os.Stderr, "%s: %s\n", path, l.describe())
		}
		return l, rows, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.UseNumber() // 1250.00 reaches the API as written, to be refused there
		var r row
		if err := dec.Decode(&r); err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		rows = append(rows, entry{r: r, line: n})
	}
	return nil, rows, sc.Err()
}

// progress prints rows done, rate and ETA to stderr.
type progress struct {
	total, n, imported, skipped, refused int
	limit                                int // the key's requests a minute, once an answer said
	start, last                          time.Time
	tty                                  bool
}

func (p *progress) step() {
	p.n++
	if time.Since(p.last) >= 200*time.Millisecond {
		p.print()
	}
}

func (p *progress) print() {
	p.last = time.Now()
	rate := float64(p.n) / max(time.Since(p.start).Seconds(), 0.001)
	eta, limited := p.eta(rate), ""
	if p.limit > 0 {
		limited = fmt.Sprintf(" (rate limit %d/min)", p.limit)
	}
	line := fmt.Sprintf("%d/%d rows  %.0f rows/s  ETA %s%s  imported %d  skipped %d  refused %d",
		p.n, p.total, rate, eta.Round(time.Second), limited, p.imported, p.skipped, p.refused)
	if p.tty {
		fmt.Fprintf(os.Stderr, "\r%s   ", line)
	} else {
		fmt.Fprintln(os.Stderr, line)
	}
}

// eta is the time the rows left take at the rate so far, or at the rate
// limit when that is slower: the first minute runs at full speed until
// the limit's window is spent, and the rest no faster than the limit.
func (p *progress) eta(rate float64) time.Duration {
	left := float64(p.total - p.n)
	if p.limit > 0 {
		rate = min(rate, float64(p.limit)/60)
	}
	return time.Duration(left / max(rate, 0.001) * float64(time.Second))
}

func (p *progress) finish(report, state string) {
	p.print()
	fmt.Fprintf(os.Stderr, "\ndone: %d imported, %d already done, %d refused\n", p.imported, p.skipped, p.refused)
	refused := "none"
	if p.refused > 0 {
		refused = report
	}
	fmt.Fprintf(os.Stderr, "refused rows: %s; progress: %s\n", refused, state)
}

func isTTY() bool {
	fi, err := os.Stderr.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
