package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/text/encoding/charmap"

	"github.com/practice-api/practice-api/shared/cpr"
)

// refusal is why a row was not imported.
type refusal struct {
	// cause is "api" (the API refused it: status and field are its),
	// "row" (the importer did, before sending: no kind, an unknown
	// reference) or "parent" (not sent: the row it refers to was refused).
	cause  string
	status int
	field  string
	reason string
	parent string // kind and source_id of the refused row it refers to
}

// reporter writes the refused rows of a run.
type reporter interface {
	refuse(e entry, why refusal)
	flush() error
}

// jsonReport writes one JSON line a refused row (JSONL input): its kind,
// source_id (a CPR-like one redacted: its line names the row), line, and
// why. Every string of it is redacted (redactAll), kind and field
// included: they are copied from the input, whatever it held.
type jsonReport struct{ w io.Writer }

func (j jsonReport) refuse(e entry, why refusal) {
	m := map[string]any{"kind": e.r["kind"], "source_id": e.r["source_id"], "line": e.line, "cause": why.cause, "message": why.reason}
	if why.status != 0 {
		m["status"] = why.status
	}
	if why.field != "" {
		m["field"] = why.field
	}
	if why.parent != "" {
		m["parent"] = why.parent
	}
	line, _ := json.Marshal(redactAll(m))
	fmt.Fprintln(j.w, string(line))
}

func (jsonReport) flush() error { return nil }

// redactAll is v (a decoded JSON value) with a CPR-like number in any
// string, number or object key replaced by cpr.Marker.
func redactAll(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[cpr.Redact(k)] = redactAll(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = redactAll(val)
		}
		return out
	case string:
		return cpr.Redact(t)
	case json.Number:
		if cpr.InNumber(t.String(), false) {
			return cpr.Marker
		}
	}
	return v
}

// formulaStart is what makes a spreadsheet read a cell as a formula (=,
// +, -, @) or lets one in (a TAB or CR first): OWASP's "CSV injection".
const formulaStart = "=+-@\t\r"

// needsQuote reports whether a cell, past any apostrophes it begins with,
// starts as a formula does.
func needsQuote(cell string) bool {
	rest := strings.TrimLeft(cell, "'")
	return rest != "" && strings.ContainsRune(formulaStart, rune(rest[0]))
}

// neutralise makes a cell a spreadsheet shows as text: one that starts
// as a formula does gets an apostrophe before it ('=HYPERLINK(…) shows
// as written, runs nothing). It is undone when a report is read back
// (unneutralise), so a fixed report imports what the first file held:
// +45 12 34 56 78 is written '+45 12 34 56 78 and read +45 12 34 56 78.
// A cell that already starts with apostrophes before a formula character
// gets one more, so the round trip is exact.
func neutralise(cell string) string {
	if needsQuote(cell) {
		return "'" + cell
	}
	return cell
}

// unneutralise undoes neutralise, for a cell of a report read back.
func unneutralise(cell string) string {
	if needsQuote(cell) && strings.HasPrefix(cell, "'") {
		return cell[1:]
	}
	return cell
}

// stripControls drops control characters (C0, DEL, C1) and bidi
// overrides and isolates from a cell of the report: an escape sequence in
// an error message, or a right-to-left override that makes a cell read
// backwards. keepLines keeps TAB, LF and CR, which a quoted cell of the
// input may hold (a description of several lines); the importer's own
// columns keep none (each is one line).
func stripControls(s string, keepLines bool) string {
	return strings.Map(func(r rune) rune {
		switch {
		case keepLines && (r == '\t' || r == '\n' || r == '\r'):
			return r
		case r < 0x20 || r >= 0x7f && r < 0xa0:
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return -1
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			return -1
		}
		return r
	}, s)
}

// cell is a cell of the CSV report as written: CPR-like numbers redacted,
// control characters stripped, a formula neutralised.
func cell(s string, keepLines bool) string {
	return neutralise(stripControls(cpr.Redact(s), keepLines))
}

// csvReport writes refused rows as the input was written (separator,
// byte-order mark, line ends, encoding: UTF-8 or Windows-1252), each with
// its cells as read and five columns more: refused_line, refused_status
// (the API's, empty when the importer refused it), refused_field,
// refused_reason (every problem of the row) and refused_state (the run's
// state file). Fixed in a spreadsheet, it is an input again: the refused_
// columns are ignored as data, and its rows' references are looked up in
// refused_state.
// Every cell, the header's included, is written through cell: a CPR-like
// number redacted, control characters stripped, a cell a spreadsheet
// would run as a formula (= + - @, TAB or CR first) neutralised with an
// apostrophe, which reading a report back undoes.
type csvReport struct {
	w      io.Writer
	layout *csvLayout
	// state is the run's state file, as the report names it in its
	// refused_state column: fed back, the report finds it there.
	state string
	cw    *csv.Writer
	buf   bytes.Buffer // a Windows-1252 report's rows, before encoding
	keep  []int        // the input's columns, not an earlier report's refused_ ones
}

// out is where the CSV writer writes: the file, or, for a Windows-1252
// report, a buffer each row is encoded from (emit).
func (c *csvReport) out() io.Writer {
	if c.layout.windows1252 {
		return &c.buf
	}
	return c.w
}

// emit writes what the CSV writer buffered, in the input's encoding: a
// Windows-1252 input gets a Windows-1252 report (the input's cells came
// from it, so they go back byte for byte; a character of the API's message
// that Windows-1252 lacks becomes '?').
func (c *csvReport) emit() {
	c.cw.Flush()
	if !c.layout.windows1252 {
		return
	}
	var enc []byte
	for _, r := range c.buf.String() {
		b, ok := charmap.Windows1252.EncodeRune(r)
		if !ok {
			b = '?'
		}
		enc = append(enc, b)
	}
	c.buf.Reset()
	_, _ = c.w.Write(enc)
}

func (c *csvReport) refuse(e entry, why refusal) {
	if c.cw == nil {
		if c.layout.bom {
			_, _ = c.w.Write(utf8BOM)
		}
		c.cw = csv.NewWriter(c.out())
		c.cw.Comma, c.cw.UseCRLF = c.layout.comma, c.layout.crlf
		var header []string
		for i, h := range c.layout.header {
			if !strings.HasPrefix(h, reportColumn) {
				c.keep, header = append(c.keep, i), append(header, cell(h, false))
			}
		}
		_ = c.cw.Write(append(header, reportColumn+"line", reportColumn+"status", reportColumn+"field", reportColumn+"reason", reportColumn+"state"))
	}
	rec := make([]string, 0, len(c.keep)+4)
	for _, i := range c.keep {
		v := ""
		if i < len(e.cells) {
			v = e.cells[i]
		}
		rec = append(rec, cell(v, true))
	}
	status := ""
	if why.status != 0 {
		status = strconv.Itoa(why.status)
	}
	line := e.line
	if e.origLine > 0 {
		line = e.origLine // a report fed back: the line in the first file
	}
	_ = c.cw.Write(append(rec, strconv.Itoa(line), status, cell(why.field, false), cell(why.reason, false), cell(c.state, false)))
	c.emit() // a run stopped later keeps what it refused
}

func (c *csvReport) flush() error {
	if c.cw == nil {
		return nil
	}
	c.emit()
	return c.cw.Error()
}
