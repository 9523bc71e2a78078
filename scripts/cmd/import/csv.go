package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// csvLayout is how a CSV file was written: what Excel's "CSV UTF-8" (a
// byte-order mark), a Danish Excel (semicolons), an older one (Windows-1252
// rather than UTF-8) and Windows (CRLF) each change. The report of refused
// rows is written the same way, so it opens in the same spreadsheet.
type csvLayout struct {
	bom, crlf, windows1252 bool
	comma                  rune
	header                 []string
}

var utf8BOM = []byte("\xef\xbb\xbf")

func isCSV(path string) bool { return strings.EqualFold(filepath.Ext(path), ".csv") }

// describe says in one line how the file was read.
func (l *csvLayout) describe() string {
	sep := map[rune]string{',': "commas", ';': "semicolons (as a Danish Excel saves)", '\t': "tabs"}[l.comma]
	enc := "UTF-8"
	switch {
	case l.bom:
		enc = `UTF-8 with a byte-order mark (Excel's "CSV UTF-8")`
	case l.windows1252:
		enc = "Windows-1252, not UTF-8 (an older Excel's CSV), converted"
	}
	return fmt.Sprintf("read as CSV separated by %s, %s, %d columns", sep, enc, len(l.header))
}

// sniff picks the separator of a header line: the most frequent of comma,
// semicolon and tab outside quotes (a comma on a tie or none).
func sniff(line string) rune {
	counts := map[rune]int{}
	quoted := false
	for _, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
		case !quoted && (r == ',' || r == ';' || r == '\t'):
			counts[r]++
		}
	}
	best := ','
	for _, r := range []rune{';', '\t'} {
		if counts[r] > counts[best] {
			best = r
		}
	}
	return best
}

// reportColumn marks the columns a CSV report adds; they are ignored when
// the report is fed back as input.
const reportColumn = "refused_"

// readCSV reads a CSV export with a header row, whatever its separator,
// byte-order mark, line ends or (Windows-1252 or UTF-8) encoding.
func readCSV(path string, in io.Reader) (*csvLayout, []entry, error) {
	data, err := io.ReadAll(in)
	if err != nil {
		return nil, nil, err
	}
	l := &csvLayout{}
	if rest, ok := bytes.CutPrefix(data, utf8BOM); ok {
		l.bom, data = true, rest
	}
	if !utf8.Valid(data) {
		if data, err = charmap.Windows1252.NewDecoder().Bytes(data); err != nil {
			return nil, nil, fmt.Errorf("%s: neither UTF-8 nor Windows-1252: %w", path, err)
		}
		l.windows1252 = true
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	l.crlf = bytes.HasSuffix(first, []byte("\r"))
	l.comma = sniff(string(first))
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comma, cr.FieldsPerRecord = l.comma, -1
	if l.header, err = cr.Read(); err != nil {
		return nil, nil, fmt.Errorf("%s: no header row: %w", path, err)
	}
	for i, h := range l.header {
		l.header[i] = strings.TrimSpace(h)
	}
	if !slices.Contains(l.header, "kind") || !slices.Contains(l.header, "source_id") {
		return nil, nil, fmt.Errorf("%s: the header row has no kind and source_id columns; it %s: %q", path, l.describe(), l.header)
	}
	var rows []entry
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return l, rows, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		lineNo, _ := cr.FieldPos(0)
		r := row{}
		for i, h := range l.header {
			if i >= len(rec) || rec[i] == "" || strings.HasPrefix(h, reportColumn) {
				continue
			}
			if h == "hourly_rate" || h == "duration_minutes" {
				if n, err := strconv.ParseInt(rec[i], 10, 64); err == nil {
					r[h] = n
					continue
				}
			}
			r[h] = rec[i]
		}
		if len(r) == 0 {
			continue // a row of empty cells, as spreadsheets leave at the end
		}
		rows = append(rows, entry{r: r, line: lineNo, cells: rec})
	}
}
