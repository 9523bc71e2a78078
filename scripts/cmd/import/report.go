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
// why.
type jsonReport struct{ w io.Writer }

func (j jsonReport) refuse(e entry, why refusal) {
	src := e.r["source_id"]
	if s, ok := src.(string); ok {
		src = cpr.Redact(s)
	}
	m := map[string]any{"kind": e.r["kind"], "source_id": src, "line": e.line, "cause": why.cause, "message": cpr.Redact(why.reason)}
	if why.status != 0 {
		m["status"] = why.status
	}
	if why.field != "" {
		m["field"] = why.field
	}
	if why.parent != "" {
		m["parent"] = why.parent
	}
	line, _ := json.Marshal(m)
	fmt.Fprintln(j.w, string(line))
}

func (jsonReport) flush() error { return nil }

// csvReport writes refused rows as the input was written (separator,
// byte-order mark, line ends, encoding: UTF-8 or Windows-1252), each with
// its cells as read and five columns more: refused_line, refused_status
// (the API's, empty when the importer refused it), refused_field,
// refused_reason (every problem of the row) and refused_state (the run's
// state file). Fixed in a spreadsheet, it is an input again: the refused_
// columns are ignored as data, and its rows' references are looked up in
// refused_state.
// A CPR-like number in any cell is redacted.
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
				c.keep, header = append(c.keep, i), append(header, h)
			}
		}
		_ = c.cw.Write(append(header, reportColumn+"line", reportColumn+"status", reportColumn+"field", reportColumn+"reason", reportColumn+"state"))
	}
	rec := make([]string, 0, len(c.keep)+4)
	for _, i := range c.keep {
		cell := ""
		if i < len(e.cells) {
			cell = cpr.Redact(e.cells[i])
		}
		rec = append(rec, cell)
	}
	status := ""
	if why.status != 0 {
		status = strconv.Itoa(why.status)
	}
	line := e.line
	if e.origLine > 0 {
		line = e.origLine // a report fed back: the line in the first file
	}
	_ = c.cw.Write(append(rec, strconv.Itoa(line), status, why.field, cpr.Redact(why.reason), c.state))
	c.emit() // a run stopped later keeps what it refused
}

func (c *csvReport) flush() error {
	if c.cw == nil {
		return nil
	}
	c.emit()
	return c.cw.Error()
}
