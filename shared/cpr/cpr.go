// Package cpr is the one detector of Danish personal identity numbers (CPR),
// which the service never accepts and never returns, in any form (the
// spec's rule 5). Every write body (body.Decode), every argument of
// the admin tool, every seeded text and every error message goes through it;
// data from outside (the company register) is scrubbed with it before it
// is stored; and the test harnesses scan every response body with it.
//
// A CPR is ten digits: a date DDMMYY and a four-digit serial. The detector
// reads a text the way a person would, not the way it is spelled:
//
//  1. Layers. The text as sent, and again after each round of decoding
//     HTML entities (&#48;) and percent-encoding (%30, %2530), to a fixpoint.
//     A malformed escape is left as it is, never a reason to skip the check.
//  2. Skeleton. Every code point that shows a digit becomes that digit:
//     decimal digits of any script, NFKC compatibility forms (full-width,
//     superscript, circled ①) and the lookalikes NFKC leaves alone (⓿, ❶,
//     ⓵, Ethiopic digits; digits_table.go). Invisible code points (format
//     characters, combining marks, variation selectors, Hangul fillers and
//     the other default-ignorables) vanish. Letters stay. Everything else
//     (spaces, punctuation, symbols, of any kind and any number) separates.
//  3. Runs. Digit groups joined only by separators form a run; a letter ends
//     it. Ten digits from consecutive groups of a run, whatever the groups'
//     sizes, whose first six are a calendar date DDMMYY, are a CPR; ten
//     digits inside a longer group are not (a 12-digit invoice number).
//  4. Shape. Dates and times written as such are not serials: inside a
//     stretch of written dates (15.03.24, 15.03.2024, 2024-03-15) and times
//     of day (10.30, 10:30:15, 05:18:03.396217) joined by spaces, dashes or
//     commas, ten digits are not a CPR when the stretch holds more than ten
//     digits in all ("15.03.24 10.30-11.15", "01.01.24-31.12.24",
//     "2026-11-22 05:18:03.396217"). A CPR has exactly ten digits, so no
//     spelling of one, however it is broken up, has this shape.
package cpr

import (
	"encoding/json"
	"html"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Marker replaces a CPR-like value in data from outside.
const Marker = "[removed: CPR number]"

// maxLayers bounds the decoding rounds (each one shrinks the text).
const maxLayers = 8

// Find reports whether s holds a CPR number in any spelling, as written or
// once its HTML entities and percent-encoding are decoded.
func Find(s string) bool {
	found := false
	eachLayer(s, func(layer string) bool {
		found = len(matches(normalise(layer))) > 0
		return !found
	})
	return found
}

// eachLayer calls f with s and with each decoding of it until decoding
// changes nothing (or maxLayers), while f returns true.
func eachLayer(s string, f func(string) bool) {
	if !f(s) {
		return
	}
	for range maxLayers {
		d := decodeOnce(s)
		if d == s || !f(d) {
			return
		}
		s = d
	}
}

// decodeOnce decodes one layer of HTML entities and of percent-encoding.
func decodeOnce(s string) string {
	if strings.IndexByte(s, '&') >= 0 {
		s = html.UnescapeString(s)
	}
	if strings.IndexByte(s, '%') >= 0 {
		s = percentDecode(s)
	}
	return s
}

// percentDecode decodes every well-formed %XX and keeps anything else as
// it is: one malformed escape must not hide the rest of the text.
func percentDecode(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(rune(s[i+1])) && isHex(rune(s[i+2])) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// InKey reports whether an Idempotency-Key holds a CPR. A key is stored
// only as an HMAC and never returned or logged, and clients make keys at
// random, so a key that is an opaque id is not read: a UUID in its
// canonical form (8-4-4-4-12 hex digits), or 16 or more hex digits with a
// hex letter. One random 16-hex-digit key in 2,000 holds ten digits that
// are a date (c0906420218f408f), and a random UUID, now and then, has no
// letter at all (23089630-4635-4923-9160-572810106994, found by
// TestNoRandomIdempotencyKeyIsRefused). Any other key is read as text.
func InKey(k string) bool {
	if isUUID(k) {
		return false
	}
	if len(k) >= 16 && strings.ContainsAny(strings.ToLower(k), "abcdef") &&
		!strings.ContainsFunc(k, func(r rune) bool { return !isHex(r) && r != '-' }) {
		return false
	}
	return Find(k)
}

// isUUID reports whether k is a UUID in its canonical textual form.
func isUUID(k string) bool {
	if len(k) != 36 {
		return false
	}
	for i, r := range k {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !isHex(r) {
				return false
			}
		}
	}
	return true
}

// InNumber reports whether a JSON number literal holds a CPR: as written,
// as its value written out in full (1.501901234e9 is 1501901234), or, for
// a whole number of nine digits, with the leading zero a number drops
// (101901234 is 0101901234) unless the field is an amount in minor units.
func InNumber(lit string, amount bool) bool {
	if Find(lit) {
		return true
	}
	digits, ok := wholeDigits(lit)
	switch {
	case !ok:
		return false
	case len(digits) == 10:
		return Find(digits)
	case len(digits) == 9 && !amount:
		return Find("0" + digits)
	}
	return false
}

// wholeDigits is the decimal digits of a JSON number that is a whole
// number of at most 12 digits, sign dropped (1.5e3 → 1500).
func wholeDigits(lit string) (string, bool) {
	lit = strings.TrimPrefix(lit, "-")
	mant, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil || e < -30 || e > 30 {
			return "", false
		}
		mant, exp = lit[:i], e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := whole + frac
	exp -= len(frac)
	for exp < 0 && strings.HasSuffix(digits, "0") {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	if exp < 0 {
		return "", false
	}
	digits += strings.Repeat("0", exp)
	digits = strings.TrimLeft(digits, "0")
	if digits == "" || len(digits) > 12 || strings.ContainsFunc(digits, func(r rune) bool { return !isDigit(r) }) {
		return "", false
	}
	return digits, true
}

// Redact returns s with every CPR-like number replaced by Marker, for text
// that must be returned (an error message echoing input).
func Redact(s string) string {
	if !Find(s) {
		return s
	}
	sk := normalise(s)
	var b strings.Builder
	last := 0
	for _, sp := range matches(sk) {
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
	if Find(out) { // only an encoded layer holds it: too tangled to cut out, drop the lot
		return Marker
	}
	return out
}

// IsKey reports whether a field name names a CPR in any spelling: cpr,
// CPR_nr, cprNumber, "c.p.r.", personnummer, ｃｐｒ, c&#112;r.
func IsKey(k string) bool {
	found := false
	eachLayer(k, func(layer string) bool {
		var letters strings.Builder
		for _, r := range strings.ToLower(norm.NFKC.String(layer)) {
			if unicode.IsLetter(r) && !ignorable(r) {
				letters.WriteRune(r)
			}
		}
		l := letters.String()
		found = strings.Contains(l, "cpr") || strings.Contains(l, "personnummer") || strings.Contains(l, "personnr")
		return !found
	})
	return found
}

// Scrub returns a copy of a decoded JSON value without CPRs: object keys
// naming a CPR are dropped with their values, CPR-like strings (keys too)
// and numbers (InNumber; decode with UseNumber to read them as written)
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
	case json.Number: // data decoded with UseNumber: as written
		if InNumber(t.String(), false) {
			return Marker, 1
		}
	case float64: // decoded without UseNumber: the value
		if InNumber(strconv.FormatFloat(t, 'f', -1, 64), false) {
			return Marker, 1
		}
	}
	return v, 0
}

// span is a match as byte offsets into the original string.
type span struct{ from, to int }

// skeleton is a text as the detector reads it: digits as ASCII, letters,
// separators; each rune with the byte span of the original it came from.
type skeleton struct {
	runes []rune
	spans []span
}

func (k *skeleton) add(r rune, sp span) {
	k.runes = append(k.runes, r)
	k.spans = append(k.spans, sp)
}

// normalise maps s to its skeleton (step 2 of the package comment).
func normalise(s string) skeleton {
	if !mayHoldTenDigits(s) {
		return skeleton{}
	}
	k := skeleton{runes: make([]rune, 0, len(s)), spans: make([]span, 0, len(s))}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		sp := span{i, i + size}
		i += size
		if r < utf8.RuneSelf {
			k.add(r, sp)
			continue
		}
		if d, ok := digitsOf(r); ok {
			for _, c := range d {
				k.add(c, sp)
			}
			continue
		}
		if ignorable(r) {
			continue
		}
		if dashLike(r) { // a letter that reads as a dash: 010190ー1234
			k.add('-', sp)
			continue
		}
		for _, n := range norm.NFKC.String(string(r)) {
			if d, ok := digitsOf(n); ok {
				for _, c := range d {
					k.add(c, sp)
				}
			} else if !ignorable(n) {
				k.add(n, sp)
			}
		}
	}
	return k
}

// mayHoldTenDigits is a cheap first look at one layer: plain ASCII with
// fewer than ten digits holds no CPR. (Its decoding may: &#xcef; is a
// Kannada nine. The decoded layer gets its own look.)
func mayHoldTenDigits(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return true
		}
		if c >= '0' && c <= '9' {
			n++
		}
	}
	return n >= 10
}

// digitsOf is the digits a code point shows, if it shows any.
func digitsOf(r rune) (string, bool) {
	switch {
	case r >= '0' && r <= '9':
		return string(r), true
	case r < utf8.RuneSelf:
		return "", false
	case unicode.Is(unicode.Nd, r):
		return string('0' + digitValue(r)), true
	}
	d, ok := lookalike[r]
	return d, ok
}

// digitValue is the value of a Unicode decimal digit: decimal digits come
// in contiguous runs of ten from zero (a Unicode stability guarantee).
func digitValue(r rune) rune {
	start := r
	for unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return (r - start) % 10
}

// ignorable reports code points that show nothing: format characters,
// combining marks, variation selectors and the other default-ignorable
// code points (Hangul fillers, which Unicode classes as letters, among them).
func ignorable(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// dashLike reports letters that show a dash or a stroke, and so separate
// digits as a dash does: modifier letters (the katakana prolonged sound
// mark ー, its halfwidth ｰ, ˗ …) and the CJK and Hangul strokes 一, ㅡ, ᅳ.
func dashLike(r rune) bool {
	return unicode.Is(unicode.Lm, r) || r == '\u4e00' || r == '\u3161' || r == '\u1173'
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func isHex(r rune) bool { return isDigit(r) || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F') }

// group is a maximal run of digits, in rune indexes of the skeleton, with
// the separators between it and the group before it in its run.
type group struct {
	from, to int
	gap      []rune
}

func (g group) len() int { return g.to - g.from }

// matches finds CPRs in a skeleton (steps 3 and 4), as spans of the
// original text.
func matches(k skeleton) []span {
	if len(k.runes) < 10 {
		return nil
	}
	runes := maskOpaque(k.runes)
	var out []span
	var run []group
	flush := func() {
		out = append(out, runMatches(runes, k.spans, run)...)
		run = run[:0]
	}
	gapFrom := 0
	for i := 0; i < len(runes); {
		r := runes[i]
		switch {
		case isDigit(r):
			start := i
			for i < len(runes) && isDigit(runes[i]) {
				i++
			}
			var gap []rune
			if len(run) > 0 {
				gap = runes[gapFrom:start]
			}
			run = append(run, group{from: start, to: i, gap: gap})
			gapFrom = i
		case unicode.IsLetter(r):
			flush()
			i++
		default:
			i++
		}
	}
	flush()
	return out
}

// runMatches finds the CPRs of one run of digit groups.
func runMatches(runes []rune, spans []span, run []group) []span {
	total := 0
	for _, g := range run {
		total += g.len()
	}
	if total < 10 {
		return nil
	}
	shaped := writtenDatesAndTimes(runes, run)
	var out []span
	for i := range run {
		n, dateEnd := 0, -1
		for j := i; j < len(run) && n < 12; j++ {
			n += run[j].len()
			if n == 8 {
				dateEnd = j
			}
			if shaped[i] >= 0 && shaped[i] == shaped[j] {
				continue
			}
			switch {
			case n == 10 && isDate(digitsOfGroups(runes, run[i:j+1])):
				out = append(out, span{spans[run[i].from].from, spans[run[j].to-1].to})
			case n == 12 && dateEnd >= 0 && fullYearCPR(digitsOfGroups(runes, run[i:j+1])):
				// DDMMYYYY-SSSS: the date with its century, then the
				// serial in groups of its own (01.01.1990-1234).
				out = append(out, span{spans[run[i].from].from, spans[run[j].to-1].to})
			}
		}
	}
	return out
}

// fullYearCPR reports whether twelve digits are DDMMYYYY SSSS with a year
// of the 1800s, 1900s or 2000s and a calendar date.
func fullYearCPR(d []rune) bool {
	if c := string(d[4:6]); c != "18" && c != "19" && c != "20" {
		return false
	}
	return isDate(append(slices.Clone(d[:4]), d[6:8]...))
}

func digitsOfGroups(runes []rune, gs []group) []rune {
	var d []rune
	for _, g := range gs {
		d = append(d, runes[g.from:g.to]...)
	}
	return d
}

// writtenDatesAndTimes marks, for each group of a run, the stretch of
// written dates and times it belongs to, or -1: stretches of dates
// (15.03.24, 15.03.2024, 2024-03-15) and times of day (10.30, 10:30:15,
// 05:18:03.396217), joined by spaces, dashes, commas or a plus (an offset),
// that hold more than ten digits in all. Ten digits within one stretch are
// not a CPR.
func writtenDatesAndTimes(runes []rune, run []group) []int {
	mark := make([]int, len(run))
	for i := range mark {
		mark[i] = -1
	}
	rs := runScan{runes: runes, run: run}
	stretch := 0
	for k := 0; k < len(run); {
		from, units, digits := k, 0, 0
		var sizes []int
		for k < len(run) {
			n := rs.unitAt(k)
			if n == 0 || (units > 0 && !joins(run[k])) {
				break
			}
			for _, g := range run[k : k+n] {
				digits += g.len()
			}
			sizes = append(sizes, n)
			units, k = units+1, k+n
		}
		// A date and one time of day, set apart by a space or a comma
		// (15.03.24 10.30, 15/03/24 10:30, 15.03.24, 10.30) holds ten
		// digits; it is how a meeting is written, not a CPR. With a dash
		// only between them (15.03.24-10.30) it stays a CPR's shape.
		dateAndTime := digits == 10 && slices.Equal(sizes, []int{3, 2}) &&
			slices.ContainsFunc(run[from+3].gap, func(r rune) bool { return unicode.IsSpace(r) || r == ',' })
		if digits > 10 || dateAndTime {
			for i := from; i < k; i++ {
				mark[i] = stretch
			}
			stretch++
		}
		if units == 0 {
			k++
		}
	}
	return mark
}

// runScan reads a run of digit groups for writtenDatesAndTimes.
type runScan struct {
	runes []rune
	run   []group
}

// num is the value of g's digits.
func (rs runScan) num(g group) int {
	n := 0
	for _, r := range rs.runes[g.from:g.to] {
		n = n*10 + int(r-'0')
	}
	return n
}

// sep reports whether g is set apart from the group before it by one of
// allowed alone.
func sep(g group, allowed string) bool {
	return len(g.gap) == 1 && strings.ContainsRune(allowed, g.gap[0])
}

// dateAt reports whether a written date starts at group k: 15.03.24,
// 15.03.2024, 2024-03-15.
func (rs runScan) dateAt(k int) bool {
	run, num := rs.run, rs.num
	if k+2 >= len(run) {
		return false
	}
	a, m, b := run[k], run[k+1], run[k+2]
	if !sep(m, "./-") || !sep(b, string(m.gap)) || m.len() > 2 || num(m) < 1 || num(m) > 12 {
		return false
	}
	switch {
	case a.len() <= 2 && (b.len() == 2 || b.len() == 4): // 15.03.24, 15.03.2024
		return num(a) >= 1 && num(a) <= 31
	case a.len() == 4 && b.len() <= 2: // 2024-03-15
		return num(b) >= 1 && num(b) <= 31
	}
	return false
}

// timeAt is how many groups a time of day at group k holds, or 0.
func (rs runScan) timeAt(k int) int {
	run, num := rs.run, rs.num
	if k+1 >= len(run) {
		return 0
	}
	h, m := run[k], run[k+1]
	if h.len() > 2 || m.len() != 2 || !sep(m, ".:") || num(h) > 23 || num(m) > 59 {
		return 0
	}
	n := 2
	if k+2 < len(run) && run[k+2].len() == 2 && sep(run[k+2], string(m.gap)) && num(run[k+2]) <= 60 {
		n = 3 // seconds
		if k+3 < len(run) && run[k+3].len() <= 9 && sep(run[k+3], ".,") {
			n = 4 // a fraction of a second
		}
	}
	return n
}

// unitAt is how many groups a date (3) or a time of day at group k holds,
// or 0.
func (rs runScan) unitAt(k int) int {
	if rs.dateAt(k) {
		return 3
	}
	return rs.timeAt(k)
}

// joins reports whether g's gap may join it to a date or time before it:
// at most three spaces, commas, pluses or dashes.
func joins(g group) bool {
	return len(g.gap) <= 3 && !slices.ContainsFunc(g.gap, func(r rune) bool {
		return !unicode.IsSpace(r) && r != ',' && r != '+' && !unicode.Is(unicode.Pd, r)
	})
}

// maskOpaque hides the digits of identifiers that are not text: UUIDs
// (8-4-4-4-12 hex) with a hex letter, and hex strings of 32 or more
// characters with letters and digits (digests, secrets), except ten
// digits that start such a token. By chance about one UUID in 20,000, and
// one 64-character secret in 400, would otherwise read as a CPR. What
// stays hidden: a CPR inside a random-looking identifier, which no reader
// can tell from chance.
func maskOpaque(runes []rune) []rune {
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
		run := runes[i:j]
		switch {
		case uuidShaped(run) && !hasHexLetter(run):
			// An all-digit UUID (one in millions of random ones) reads as
			// digits, its first ten as one group: 01019012-3400-… is
			// 0101901234 first.
			if out == nil {
				out = slices.Clone(runes)
			}
			out[i+8], out[i+9], out[i+10] = run[9], run[10], '-'
		case opaque(run):
			if out == nil {
				out = slices.Clone(runes)
			}
			from, lead := i, 0
			for lead < len(run) && isDigit(run[lead]) {
				lead++
			}
			if lead == 10 && !uuidShaped(run) && (i == 0 || (runes[i-1] != '_' && !unicode.IsLetter(runes[i-1]))) {
				// A token that starts with exactly ten digits: they are
				// read, so a CPR followed by hex (0101901234abcdef…) is
				// found. A random digest starts so, with a date, about
				// once in 8,000; inside an identifier (whsec_…) it is not
				// read.
				from = i + 10
			}
			for k := from; k < j; k++ {
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
	if uuidShaped(run) {
		return hasHexLetter(run) // an all-digit UUID is read as digits (uuidDigits)
	}
	if len(run) < 32 || slices.Contains(run, '-') {
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

func uuidShaped(run []rune) bool {
	return len(run) == 36 && run[8] == '-' && run[13] == '-' && run[18] == '-' && run[23] == '-' &&
		strings.Count(string(run), "-") == 4
}

func hasHexLetter(run []rune) bool {
	return slices.ContainsFunc(run, func(r rune) bool { return r != '-' && !isDigit(r) })
}

// isDate reports whether the first six digits are a calendar date DDMMYY
// (29 February in every year divisible by four: the century is not known).
func isDate(d []rune) bool {
	two := func(i int) int { return int(d[i]-'0')*10 + int(d[i+1]-'0') }
	day, month, year := two(0), two(2), two(4)
	if month < 1 || month > 12 || day < 1 {
		return false
	}
	days := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month]
	if month == 2 && year%4 != 0 {
		days = 28
	}
	return day <= days
}
