package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"

	"github.com/practice-api/practice-api/shared/client"
)

// writeExport writes a JSONL export: companies and people, an engagement
// each, two matters per engagement, three time entries per matter, shuffled
// out of order (the importer puts them in the spec's order).
func writeExport(t *testing.T, dir string, parties int, extra ...string) (string, int) {
	t.Helper()
	var lines []string
	run := time.Now().UnixNano() % 1000000
	for i := range parties {
		kind := "company"
		body := fmt.Sprintf(`"name":"Firma %d ApS","cvr":"%08d"`, i, int(run)*100+i)
		if i%2 == 1 {
			kind, body = "person", fmt.Sprintf(`"name":"Person %d","email":"p%d-%d@example.dk"`, i, run, i)
		}
		lines = append(lines, fmt.Sprintf(`{"kind":%q,"source_id":"P%d",%s}`, kind, i, body))
		lines = append(lines, fmt.Sprintf(`{"kind":"client","source_id":"C%d","party":"P%d"}`, i, i))
		for m := range 2 {
			lines = append(lines, fmt.Sprintf(`{"kind":"matter","source_id":"M%d-%d","client":"C%d","hourly_rate":100000}`, i, m, i))
			for e := range 3 {
				lines = append(lines, fmt.Sprintf(`{"kind":"time_entry","source_id":"T%d-%d-%d","matter":"M%d-%d","date":"2025-03-0%d","duration_minutes":%d}`, i, m, e, i, m, e+1, 15*(e+1)))
			}
		}
	}
	lines = append(lines, extra...)
	// Time entries first: the importer must order rows itself.
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	path := filepath.Join(dir, "export.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, len(lines)
}

func importCmd(file, key string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(api.root, "scripts", "import"), "--file", file, "--key", key, "--base-url", api.base)
	cmd.Dir = api.root
	return cmd
}

func count[T any](t *testing.T, seq func(yield func(T, error) bool)) int {
	n := 0
	for _, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestImportIsResumableAfterAKill kills scripts/import a quarter of the
// way through a 200-row file, runs it again, and finds each row imported
// exactly once. 200 rows, not the 2,000 and then 600 it once had: the
// importer sends one row at a time (about 17 rows a second beside make
// test's other tiers), so 2,000 rows took two minutes on each runtime,
// and the kill, the resume and every list's paging (pages of 15: 20
// clients, 40 matters and 120 entries are two, three and eight pages) are
// the same at 200.
func TestImportIsResumableAfterAKill(t *testing.T) {
	t.Parallel() // the suite's slow tests (each writes only to an organisation of its own) run beside each other once the rest is done
	_, key, _ := newOrg(t, "parties:write,clients:write,clients:read,matters:write,matters:read,time:write,time:read")
	dir := t.TempDir()
	// 20 × (1 + 1 + 2 + 6) = 200 rows. Each row is a create and its event's
	// dispatch, about 9 store calls: at 600 rows this one test sent the
	// engine 5,500 calls on each runtime, over half the suite's.
	const parties = 20
	file, rows := writeExport(t, dir, parties)
	if rows != 10*parties {
		t.Fatalf("%d rows", rows)
	}
	first := importCmd(file, key)
	var firstOut strings.Builder
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	// Kill it (no chance to clean up) once it is well into the file: 50
	// of 200 rows. The importer sends one row at a time, and the state
	// file is read every 20 ms, so the kill lands long before the end.
	for deadline := time.Now().Add(5 * time.Minute); ; {
		if n := lines(file + ".state"); n >= rows/4 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the importer ended before it was killed (%v) with %d rows done:\n%s", err, lines(file+".state"), firstOut.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = first.Process.Signal(syscall.SIGKILL)
			<-exited
			t.Fatalf("the importer did %d rows in 5 minutes:\n%s", lines(file+".state"), firstOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = first.Process.Signal(syscall.SIGKILL)
	<-exited
	killedAt := lines(file + ".state")
	if killedAt >= rows {
		t.Fatalf("the importer finished before it was killed (%d rows)", killedAt)
	}
	out, err := importCmd(file, key).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	// The rows the state file had are already done, and so is the row the
	// kill caught between its create and its state line (its create
	// replays): every row once, imported or already done.
	m := regexp.MustCompile(`done: (\d+) imported, (\d+) already done, 0 refused`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("resumed run said:\n%s", out)
	}
	imported, already := atoi(m[1]), atoi(m[2])
	if imported+already != rows || already < killedAt || already > killedAt+1 {
		t.Fatalf("resumed run: %d imported, %d already done; the state had %d of %d rows", imported, already, killedAt, rows)
	}
	if n := lines(file + ".refused"); n != 0 {
		b, _ := os.ReadFile(file + ".refused")
		t.Fatalf("%d rows refused across the runs:\n%s", n, b)
	}
	c := client.New(api.base, key)
	c.HTTP.Transport = httpClient.Transport
	c.MaxRetries = 60 // the devserver may answer 503 for a while as it dispatches the import's events (under investigation; the suite prints its errors)
	ctx := t.Context()
	page := url.Values{"per_page": {"15"}}
	if n := count(t, c.Companies(ctx, page)) + count(t, c.People(ctx, page)); n != parties {
		t.Errorf("%d parties, want %d", n, parties)
	}
	if n := count(t, c.Clients(ctx, page)); n != parties {
		t.Errorf("%d clients, want %d", n, parties)
	}
	if n := count(t, c.Matters(ctx, page)); n != 2*parties {
		t.Errorf("%d matters, want %d", n, 2*parties)
	}
	if n := count(t, c.TimeEntries(ctx, page)); n != 6*parties {
		t.Errorf("%d time entries, want %d", n, 6*parties)
	}
}

func TestImportReportsRefusedRows(t *testing.T) {
	_, key, _ := newOrg(t, "parties:write,clients:write,matters:write,time:write")
	dir := t.TempDir()
	file, _ := writeExport(t, dir, 2,
		`{"kind":"time_entry","source_id":"BAD-1","matter":"M0-0","date":"2025-03-01","duration_minutes":1.5}`,
		`{"kind":"matter","source_id":"BAD-2","client":"NOPE"}`,
		`{"kind":"person","source_id":"BAD-3","name":"X","email":"x@example.dk","cpr":"0101901234"}`)
	out, err := importCmd(file, key).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), ", 3 refused") ||
		!strings.Contains(string(out), "refused rows: "+file+".refused; progress: "+file+".state") {
		t.Fatalf("refused rows must end the run with status 3 and say where they are: %v\n%s", err, out)
	}
	f, err := os.Open(file + ".refused")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	why := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			SourceID string `json:"source_id"`
			Message  string `json:"message"`
		}
		_ = json.Unmarshal(sc.Bytes(), &r)
		why[r.SourceID] = r.Message
	}
	if !strings.Contains(why["BAD-1"], "whole number") || !strings.Contains(why["BAD-2"], "no client row") || !strings.Contains(why["BAD-3"], "CPR") {
		t.Fatalf("report %v", why)
	}
	// Fixed, the file imports cleanly: status 0, and the report holds no
	// row from the run before.
	clean, _ := os.ReadFile(file)
	fixed := strings.NewReplacer(`"duration_minutes":1.5`, `"duration_minutes":90`, `"client":"NOPE"`, `"client":"C0"`, `,"cpr":"0101901234"`, ``).Replace(string(clean))
	if err := os.WriteFile(file, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = importCmd(file, key).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refused rows: none;") || lines(file+".refused") != 0 {
		t.Fatalf("a clean rerun: %v, %d stale report lines\n%s", err, lines(file+".refused"), out)
	}
}

// TestImportHelpExamplesImport: the CSV and JSONL examples that
// import --help shows are real: each, written to a file, imports every row.
func TestImportHelpExamplesImport(t *testing.T) {
	_, key, _ := newOrg(t, "parties:write,clients:write,matters:write,time:write")
	help, _ := exec.Command(filepath.Join(api.root, "scripts", "import"), "--help").CombinedOutput()
	text := string(help)
	for _, want := range []string{"JSONL", "CSV", "kind,source_id", "Exit status"} {
		if !strings.Contains(text, want) {
			t.Fatalf("--help does not show %s:\n%s", want, text)
		}
	}
	example := func(start string) string {
		var out []string
		on := false
		for _, l := range strings.Split(text, "\n") {
			t := strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(t, start):
				on = true
			case on && t == "":
				return strings.Join(out, "\n") + "\n"
			}
			if on {
				out = append(out, t)
			}
		}
		return strings.Join(out, "\n") + "\n"
	}
	// The two examples describe the same four records: run them in two
	// organisations, so the CVR is free in each.
	_, key2, _ := newOrg(t, "parties:write,clients:write,matters:write,time:write")
	for name, f := range map[string]struct{ body, key string }{
		"export.jsonl": {example(`{"kind":"company"`), key},
		"export.csv":   {example("kind,source_id"), key2},
	} {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := importCmd(path, f.key).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "done: 4 imported, 0 already done, 0 refused") {
			t.Fatalf("%s from --help:\n%s\n%v\n%s", name, f.body, err, out)
		}
	}
}

func lines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// TestImportKeepsCPRSourceIDsAndLinksOut: rows keyed by CPR-shaped source
// ids import (named by their line: a client refers to its person by that
// source id), and neither the state file, the report nor any key holds the
// number; a rerun resumes them as done. A report that is a symbolic link,
// or that names the input or the state file, stops the run before anything
// is written, and the link's target is untouched.
func TestImportKeepsCPRSourceIDsAndLinksOut(t *testing.T) {
	_, key, _ := newOrg(t, "parties:write,clients:write,matters:write,time:write")
	dir := t.TempDir()
	run := time.Now().UnixNano() % 1000000
	file, _ := writeExport(t, dir, 1,
		fmt.Sprintf(`{"kind":"person","source_id":"010190-1234","name":"Keyed By CPR","email":"cpr-%d@example.dk"}`, run),
		`{"kind":"client","source_id":"0101901234","party":"010190-1234"}`,
		`{"kind":"matter","source_id":"M-bad","client":"0101901234","hourly_rate":"x"}`)
	out, err := importCmd(file, key).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), ", 1 refused") {
		t.Fatalf("want the CPR-keyed rows imported and one refused: %v\n%s", err, out)
	}
	for _, f := range []string{file + ".state", file + ".refused"} {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "010190") || strings.Contains(string(b), "0101901234") {
			t.Errorf("%s holds the CPR:\n%s", f, b)
		}
	}
	state, _ := os.ReadFile(file + ".state")
	if !strings.Contains(string(state), `"person:line-`) || !strings.Contains(string(state), `"client:line-`) {
		t.Errorf("the CPR-keyed rows are not in the state by their lines:\n%s", state)
	}
	report, _ := os.ReadFile(file + ".refused")
	if !strings.Contains(string(report), `"line":`) || !strings.Contains(string(report), `"source_id":"M-bad"`) {
		t.Errorf("report %s", report)
	}
	out, err = importCmd(file, key).CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), "0 imported") {
		t.Fatalf("a rerun must import nothing again: %v\n%s", err, out)
	}

	// The report as a symbolic link to a file the user cares about.
	precious := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "report.jsonl")
	if err := os.Symlink(precious, link); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"a link":         {"--report", link},
		"the input":      {"--report", file},
		"the state file": {"--report", filepath.Join(dir, "s.state"), "--state", filepath.Join(dir, "s.state")},
		"state is input": {"--state", file},
	} {
		cmd := importCmd(file, key)
		cmd.Args = append(cmd.Args, args...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), map[bool]string{true: "symbolic link", false: "overwritten"}[name == "a link"]) {
			t.Errorf("report as %s: %v\n%s", name, err, out)
		}
	}
	if b, _ := os.ReadFile(precious); string(b) != "keep me" {
		t.Errorf("the link's target was written: %q", b)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "Keyed By CPR") {
		t.Errorf("the input was overwritten")
	}
}

// TestImportReadsDanishExcel: a file as a Danish Excel saves "CSV UTF-8"
// (a byte-order mark, semicolons, CRLF, æøå) imports as it is, the
// importer saying how it read it. A refused row and the row that refers
// to it go to a CSV report in the same layout, the second saying it was
// not sent because of the first; fixed in place, the report imports.
func TestImportReadsDanishExcel(t *testing.T) {
	_, key, _ := newOrg(t, "parties:write,clients:write,matters:write,time:write")
	dir := t.TempDir()
	run := time.Now().UnixNano() % 1000000
	file := filepath.Join(dir, "eksport.csv")
	rows := []string{
		"kind;source_id;name;cvr;party;client;hourly_rate;title",
		fmt.Sprintf("company;F1;Ærø Søfart ApS;%08d;;;;", run*100+1),
		"client;K1;;;F1;;;",
		"matter;S1;;;;K1;125000;Lejekontrakt, Åbenrå",
		"company;F2;Østerbro Vinhandel I/S;1234;;;;", // a CVR of four digits
		"client;K2;;;F2;;;",
	}
	raw := "\ufeff" + strings.Join(rows, "\r\n") + "\r\n"
	if err := os.WriteFile(file, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := importCmd(file, key).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), "semicolons (as a Danish Excel saves), UTF-8 with a byte-order mark") ||
		!strings.Contains(string(out), "done: 3 imported, 0 already done, 2 refused") || !strings.Contains(string(out), "refused rows: "+filepath.Join(dir, "eksport.refused.csv")) {
		t.Fatalf("want 3 imported, 2 refused, and how the file was read: %v\n%s", err, out)
	}
	report, err := os.ReadFile(filepath.Join(dir, "eksport.refused.csv"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(report)
	for _, want := range []string{"\ufeffkind;source_id;name;cvr;party;client;hourly_rate;title;refused_line;refused_status;refused_field;refused_reason;refused_state\r\n",
		"company;F2;Østerbro Vinhandel I/S;1234;;;;;5;422;cvr;", "client;K2;;;F2;;;;6;;party;\"not sent: its company F2 was refused"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the report lacks %q:\n%s", want, text)
		}
	}
	fixed := filepath.Join(dir, "rettet.csv")
	if err := os.WriteFile(fixed, []byte(strings.Replace(text, ";1234;", fmt.Sprintf(";%08d;", run*100+2), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = importCmd(fixed, key).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done: 2 imported, 0 already done, 0 refused") {
		t.Fatalf("the fixed report: %v\n%s", err, out)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestImportReportFixedInPlaceFindsItsRun is the round an integrator makes
// with a spreadsheet: a Windows-1252 export (an older Excel's) whose
// matter has an amount as Danish Excel writes it (1.250,00) and two
// problems more; the report, in Windows-1252 too, says every problem, and
// what to write for the amount; fixed in the spreadsheet and imported as
// it is (no --state), its matter finds the client the first run imported,
// through that run's state. A file mixing encodings imports nothing and
// says which lines.
func TestImportReportFixedInPlaceFindsItsRun(t *testing.T) {
	_, key, _ := newOrg(t, "parties:write,clients:write,clients:read,matters:write,matters:read,time:write")
	dir := t.TempDir()
	run := time.Now().UnixNano() % 1000000
	file := filepath.Join(dir, "kunder.csv")
	rows := []string{
		"kind;source_id;name;cvr;party;client;hourly_rate;title;status",
		fmt.Sprintf("company;crm-1002;Bjørn Ødegård ApS;%08d;;;;;", run*100+3),
		"client;K-1002;;;crm-1002;;;;",
		"matter;S-7;;;;K-1002;1.250,00;Kort opfølgning – Østerbro;lukket",
	}
	cp1252 := func(s string) []byte {
		b, err := charmap.Windows1252.NewEncoder().Bytes([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if err := os.WriteFile(file, cp1252(strings.Join(rows, "\r\n")+"\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := importCmd(file, key).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), "Windows-1252") || !strings.Contains(string(out), "done: 2 imported, 0 already done, 1 refused") {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	reportPath := filepath.Join(dir, "kunder.refused.csv")
	raw, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatal(err)
	}
	if utf8.Valid(raw) {
		t.Fatalf("the report of a Windows-1252 file is not in Windows-1252:\n%s", raw)
	}
	text, _ := charmap.Windows1252.NewDecoder().Bytes(raw)
	for _, want := range []string{"matter;S-7;;;;K-1002;1.250,00;Kort opfølgning – Østerbro;lukket;4;422;",
		"hourly_rate 1.250,00 is not a whole number of øre; write 125000", "; status", "kunder.csv.state"} {
		if !strings.Contains(string(text), want) {
			t.Fatalf("the report lacks %q:\n%s", want, text)
		}
	}
	// Fixed in the spreadsheet, saved as it was, imported as it is.
	fixed := strings.NewReplacer(";1.250,00;", ";125000;", ";lukket;", ";dormant;").Replace(string(text))
	if err := os.WriteFile(reportPath, cp1252(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = importCmd(reportPath, key).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done: 1 imported, 0 already done, 0 refused") || !strings.Contains(string(out), "kunder.csv.state") {
		t.Fatalf("the fixed report: %v\n%s", err, out)
	}
	c := client.New(api.base, key)
	c.HTTP.Transport = httpClient.Transport
	var titles []string
	for m, err := range c.Matters(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		titles = append(titles, m.Title)
	}
	if len(titles) != 1 || titles[0] != "Kort opfølgning – Østerbro" {
		t.Fatalf("matters %q", titles)
	}
	// The first file again: every row already done, the matter too (the
	// report's run noted it in the same state).
	if out, err := importCmd(file, key).CombinedOutput(); err != nil || !strings.Contains(string(out), "done: 0 imported, 3 already done, 0 refused") {
		t.Fatalf("the first file again: %v\n%s", err, out)
	}

	// A UTF-8 file (with its byte-order mark) with one line an older tool
	// saved in Windows-1252: refused whole, naming the line.
	mixed := filepath.Join(dir, "blandet.csv")
	data := append([]byte("\ufeffkind;source_id;name;email\r\nperson;p-1;Bjørn Ødegård;b@example.dk\r\n"), cp1252("person;p-2;Mette Kjærsgaard;m@example.dk\r\n")...)
	if err := os.WriteFile(mixed, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = importCmd(mixed, key).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "line 3 is not UTF-8") || !strings.Contains(string(out), "Mette Kjærsgaard") {
		t.Fatalf("a mixed file: %v\n%s", err, out)
	}
	var people int
	for _, err := range c.People(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		people++
	}
	if people != 0 {
		t.Fatalf("a mixed file imported %d people", people)
	}
}
