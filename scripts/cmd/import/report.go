package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

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
// byte-order mark, line ends; UTF-8), each with its cells as read and four
// columns more: refused_line, refused_status (the API's, empty when the
// importer refused it), refused_field and refused_reason. Fixed in a
// spreadsheet, it is an input again: the refused_ columns are ignored.
// A CPR-like number in any cell is redacted.
type csvReport struct {
	w      io.Writer
	layout *csvLayout
	cw     *csv.Writer
	keep   []int // the input's columns, not an earlier report's refused_ ones
}

func (c *csvReport) refuse(e entry, why refusal) {
	if c.cw == nil {
		if c.layout.bom {
			_, _ = c.w.Write(utf8BOM)
		}
		c.cw = csv.NewWriter(c.w)
		c.cw.Comma, c.cw.UseCRLF = c.layout.comma, c.layout.crlf
		var header []string
		for i, h := range c.layout.header {
			if !strings.HasPrefix(h, reportColumn) {
				c.keep, header = append(c.keep, i), append(header, h)
			}
		}
		_ = c.cw.Write(append(header, reportColumn+"line", reportColumn+"status", reportColumn+"field", reportColumn+"reason"))
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
	_ = c.cw.Write(append(rec, strconv.Itoa(e.line), status, why.field, cpr.Redact(why.reason)))
	c.cw.Flush() // a run stopped later keeps what it refused
}

func (c *csvReport) flush() error {
	if c.cw == nil {
		return nil
	}
	c.cw.Flush()
	return c.cw.Error()
}
