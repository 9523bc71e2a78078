package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"

	"github.com/practice-api/practice-api/shared/client"
)

// TestMixedEncodingsAreRefused: a file is read in the one encoding all its
// lines are in, or refused naming the lines that are not: never decoded
// whole the wrong way (BjÃ¸rn).
func TestMixedEncodingsAreRefused(t *testing.T) {
	t.Parallel()
	cp := func(s string) string {
		b, err := charmap.Windows1252.NewEncoder().String(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	header := "kind;source_id;name;email\r\n"
	utf := "person;p-1;Bjørn Ødegård;b@example.dk\r\n"
	latin := cp("person;p-2;Mette Kjærsgaard;m@example.dk\r\n")
	for _, c := range []struct {
		name, data string
		says       []string // "" for a file that reads
		rows       []string // the names read
	}{
		{"UTF-8 with a BOM", "\ufeff" + header + utf, nil, []string{"Bjørn Ødegård"}},
		{"Windows-1252", header + latin + latin, nil, []string{"Mette Kjærsgaard", "Mette Kjærsgaard"}},
		{"a BOM and a Windows-1252 line", "\ufeff" + header + utf + latin, []string{"byte-order mark", "line 3 is not UTF-8", `"person;p-2;Mette Kjærsgaard;m@example.dk"`}, nil},
		{"UTF-8 and Windows-1252 lines", header + latin + utf + latin, []string{"mixes encodings", "line 3 UTF-8", "lines 2 and 4 Windows-1252"}, nil},
		{"a byte no character", header + "person;p-3;X\x81Y;x@example.dk\r\n", []string{"line 2 holds a byte that is no character"}, nil},
	} {
		l, rows, err := readCSV("x.csv", strings.NewReader(c.data))
		if c.says != nil {
			for _, want := range c.says {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v, want it to say %q", c.name, err, want)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var names []string
		for _, r := range rows {
			names = append(names, r.r.str("name"))
		}
		if strings.Join(names, "|") != strings.Join(c.rows, "|") {
			t.Errorf("%s: read %q (%s)", c.name, names, l.describe())
		}
	}
}

// TestReportsRoundTripByteForByte: a report is written in its input's
// encoding and layout, so every refused row's cells come back byte for
// byte as they were (æøå in every column), in Windows-1252 and in UTF-8
// with a byte-order mark, and read back they are the same rows.
func TestReportsRoundTripByteForByte(t *testing.T) {
	t.Parallel()
	records := [][]string{
		{"kind", "source_id", "name", "email", "title"},
		{"person", "æøå-1", "Bjørn Ødegård Åse", "bjørn@æøå.dk", "Kort opfølgning – Østerbro"},
		{"person", "ÆØÅ-2", "Mette Kjærsgaard; \"Søs\"", "mette@example.dk", "Æblegård, Ærø"},
	}
	var utf bytes.Buffer
	w := csv.NewWriter(&utf)
	w.Comma, w.UseCRLF = ';', true
	_ = w.WriteAll(records)
	latin, err := charmap.Windows1252.NewEncoder().Bytes(utf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for name, input := range map[string][]byte{"Windows-1252": latin, "UTF-8 with a BOM": append([]byte("\ufeff"), utf.Bytes()...)} {
		l, rows, err := readCSV("in.csv", bytes.NewReader(input))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rep := &csvReport{w: &out, layout: l, state: "in.csv.state"}
		for _, r := range rows {
			rep.refuse(r, refusal{cause: "api", status: 422, field: "email", reason: "email: must be a plain address → like ø@example.dk"})
		}
		if err := rep.flush(); err != nil {
			t.Fatal(err)
		}
		// Each line of the report is the input's line, byte for byte, and
		// the refused_ cells after it.
		in := bytes.Split(bytes.TrimSuffix(input, []byte("\r\n")), []byte("\r\n"))
		got := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\r\n")), []byte("\r\n"))
		if len(got) != len(in) {
			t.Fatalf("%s: %d report lines for %d input lines:\n%s", name, len(got), len(in), out.Bytes())
		}
		for i := range in {
			if !bytes.HasPrefix(got[i], append(bytes.Clone(in[i]), ';')) {
				t.Errorf("%s: line %d is not the input's:\n got %q\nwant %q…", name, i+1, got[i], in[i])
			}
		}
		if name == "Windows-1252" && (!bytes.Contains(out.Bytes(), []byte("? like \xf8@example.dk")) || bytes.Contains(out.Bytes(), []byte("ø"))) {
			t.Errorf("the Windows-1252 report's own text is not Windows-1252: %q", out.Bytes())
		}
		path := filepath.Join(t.TempDir(), "in.refused.csv")
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		l2, back, err := load(path)
		if err != nil || len(back) != len(rows) || l2.reportState != "in.csv.state" || l2.windows1252 != l.windows1252 || l2.bom != l.bom {
			t.Fatalf("%s: read back %v %+v %+v", name, err, l2, back)
		}
		for i := range back {
			if back[i].origLine != rows[i].line {
				t.Errorf("%s: row %d keeps line %d, want %d", name, i, back[i].origLine, rows[i].line)
			}
			for k, v := range rows[i].r {
				if back[i].r[k] != v {
					t.Errorf("%s: row %d %s reads back %q, was %q", name, i, k, back[i].r[k], v)
				}
			}
		}
	}
}

// TestMoneySaysWhatToWrite: an amount refused by the API is said in a
// spreadsheet's terms, with the whole number of øre to write.
func TestMoneySaysWhatToWrite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    any
		want string
	}{
		{"1.250,00", "hourly_rate 1.250,00 is not a whole number of øre; write 125000"},
		{"1,250.00", "write 125000"},
		{"1 250,5", "write 125050"},
		{"1250", "write 125000"},
		{"12.345", "write 1234500"}, // three digits after a point group thousands
		{json.Number("1250.00"), "hourly_rate 1250.00 is not a whole number of øre; write 125000"},
		{json.Number("12.5"), "write 1250"},
		{"12,345,6", ""},
		{"abc", ""},
		{"1.250,005", ""},
	} {
		got := moneyProblem("hourly_rate", c.v)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q", c.v, got, c.want)
		}
	}
	if moneyProblem("title", "1.250,00") != "" {
		t.Error("a title is not money")
	}
	e := &client.Error{Status: 422, Message: "hourly_rate must be a JSON number (and 2 more problems, listed in errors)", Field: "hourly_rate",
		Errors: []client.FieldError{{Field: "hourly_rate", Message: "hourly_rate must be a JSON number, not a string"}, {Field: "status", Message: "status must be one of dormant, active"},
			{Field: "title", Message: "is too long"}}, ErrorsTotal: 4}
	got := problems(row{"hourly_rate": "1.250,00"}, e)
	for _, want := range []string{"hourly_rate 1.250,00 is not a whole number of øre; write 125000", "; status must be one of dormant, active", "; title: is too long", "; and 1 more"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems: %q lacks %q", got, want)
		}
	}
}

// TestAReportFindsItsRunsState: a report fed back without --state looks
// its references up in the state of the run that wrote it (its
// refused_state column, or the older report's name), or says where that
// state should be; any other file keeps its own.
func TestAReportFindsItsRunsState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "kunder.csv.state")
	if err := os.WriteFile(state, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "rettet.csv")
	if got, err := stateFor(report, &csvLayout{reportState: "kunder.csv.state"}); err != nil || got != state {
		t.Errorf("a report with refused_state: %q %v", got, err)
	}
	var usage *usageError
	if _, err := stateFor(report, &csvLayout{reportState: "gone.state"}); !errors.As(err, &usage) || !strings.Contains(err.Error(), "--state") {
		t.Errorf("a report whose state is gone: %v", err)
	}
	if got, _ := stateFor(filepath.Join(dir, "kunder.refused.csv"), &csvLayout{}); got != state {
		t.Errorf("an older report: %q", got)
	}
	if got, _ := stateFor(filepath.Join(dir, "other.csv"), &csvLayout{}); got != filepath.Join(dir, "other.csv.state") {
		t.Errorf("an input: %q", got)
	}
	if relativeTo(filepath.Join(dir, "kunder.refused.csv"), state) != "kunder.csv.state" || relativeTo(filepath.Join(dir, "sub", "r.csv"), state) != state {
		t.Error("relativeTo")
	}
}
