// Package body reads a write request's JSON body strictly, field by
// typed field, and refuses it whole with every problem at once (an
// apperr.Invalid listing them): unknown, derived and forbidden fields,
// CPR numbers anywhere, keys sent twice. It knows no HTTP; the edge
// answers its errors (httpapi's error table).
package body

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/cpr"
)

// Object decodes a JSON object strictly: every field is read through a typed
// accessor, derived and forbidden fields are refused by name, unknown fields
// are refused, and all problems are reported together in one 422.
type Object struct {
	fields map[string]json.RawMessage
	used   map[string]bool
	errs   []apperr.Problem
}

// Decode parses raw as one JSON object and refuses any CPR in it: a
// field named after a CPR, or a CPR-like number in any string, key or
// number literal, at any depth (the spec's rule 5, for every write body
// alike). A key sent twice in one object is refused too: parsers disagree
// on which one wins, so a check could read one and a store the other.
func Decode(raw []byte) (*Object, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, apperr.Invalidf("body", "the request body must be a JSON object")
	}
	if dec.More() {
		return nil, apperr.Invalidf("body", "the request body must be a single JSON object")
	}
	if path, dup := duplicateKey(raw); dup {
		return nil, apperr.Invalidf(cpr.Redact(path), "%s is sent more than once; send each field once", cpr.Redact(path))
	}
	b := &Object{fields: fields, used: map[string]bool{}}
	b.refuseCPR()
	return b, nil
}

// MaxProblems bounds the problems a 422 lists; ErrorsTotal counts them all.
const MaxProblems = 50

const cprMessage = "CPR numbers are never accepted, in any field or form; remove %s"

// refuseCPR fails every field that names a CPR or holds one anywhere in
// its value; such fields count as read, so they are not also "unknown".
func (b *Object) refuseCPR() {
	for _, name := range b.Names() {
		field := name
		if cpr.Find(name) {
			field = "body"
		}
		switch {
		case cpr.Find(name):
			b.used[name] = true
			b.Fail(field, cprMessage, "the field whose name is a CPR-like number")
			continue
		case cpr.IsKey(name):
			b.used[name] = true
			b.Fail(field, cprMessage, name)
			continue
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(b.fields[name]))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			continue
		}
		if where := cprIn(v, name); where != "" {
			b.used[name] = true
			b.Fail(field, cprMessage, where)
		}
	}
}

// amountFields are the write bodies' amounts in minor units, where a
// nine-digit whole number is an amount, not a CPR that lost its leading
// zero (cpr.InNumber).
var amountFields = map[string]bool{"hourly_rate": true}

// cprIn returns where in v (a decoded JSON value at path) a CPR appears, or "".
func cprIn(v any, path string) string {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			switch {
			case cpr.Find(k):
				return "the CPR-like field name in " + path
			case cpr.IsKey(k):
				return path + "." + k
			}
			if w := cprIn(t[k], path+"."+k); w != "" {
				return w
			}
		}
	case []any:
		for i, val := range t {
			if w := cprIn(val, fmt.Sprintf("%s[%d]", path, i)); w != "" {
				return w
			}
		}
	case string:
		if cpr.Find(t) {
			return "the CPR-like number in " + path
		}
	case json.Number:
		if cpr.InNumber(t.String(), amountFields[path]) {
			return "the CPR-like number in " + path
		}
	}
	return ""
}

// duplicateKey finds the first key that appears twice in one object of a
// well-formed JSON document, and its path ("owner.name").
func duplicateKey(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func(path string) (string, bool)
	walk = func(path string) (string, bool) {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					return "", false
				}
				k, _ := t.(string)
				at := k
				if path != "" {
					at = path + "." + k
				}
				if seen[k] {
					return at, true
				}
				seen[k] = true
				if p, dup := walk(at); dup {
					return p, true
				}
			}
			_, _ = dec.Token() // }
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if p, dup := walk(fmt.Sprintf("%s[%d]", path, i)); dup {
					return p, true
				}
			}
			_, _ = dec.Token() // ]
		}
		return "", false
	}
	return walk("")
}

// Fail records a problem with a field; a problem of a field with an empty
// name is the body's.
func (b *Object) Fail(field, format string, args ...any) {
	if field == "" {
		field = "body"
	}
	b.errs = append(b.errs, apperr.Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (b *Object) take(name string, required bool) (json.RawMessage, bool) {
	b.used[name] = true
	raw, ok := b.fields[name]
	if !ok || string(raw) == "null" {
		if required {
			b.Fail(name, "%s is required", name)
		}
		return nil, false
	}
	return raw, true
}

// Has reports whether a field was sent (and is not null).
func (b *Object) Has(name string) bool {
	raw, ok := b.fields[name]
	return ok && string(raw) != "null"
}

// String reads a string of 1 to maxLen characters, trimmed.
func (b *Object) String(name string, required bool, maxLen int) string {
	raw, ok := b.take(name, required)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		b.Fail(name, "%s must be a string", name)
		return ""
	}
	s = strings.TrimSpace(s)
	blank := s != "" && !strings.ContainsFunc(s, Visible)
	if blank {
		s = "" // only invisible characters: a name nobody can read is no name
	}
	switch {
	case blank && required:
		b.Fail(name, "%s must not be empty: it holds only invisible characters (spaces, zero-width or direction marks, combining marks alone)", name)
	case s == "" && required:
		b.Fail(name, "%s must not be empty", name)
	case utf8.RuneCountInString(s) > maxLen:
		b.Fail(name, "%s is longer than %d characters", name, maxLen)
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' }):
		b.Fail(name, "%s contains control characters", name)
	default:
		return s
	}
	return ""
}

// Int reads an integer in [lo, hi]. Decimals (1250.00), exponents and
// strings are refused, never rounded or converted.
func (b *Object) Int(name string, required bool, lo, hi int64, hint string) (int64, bool) {
	raw, ok := b.take(name, required)
	if !ok {
		return 0, false
	}
	lit := string(raw)
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		switch {
		case strings.HasPrefix(lit, `"`):
			b.Fail(name, "%s must be a JSON number, not a string%s", name, hint)
		case strings.ContainsAny(lit, ".eE"):
			b.Fail(name, "%s must be a whole number; %s is refused, never rounded%s", name, lit, hint)
		default:
			b.Fail(name, "%s must be a whole number%s", name, hint)
		}
		return 0, false
	}
	if n < lo || n > hi {
		b.Fail(name, "%s must be from %d to %d%s", name, lo, hi, hint)
		return 0, false
	}
	return n, true
}

// MoneyHint explains minor units in money errors.
const MoneyHint = " (integer minor units: 1250 means 12.50 DKK)"

// Money reads a non-negative amount in minor units.
func (b *Object) Money(name string, required bool) *int64 {
	v, ok := b.Int(name, required, 0, 1_000_000_000_00, MoneyHint)
	if !ok {
		return nil
	}
	return &v
}

// MaxHourlyRate is the highest hourly rate accepted, in minor units:
// 100,000.00 DKK an hour, ten times what any Danish firm bills. A larger
// number is a mistake (a total, a decimal misplaced) or not a rate at all:
// 101901234 is a CPR number without its leading zero.
const MaxHourlyRate = 10_000_000

// HourlyRate reads an hourly rate in minor units, at most MaxHourlyRate.
func (b *Object) HourlyRate(name string, required bool) *int64 {
	v, ok := b.Int(name, required, 0, MaxHourlyRate, " (minor units: 100000 is 1,000.00 DKK an hour; at most 100,000.00 DKK)")
	if !ok {
		return nil
	}
	return &v
}

// UUID reads a uuid, returned in canonical form.
func (b *Object) UUID(name string, required bool) string {
	raw, ok := b.take(name, required)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil && len(s) == 36 {
		if id, err := uuid.Parse(s); err == nil {
			return id.String()
		}
	}
	b.Fail(name, "%s must be a UUID string", name)
	return ""
}

// Date reads a YYYY-MM-DD calendar date.
func (b *Object) Date(name string, required bool) string {
	raw, ok := b.take(name, required)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		b.Fail(name, "%s must be a date in the form YYYY-MM-DD, as a string", name)
		return ""
	}
	if msg := DateProblem(name, s); msg != "" {
		b.Fail(name, "%s", msg)
		return ""
	}
	return s
}

// Enum reads one of allowed.
func (b *Object) Enum(name string, required bool, allowed ...string) string {
	raw, ok := b.take(name, required)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil && slices.Contains(allowed, s) {
		return s
	}
	b.Fail(name, "%s must be one of %s", name, strings.Join(allowed, ", "))
	return ""
}

// Forbid refuses fields the caller must not send, with the reason.
func (b *Object) Forbid(reason string, names ...string) {
	for _, n := range names {
		b.used[n] = true
		if _, ok := b.fields[n]; ok {
			b.Fail(n, "%s must not be sent: %s", n, reason)
		}
	}
}

// Names returns the names of the fields sent.
func (b *Object) Names() []string {
	out := make([]string, 0, len(b.fields))
	for n := range b.fields {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Raw returns a field's raw JSON.
func (b *Object) Raw(name string) json.RawMessage { return b.fields[name] }

// Err returns the 422 for every problem found, unknown fields included.
func (b *Object) Err() error {
	for _, n := range b.Names() {
		switch {
		case b.used[n]:
		case n == "":
			b.Fail("body", "the body has a field with an empty name; no resource has one")
		default:
			b.Fail(n, "unknown field %s", n)
		}
	}
	if len(b.errs) == 0 {
		return nil
	}
	msg := b.errs[0].Message
	e := &apperr.Error{Kind: apperr.Invalid, Field: b.errs[0].Field, Problems: b.errs}
	switch n := len(b.errs); {
	case n > MaxProblems:
		msg = fmt.Sprintf("%s (and %d more problems; errors lists the first %d)", msg, n-1, MaxProblems)
		e.Problems, e.Total = b.errs[:MaxProblems], n
	case n > 1:
		msg = fmt.Sprintf("%s (and %d more problems, listed in errors)", msg, n-1)
	}
	e.Message = msg
	return e
}

// Bool reads a JSON boolean (not "true", not 1).
func (b *Object) Bool(name string) bool {
	raw, ok := b.take(name, false)
	if !ok {
		return false
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		b.Fail(name, "%s must be true or false", name)
	}
	return v
}

// Strings reads a non-empty array of strings; ok is false when absent or invalid.
func (b *Object) Strings(name string, required bool) ([]string, bool) {
	raw, ok := b.take(name, required)
	if !ok {
		return nil, false
	}
	var v []string
	if err := json.Unmarshal(raw, &v); err != nil || len(v) == 0 {
		b.Fail(name, "%s must be a non-empty array of strings", name)
		return nil, false
	}
	return v, true
}

// Time reads an instant: a date-time with Z or an offset
// (2024-05-01T10:00:00Z, with any fraction of a second) or a date
// (midnight UTC), as updated_since takes it.
func (b *Object) Time(name string, required bool) (time.Time, bool) {
	raw, ok := b.take(name, required)
	if !ok {
		return time.Time{}, false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC(), true
		}
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return t, true
		}
	}
	b.Fail(name, "%s must be a date-time with Z or an offset (2024-05-01T10:00:00Z) or a date (2024-05-01), as a string", name)
	return time.Time{}, false
}

// Invisible reports whether r shows nothing of its own and can hide in a
// text: controls, format characters (zero-width spaces and joiners, the
// soft hyphen, the byte order mark, every bidirectional control), white
// space, variation selectors and the other default-ignorable code points
// (Hangul fillers among them), the Braille blank and private-use code
// points (no font shows them alike). Two texts that differ only in such
// characters look the same; an e-mail address refuses them
// (party.CheckEmail).
func Invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.IsSpace(r) || unicode.In(r, unicode.Cf, unicode.Co, unicode.Zs,
		unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) || r == '\u2800'
}

// Visible reports whether r shows something on its own: not Invisible,
// and not a combining mark, which shows only on a character before it.
func Visible(r rune) bool {
	return !Invisible(r) && !unicode.In(r, unicode.Mn, unicode.Me)
}

var dateShape = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// DateProblem says what is wrong with a YYYY-MM-DD value, or "": the form,
// or (2025-13-01, 2025-02-30) that no calendar has the date.
func DateProblem(name, v string) string {
	if !dateShape.MatchString(v) {
		return name + " must be a date in the form YYYY-MM-DD, such as 2025-03-14"
	}
	if _, err := time.Parse(time.DateOnly, v); err != nil {
		month, _ := strconv.Atoi(v[5:7])
		if month < 1 || month > 12 {
			return fmt.Sprintf("%s is not a calendar date: %s has no month %s (months are 01 to 12)", name, v, v[5:7])
		}
		return fmt.Sprintf("%s is not a calendar date: %s has no day %s", name, v[:7], v[8:])
	}
	return ""
}
