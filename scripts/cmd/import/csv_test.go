package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"
)

// TestSpreadsheetsReadAsSaved: the same three rows, saved the ways
// spreadsheets save CSV, read the same; the layout is recognised.
func TestSpreadsheetsReadAsSaved(t *testing.T) {
	t.Parallel()
	rows := [][]string{{"kind", "source_id", "name", "cvr"}, {"company", "crm-1", "Ærø Søfart ApS", "12345678"}, {"company", "crm-2", "Hansen; Holm & Co", "87654321"}}
	write := func(sep string, crlf bool) string {
		var b strings.Builder
		for _, r := range rows {
			cells := make([]string, len(r))
			for i, c := range r {
				if strings.ContainsAny(c, sep) {
					c = `"` + c + `"`
				}
				cells[i] = c
			}
			b.WriteString(strings.Join(cells, sep))
			if crlf {
				b.WriteString("\r")
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	danish := write(";", true)
	cp1252, err := charmap.Windows1252.NewEncoder().String(danish)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, data string
		comma      rune
		bom, crlf  bool
		says       string
	}{
		{"comma, UTF-8", write(",", false), ',', false, false, "commas, UTF-8,"},
		{`Danish Excel "CSV UTF-8"`, "\ufeff" + danish, ';', true, true, "semicolons (as a Danish Excel saves), UTF-8 with a byte-order mark"},
		{"Danish Excel, semicolons without BOM", danish, ';', false, true, "semicolons"},
		{"an older Excel, Windows-1252", cp1252, ';', false, true, "Windows-1252"},
		{"tabs", write("\t", false), '\t', false, false, "tabs"},
		{"trailing empty rows", write(";", true) + ";;;\r\n;;;\r\n", ';', false, true, "semicolons"},
	} {
		l, got, err := readCSV("x.csv", strings.NewReader(c.data))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if l.comma != c.comma || l.bom != c.bom || l.crlf != c.crlf || !strings.Contains(l.describe(), c.says) {
			t.Errorf("%s: read as %+v: %s", c.name, l, l.describe())
		}
		if len(got) != 2 || got[0].r.str("name") != "Ærø Søfart ApS" || got[1].r.str("name") != "Hansen; Holm & Co" || got[1].line != 3 || got[0].r.str("kind") != "company" {
			t.Errorf("%s: rows %+v", c.name, got)
		}
	}
	if _, _, err := readCSV("x.csv", strings.NewReader("kind|source_id\ncompany|1\n")); err == nil || !strings.Contains(err.Error(), "no kind and source_id columns") {
		t.Errorf("an unknown separator: %v", err)
	}
}

// TestTheCSVReportIsAnInputAgain: refused rows go to a CSV in the input's
// layout with the refused_ columns, and that report reads back as the
// rows it holds (its refused_ columns ignored), CPR numbers redacted.
func TestTheCSVReportIsAnInputAgain(t *testing.T) {
	t.Parallel()
	in := "\ufeffkind;source_id;name;email\r\nperson;p-1;Anne Æbelø;anne@example.dk\r\nperson;p-2;Bo 010190-1234;bo@example\r\n"
	l, rows, err := readCSV("in.csv", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep := &csvReport{w: &out, layout: l}
	rep.refuse(rows[1], refusal{cause: "api", status: 422, field: "email", reason: "email must be a plain address such as anne@example.dk"})
	rep.refuse(rows[0], refusal{cause: "parent", field: "party", reason: "not sent: its company x was refused (y)"})
	if err := rep.flush(); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"\ufeffkind;source_id;name;email;refused_line;refused_status;refused_field;refused_reason;refused_state\r\n",
		"person;p-2;Bo ", ";3;422;email;email must be a plain address", "person;p-1;Anne Æbelø;anne@example.dk;2;;party;not sent: its company"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "010190-1234") {
		t.Fatalf("the report holds a CPR:\n%s", text)
	}
	path := filepath.Join(t.TempDir(), "in.refused.csv")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, back, err := load(path)
	if err != nil || len(back) != 2 {
		t.Fatalf("the report read back: %v %+v", err, back)
	}
	for _, e := range back {
		for k := range e.r {
			if strings.HasPrefix(k, reportColumn) {
				t.Fatalf("the report's %s column reached a row: %v", k, e.r)
			}
		}
	}
	if back[1].r.str("name") != "Anne Æbelø" {
		t.Fatalf("rows read back %+v", back)
	}
}

func TestETAHonoursTheRateLimit(t *testing.T) {
	t.Parallel()
	p := &progress{total: 1300, n: 100}
	if got := p.eta(50); got != 24e9 { // 1,200 rows at 50 a second
		t.Errorf("no limit known: %v", got)
	}
	p.limit = 120 // 2 a second
	if got := p.eta(50); got != 600e9 {
		t.Errorf("limit 120/min: %v, want 10m", got)
	}
	if got := p.eta(1); got != 1200e9 { // slower than the limit: the rate so far
		t.Errorf("slower than the limit: %v", got)
	}
	if defaultReport("a/export.CSV") != "a/export.refused.csv" || defaultReport("x.jsonl") != "x.jsonl.refused" {
		t.Error("default report names")
	}
}
