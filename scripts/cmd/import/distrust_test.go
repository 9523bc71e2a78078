package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/cpr"
)

// The importer trusts neither the server nor the paths it is given (#38,
// item 6). Every case runs at once, each with files and a server of its own.

// oneRow writes a JSONL export of one company in dir.
func oneRow(t *testing.T, dir string) string {
	t.Helper()
	file := filepath.Join(dir, "export.jsonl")
	if err := os.WriteFile(file, []byte(`{"kind":"company","source_id":"crm-1","name":"Nordlys ApS","cvr":"12345678"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// runBounded runs the importer and fails the test if it has not returned
// within d (a wait of decades, or an open() blocked on a FIFO, would).
func runBounded(t *testing.T, d time.Duration, o options) error {
	t.Helper()
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, err := run(ctx, o); done <- err }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cancel()
		t.Fatalf("the importer had not returned after %s", d)
		return nil
	}
}

// The waits the API asks for are capped by --max-wait (15 minutes unless
// set), and the error says how long it asked and the cap; answers are read
// through a limit and redirects are not followed (the key stays home).
func TestTheImporterTrustsNoServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
		answer  func(w http.ResponseWriter, r *http.Request, elsewhere string)
		want    []string
	}{
		{"Retry-After 2147483647", 0, func(w http.ResponseWriter, r *http.Request, _ string) {
			w.Header().Set("Retry-After", "2147483647")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"code":"rate_limited","message":"too many requests"}`)
		}, []string{"596523h14m7s", "longer than --max-wait 15m0s", "line 1"}},
		{"Retry-After over a smaller --max-wait", time.Minute, func(w http.ResponseWriter, r *http.Request, _ string) {
			w.Header().Set("Retry-After", "61")
			w.WriteHeader(503)
			fmt.Fprint(w, `{"code":"unavailable","message":"try later"}`)
		}, []string{"1m1s", "longer than --max-wait 1m0s"}},
		{"a reset years away", 0, func(w http.ResponseWriter, r *http.Request, _ string) {
			w.Header().Set("X-RateLimit-Limit", "60")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", fmt.Sprint(time.Now().AddDate(20, 0, 0).Unix()))
			w.WriteHeader(201)
			fmt.Fprint(w, `{"data":{"id":"c1"}}`)
		}, []string{"resets in", "longer than --max-wait 15m0s"}},
		{"a 307 to another port", 0, func(w http.ResponseWriter, r *http.Request, elsewhere string) {
			http.Redirect(w, r, elsewhere, http.StatusTemporaryRedirect)
		}, []string{"follows no redirect"}},
		{"an answer of 300 MB", 0, func(w http.ResponseWriter, r *http.Request, _ string) {
			w.WriteHeader(201)
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for range 300 << 4 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, []string{"longer than 16777216 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var leaked atomic.Bool
			other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { leaked.Store(true) }))
			t.Cleanup(other.Close)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.answer(w, r, other.URL+"/steal") }))
			t.Cleanup(srv.Close)
			err := runBounded(t, 30*time.Second, options{file: oneRow(t, t.TempDir()), base: srv.URL, key: "pa_live_secret", maxWait: tc.maxWait})
			if err == nil {
				t.Fatal("the run went on")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error %q lacks %q", err, w)
				}
			}
			if leaked.Load() {
				t.Error("the redirect was followed: the other server got the request")
			}
		})
	}
}

// countingServer answers every request 201 with a resource of id, and
// counts them.
func countingServer(t *testing.T, id string) (*httptest.Server, *atomic.Int32) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"data":{"id":%q}}`, id)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// The state file and the report are created 0600 (an older 0644 one is
// narrowed), and refused unless they are regular files reached through no
// symbolic link: a link at the name, a linked folder in the path, a FIFO
// (which blocked open() for ever), a device, a folder. Nothing is sent
// then, and nothing is written where a link points.
func TestTheImportersFilesArePrivateAndPlain(t *testing.T) {
	t.Parallel()
	srv, requests := countingServer(t, "c1")

	t.Run("created 0600, an older one narrowed", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		file := oneRow(t, dir)
		if err := os.WriteFile(file+".state", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := runBounded(t, 30*time.Second, options{file: file, base: srv.URL, key: "k"}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{file + ".state", file + ".refused"} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v, want 0600", p, fi.Mode(), err)
			}
		}
	})

	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) (state, report string, check func(t *testing.T))
		want  string
	}{
		{"a report that is a link", func(t *testing.T, dir string) (string, string, func(*testing.T)) {
			precious := filepath.Join(dir, "precious.txt")
			mustWrite(t, precious, "keep")
			link := filepath.Join(dir, "r.jsonl")
			must(t, os.Symlink(precious, link))
			return "", link, func(t *testing.T) { unchanged(t, precious, "keep") }
		}, "is a symbolic link"},
		{"a report in a linked folder", func(t *testing.T, dir string) (string, string, func(*testing.T)) {
			elsewhere := t.TempDir()
			must(t, os.Symlink(elsewhere, filepath.Join(dir, "out")))
			return "", filepath.Join(dir, "out", "x.csv"), func(t *testing.T) {
				if _, err := os.Lstat(filepath.Join(elsewhere, "x.csv")); err == nil {
					t.Error("the report was written through the linked folder")
				}
			}
		}, "reached through a symbolic link"},
		{"a state in a linked folder, deeper", func(t *testing.T, dir string) (string, string, func(*testing.T)) {
			elsewhere := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(elsewhere, "deeper"), 0o700))
			must(t, os.Symlink(elsewhere, filepath.Join(dir, "out")))
			return filepath.Join(dir, "out", "deeper", "s.state"), "", func(t *testing.T) {
				if _, err := os.Lstat(filepath.Join(elsewhere, "deeper", "s.state")); err == nil {
					t.Error("the state was written through the linked folder")
				}
			}
		}, "reached through a symbolic link"},
		{"a report that is a FIFO", func(t *testing.T, dir string) (string, string, func(*testing.T)) {
			p := filepath.Join(dir, "r.fifo")
			must(t, syscall.Mkfifo(p, 0o600))
			return "", p, nil
		}, "a named pipe (FIFO), not a regular file"},
		{"a state that is a FIFO", func(t *testing.T, dir string) (string, string, func(*testing.T)) {
			p := filepath.Join(dir, "s.fifo")
			must(t, syscall.Mkfifo(p, 0o600))
			return p, "", nil
		}, "a named pipe (FIFO), not a regular file"},
		{"a report that is a device", func(t *testing.T, dir string) (string, string, func(*testing.T)) {
			return "", "/dev/null", nil
		}, "a device, not a regular file"},
		{"a state that is a folder", func(t *testing.T, dir string) (string, string, func(*testing.T)) {
			return t.TempDir(), "", nil
		}, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := oneRow(t, dir)
			state, report, check := tc.setup(t, dir)
			before := requests.Load()
			err := runBounded(t, 10*time.Second, options{file: file, base: srv.URL, key: "k", state: state, report: report})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			if check != nil {
				check(t)
			}
			if requests.Load() != before && !strings.Contains(tc.name, "report") {
				t.Error("rows were sent before the state was opened")
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, s string) { t.Helper(); must(t, os.WriteFile(p, []byte(s), 0o600)) }

func unchanged(t *testing.T, p, want string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != want {
		t.Errorf("%s now holds %q (%v), was %q", p, b, err, want)
	}
}

// Every string of a JSONL report line is redacted: kind, field and parent
// come from the input or the API whatever they hold (a CPR as a kind, as a
// number, in an object).
func TestEveryStringOfTheJSONLReportIsRedacted(t *testing.T) {
	t.Parallel()
	for _, kind := range []any{"010190-1234", json.Number("101901234"), map[string]any{"010190-1234": "0101901234"}, []any{"x 0101901234"}} {
		var out bytes.Buffer
		jsonReport{&out}.refuse(entry{r: row{"kind": kind, "source_id": "010190 1234"}, line: 3},
			refusal{cause: "parent", field: "0101901234", parent: "client 010190-1234", reason: "not sent: 010190-1234 was refused"})
		if cpr.Find(out.String()) || !strings.Contains(out.String(), cpr.Marker) || !strings.Contains(out.String(), `"line":3`) {
			t.Errorf("kind %v: %s", kind, out.String())
		}
	}
}

// The CSV report is safe to open in a spreadsheet: its header cells are
// redacted, a cell that starts as a formula (= + - @, TAB, CR) gets an
// apostrophe, control characters and bidi overrides are stripped from the
// importer's text (and from the input's cells, but for line breaks); read
// back, the report's cells are what the input held.
func TestTheCSVReportIsSafeInASpreadsheet(t *testing.T) {
	t.Parallel()
	cells := []string{"company", "crm-1", "=HYPERLINK(\"http://evil\",\"x\")", "+45 12 34 56 78", "-5", "@SUM(A1:A9)", "\tfaneblad", "\rvogn", "'=allerede", "'plain", "Two\nlines"}
	header := []string{"kind", "source_id", "name", "phone", "duration_minutes", "title", "description", "email", "party", "client", "matter"}
	in := [][]string{append(header[:len(header):len(header)], "010190-1234"), append(cells, "x")}
	var src bytes.Buffer
	w := csv.NewWriter(&src)
	_ = w.WriteAll(in)
	l, rows, err := readCSV("in.csv", bytes.NewReader(src.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep := &csvReport{w: &out, layout: l, state: "in.csv.state"}
	rep.refuse(rows[0], refusal{cause: "api", status: 422, field: "=name\x1b", reason: "name\x1b[31m is \x07bad\u202e; =1+1\r\n@x"})
	must(t, rep.flush())
	got, err := csv.NewReader(bytes.NewReader(out.Bytes())).ReadAll()
	if err != nil || len(got) != 2 {
		t.Fatalf("%v %q", err, out.String())
	}
	if h := got[0][len(header)]; cpr.Find(h) || h != cpr.Marker {
		t.Errorf("the header cell %q is not redacted", h)
	}
	for i, c := range got[1] {
		if strings.ContainsAny(strings.TrimLeft(c, "'")[:min(1, len(strings.TrimLeft(c, "'")))], "=+-@\t\r") && !strings.HasPrefix(c, "'") {
			t.Errorf("cell %d %q would run as a formula", i, c)
		}
		if strings.ContainsFunc(c, func(r rune) bool {
			return r == 0x1b || r == 0x07 || r == 0x202e || (i >= len(header)+1 && (r == '\r' || r == '\n'))
		}) {
			t.Errorf("cell %d %q holds a control character", i, c)
		}
	}
	if reason := got[1][len(header)+4]; reason != "name[31m is bad; =1+1  @x" {
		t.Errorf("refused_reason %q", reason)
	}
	if field := got[1][len(header)+3]; field != "'=name" {
		t.Errorf("refused_field %q", field)
	}
	for i, want := range []string{"'=HYPERLINK(\"http://evil\",\"x\")", "'+45 12 34 56 78", "'-5", "'@SUM(A1:A9)", "'\tfaneblad", "'\rvogn", "''=allerede", "'plain", "Two\nlines"} {
		if got[1][i+2] != want {
			t.Errorf("cell %d: %q, want %q", i+2, got[1][i+2], want)
		}
	}
	// Fed back, the report reads as the input did.
	_, back, err := readCSV("in.refused.csv", bytes.NewReader(out.Bytes()))
	if err != nil || len(back) != 1 {
		t.Fatalf("read back: %v %v", err, back)
	}
	for i, h := range header {
		want := any(cells[i])
		if h == "duration_minutes" {
			want = int64(-5)
		}
		if back[0].r[h] != want {
			t.Errorf("%s reads back %q, was %q", h, back[0].r[h], want)
		}
	}
}

// A report fed back names its state file (refused_state), and a crafted
// report could name any file of the user's: one that is not a state file
// is refused, neither appended to nor narrowed. A real state torn by a
// kill (a last line cut short) is read, and the next line starts a line
// of its own.
func TestAStateNamedByAReportMustBeAState(t *testing.T) {
	t.Parallel()
	report := func(t *testing.T, dir, state string) string {
		p := filepath.Join(dir, "rettet.csv")
		mustWrite(t, p, "kind,source_id,name,cvr,refused_line,refused_status,refused_field,refused_reason,refused_state\n"+
			"company,crm-2,Nordlys ApS,12345678,3,422,cvr,taken,"+state+"\n")
		return p
	}

	t.Run("a file of the user's", func(t *testing.T) {
		t.Parallel()
		// A server per subtest: they run at once, and the torn state's
		// import sends its row while this one counts that none was sent.
		srv, requests := countingServer(t, "c2")
		dir := t.TempDir()
		rc := filepath.Join(dir, "bashrc")
		must(t, os.WriteFile(rc, []byte("export PATH=$HOME/bin:$PATH\n"), 0o644))
		err := runBounded(t, 10*time.Second, options{file: report(t, dir, "bashrc"), base: srv.URL, key: "k"})
		if err == nil || !strings.Contains(err.Error(), "not a state file") {
			t.Fatalf("err %v, want it refused as not a state file", err)
		}
		unchanged(t, rc, "export PATH=$HOME/bin:$PATH\n")
		if fi, _ := os.Stat(rc); fi.Mode().Perm() != 0o644 {
			t.Errorf("its mode became %v", fi.Mode())
		}
		if requests.Load() != 0 {
			t.Error("rows were sent")
		}
	})

	t.Run("a state torn by a kill", func(t *testing.T) {
		t.Parallel()
		srv, _ := countingServer(t, "c2")
		dir := t.TempDir()
		state := filepath.Join(dir, "kunder.csv.state")
		mustWrite(t, state, `{"row":"company:crm-1","id":"c1"}`+"\n"+`{"row":"person:crm-9","i`)
		if err := runBounded(t, 10*time.Second, options{file: report(t, dir, "kunder.csv.state"), base: srv.URL, key: "k"}); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(state)
		must(t, err)
		defer f.Close()
		done, err := loadState(f)
		if err != nil || done["company:crm-1"] != "c1" || done["company:crm-2"] != "c2" {
			t.Fatalf("the state reads %v, %v", done, err)
		}
	})
}
