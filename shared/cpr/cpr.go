// Package cpr is the one detector of Danish personal identity numbers (CPR),
// which the service never accepts and never returns, in any form (the
// spec's rule 5). Every write body (httpapi.DecodeBody), every argument of
// the admin tool, every seeded text and every error message goes through it;
// data from outside (the company register) is scrubbed with it before it
// is stored; and the test harnesses scan every response body with it.
//
// A CPR is ten digits: a date DDMMYY and a four-digit serial. Before it
// matches, the detector normalises the text: Unicode compatibility forms
// (NFKC: full-width digits and dashes), every Unicode decimal digit to its
// ASCII value, and format characters (zero-width spaces, soft hyphens)
// removed. Between the date and the serial it accepts any separator (-, –,
// —, /, ., spaces), and inside the date and the serial only the same at the
// group boundaries (01.01.90-1234, 01 01 90 1234, 010190 12 34).
package cpr

import (
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Marker replaces a CPR-like value in data from outside.
const Marker = "[removed: CPR number]"

// Find reports whether s holds a CPR number in any spelling (also inside
// percent-encoding, as in a URL).
func Find(s string) bool {
	_, ok := find(s)
	if !ok && strings.Contains(s, "%") {
		if dec, err := url.PathUnescape(s); err == nil && dec != s {
			_, ok = find(dec)
		}
	}
	return ok
}

// Redact returns s with every CPR-like number replaced by Marker, for text
// that must be returned (an error message echoing input).
func Redact(s string) string {
	if !Find(s) {
		return s
	}
	runes, spans := normalise(s)
	var b strings.Builder
	last := 0
	for _, sp := range matches(runes, spans) {
		if sp.from < last { // overlaps the previous match
			last = max(last, sp.to)
			continue
		}
		b.WriteString(s[last:sp.from])
		b.WriteString(Marker)
		last = sp.to
	}
	b.WriteString(s[last:])
	out := b.String()
	if Find(out) { // percent-encoded: too tangled to cut out, drop the lot
		return Marker
	}
	return out
}

// IsKey reports whether a field name names a CPR in any spelling: cpr,
// CPR_nr, cprNumber, "c.p.r.", personnummer, ｃｐｒ.
func IsKey(k string) bool {
	var letters strings.Builder
	for _, r := range strings.ToLower(norm.NFKC.String(k)) {
		if unicode.IsLetter(r) {
			letters.WriteRune(r)
		}
	}
	l := letters.String()
	return strings.Contains(l, "cpr") || strings.Contains(l, "personnummer") || strings.Contains(l, "personnr")
}

// Scrub returns a copy of a decoded JSON value without CPRs: object keys
// naming a CPR are dropped with their values, CPR-like strings (keys too)
// become Marker. removed counts what was taken out.
func Scrub(v any) (clean any, removed int) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			if IsKey(k) || Find(k) {
				removed++
				continue
			}
			c, n := Scrub(val)
			out[k], removed = c, removed+n
		}
		return out, removed
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			c, n := Scrub(val)
			out[i], removed = c, removed+n
		}
		return out, removed
	case string:
		if Find(t) {
			return Marker, 1
		}
	}
	return v, 0
}

// span is a match as byte offsets into the original string.
type span struct{ from, to int }

// normalise maps s to runes to match on, each with the byte span of the
// original text it came from (NFKC may turn one character into several).
func normalise(s string) ([]rune, []span) {
	runes := make([]rune, 0, len(s))
	spans := make([]span, 0, len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if unicode.Is(unicode.Cf, r) {
			continue // zero-width and other format characters
		}
		piece := string(r)
		if r >= 0x80 {
			piece = norm.NFKC.String(piece)
		}
		for _, n := range piece {
			if unicode.Is(unicode.Cf, n) {
				continue
			}
			if n >= 0x80 && unicode.IsDigit(n) {
				n = '0' + digitValue(n)
			}
			runes = append(runes, n)
			spans = append(spans, span{i - size, i})
		}
	}
	return runes, spans
}

// digitValue is the value of a Unicode decimal digit: decimal digits come
// in contiguous runs of ten from zero (a Unicode stability guarantee).
func digitValue(r rune) rune {
	start := r
	for unicode.IsDigit(start - 1) {
		start--
	}
	return (r - start) % 10
}

func isSeparator(r rune) bool {
	return r == '/' || r == '.' || r == '\u2212' || unicode.Is(unicode.Pd, r) || unicode.IsSpace(r)
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func find(s string) (span, bool) {
	runes, spans := normalise(s)
	m := matches(runes, spans)
	if len(m) == 0 {
		return span{}, false
	}
	return m[0], true
}

// group is a maximal run of ASCII digits, in rune indexes.
type group struct{ from, to int }

// matches finds CPRs: runs of digit groups joined by short separator gaps,
// of which some consecutive groups hold exactly ten digits, split only at
// 2, 4, 6 or 8 digits (always at 6 when split at all), whose first six
// digits are a date DDMMYY.
func matches(runes []rune, spans []span) []span {
	runes = maskOpaque(runes)
	var out []span
	var chain []group // groups joined by separator gaps
	flush := func() {
		for i := range chain {
			n, cuts := 0, 0
			bad := false
			for j := i; j < len(chain) && n < 10; j++ {
				if n > 0 {
					switch n {
					case 2, 4, 8:
					case 6:
						cuts |= 1
					default:
						bad = true
					}
				}
				n += chain[j].to - chain[j].from
				if n == 10 && !bad && (j == i || cuts == 1) && isDate(runes, chain[i:j+1]) {
					out = append(out, span{spans[chain[i].from].from, spans[chain[j].to-1].to})
				}
			}
		}
		chain = chain[:0]
	}
	for i := 0; i < len(runes); {
		if !isDigit(runes[i]) {
			i++
			continue
		}
		start := i
		for i < len(runes) && isDigit(runes[i]) {
			i++
		}
		if len(chain) > 0 {
			gap := runes[chain[len(chain)-1].to:start]
			ok := len(gap) <= 3
			for _, r := range gap {
				ok = ok && isSeparator(r)
			}
			if !ok {
				flush()
			}
		}
		chain = append(chain, group{start, i})
	}
	flush()
	return out
}

// maskOpaque hides the digits of identifiers that are not text: UUIDs
// (8-4-4-4-12 hex) and hex strings of 16 or more characters with letters
// and digits (hashes, secrets). By chance about one UUID in 20,000 would
// otherwise read as a CPR ("…01-0190-1234-…").
func maskOpaque(runes []rune) []rune {
	isHex := func(r rune) bool { return isDigit(r) || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F') }
	var out []rune
	for i := 0; i < len(runes); {
		if !isHex(runes[i]) {
			i++
			continue
		}
		j := i
		for j < len(runes) && (isHex(runes[j]) || runes[j] == '-') {
			j++
		}
		for j > i && runes[j-1] == '-' {
			j--
		}
		if opaque(runes[i:j]) {
			if out == nil {
				out = slices.Clone(runes)
			}
			for k := i; k < j; k++ {
				out[k] = 'x'
			}
		}
		i = max(j, i+1)
	}
	if out == nil {
		return runes
	}
	return out
}

func opaque(run []rune) bool {
	if len(run) == 36 && run[8] == '-' && run[13] == '-' && run[18] == '-' && run[23] == '-' &&
		strings.Count(string(run), "-") == 4 {
		return true
	}
	if len(run) < 16 || slices.Contains(run, '-') {
		return false
	}
	letters := 0
	for _, r := range run {
		if !isDigit(r) {
			letters++
		}
	}
	return letters > 0 && letters < len(run)
}

func isDate(runes []rune, groups []group) bool {
	var d []rune
	for _, g := range groups {
		d = append(d, runes[g.from:g.to]...)
	}
	day := (d[0]-'0')*10 + d[1] - '0'
	month := (d[2]-'0')*10 + d[3] - '0'
	return day >= 1 && day <= 31 && month >= 1 && month <= 12
}
