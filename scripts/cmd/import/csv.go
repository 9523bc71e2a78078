package main

import (
	"bytes"
	"cmp"
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
	// reportState is, when the file is a report of refused rows, the
	// state file of the run that wrote it (its refused_state column).
	reportState string
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

// maxListed bounds the lines an encoding error names.
const maxListed = 10

// decode reads the file's bytes as the one encoding they are in, and
// never guesses line by line: UTF-8 when every line is (a byte-order mark
// says so too), or Windows-1252 (an older Excel's CSV) when no line is
// UTF-8 beyond ASCII. A file that mixes them (a UTF-8 file with lines an
// older tool saved in Windows-1252), and a Windows-1252 file with a byte
// that is no character there, is refused, naming its lines: decoding it
// whole either way would store characters nobody wrote (Bjørn read as
// BjÃ¸rn).
func decode(path string, l *csvLayout, data []byte) ([]byte, error) {
	if utf8.Valid(data) {
		return data, nil
	}
	var latin, multi, undefined []int // Windows-1252 lines, UTF-8 lines beyond ASCII, lines with a byte no character
	for i, line := range bytes.Split(data, []byte("\n")) {
		switch {
		case !utf8.Valid(line):
			latin = append(latin, i+1)
			if slices.ContainsFunc(line, func(b byte) bool { return b == 0x81 || b == 0x8d || b == 0x8f || b == 0x90 || b == 0x9d }) {
				undefined = append(undefined, i+1)
			}
		case !isASCII(line):
			multi = append(multi, i+1)
		}
	}
	switch {
	case l.bom:
		return nil, fmt.Errorf("%s begins with a UTF-8 byte-order mark (Excel's \"CSV UTF-8\"), but %s %s %s not UTF-8 (Windows-1252, as an older tool saves: %s): "+
			"nothing was imported. Save the file again as CSV UTF-8 from one spreadsheet, or retype those lines' letters (æ, ø, å)",
			path, plural(len(latin), "line", "lines"), listLines(latin), plural(len(latin), "is", "are"), sample(data, latin[0]))
	case len(multi) > 0:
		return nil, fmt.Errorf("%s mixes encodings: %s %s UTF-8 and %s %s Windows-1252 (%s): nothing was imported, as any one reading of it would garble the other lines. "+
			"Save the file again as CSV UTF-8 from one spreadsheet, or retype the letters of one group (æ, ø, å)",
			path, plural(len(multi), "line", "lines"), listLines(multi), plural(len(latin), "line", "lines"), listLines(latin), sample(data, latin[0]))
	case len(undefined) > 0:
		return nil, fmt.Errorf("%s is neither UTF-8 nor Windows-1252: %s %s %s a byte that is no character in Windows-1252 (0x81, 0x8D, 0x8F, 0x90 or 0x9D); nothing was imported. Save it again as CSV UTF-8",
			path, plural(len(undefined), "line", "lines"), listLines(undefined), plural(len(undefined), "holds", "hold"))
	}
	out, err := charmap.Windows1252.NewDecoder().Bytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: neither UTF-8 nor Windows-1252: %w", path, err)
	}
	l.windows1252 = true
	return out, nil
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// listLines names lines as people count them: 3, 7 and 12 (and 4 more).
func listLines(ns []int) string {
	var parts []string
	for _, n := range ns[:min(len(ns), maxListed)] {
		parts = append(parts, strconv.Itoa(n))
	}
	out := strings.Join(parts, ", ")
	if len(parts) > 1 {
		out = strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	if len(ns) > maxListed {
		out += fmt.Sprintf(" (and %d more)", len(ns)-maxListed)
	}
	return out
}

// sample shows a Windows-1252 line as Windows-1252 reads it, cut short:
// what the user recognises.
func sample(data []byte, line int) string {
	raw := bytes.Split(data, []byte("\n"))[line-1]
	text, _ := charmap.Windows1252.NewDecoder().Bytes(bytes.TrimRight(raw, "\r"))
	r := []rune(string(text))
	if len(r) > 60 {
		r = append(r[:60], '…')
	}
	return fmt.Sprintf("line %d reads %q as Windows-1252", line, string(r))
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
	if data, err = decode(path, l, data); err != nil {
		return nil, nil, err
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
	// A report of refused rows fed back: its cells were neutralised for a
	// spreadsheet ('=…, '+45…); read them as the first file held them.
	report := slices.ContainsFunc(l.header, func(h string) bool { return strings.HasPrefix(h, reportColumn) })
	if report {
		for i, h := range l.header {
			l.header[i] = unneutralise(h)
		}
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
		if report {
			for i := range rec {
				rec[i] = unneutralise(rec[i])
			}
		}
		r := row{}
		e := entry{line: lineNo, cells: rec}
		for i, h := range l.header {
			if i >= len(rec) || rec[i] == "" {
				continue
			}
			switch h {
			case reportColumn + "state":
				l.reportState = cmp.Or(l.reportState, rec[i])
			case reportColumn + "line":
				// A report's row keeps the line it had in the file the
				// report was made from: a row named by its line (a
				// CPR-like source_id) keeps its name.
				e.origLine, _ = strconv.Atoi(rec[i])
			}
			if strings.HasPrefix(h, reportColumn) {
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
		e.r = r
		rows = append(rows, e)
	}
}
