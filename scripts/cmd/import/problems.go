package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/practice-api/practice-api/shared/client"
)

// problems is every problem the API found in a row, as one text for the
// report: each "field: message", in the API's order ("; " between them),
// with money said in a spreadsheet's terms (moneyProblem) and, when the
// API listed only the first 50, how many more there were.
func problems(r row, e *client.Error) string {
	if len(e.Errors) == 0 {
		return e.Message
	}
	var parts []string
	for _, fe := range e.Errors {
		msg := fe.Message
		if m := moneyProblem(fe.Field, r[fe.Field]); m != "" {
			msg = m
		}
		if fe.Field != "" && !strings.HasPrefix(msg, fe.Field) {
			msg = fe.Field + ": " + msg
		}
		parts = append(parts, msg)
	}
	out := strings.Join(parts, "; ")
	if e.ErrorsTotal > len(e.Errors) {
		out += fmt.Sprintf("; and %d more", e.ErrorsTotal-len(e.Errors))
	}
	return out
}

// moneyFields are the amounts of a row, in minor units (øre).
var moneyFields = map[string]bool{"hourly_rate": true}

// amount is a number as a person writes an amount of kroner: digits with
// thousands separators (. , space or ') and a decimal comma or point.
var amount = regexp.MustCompile(`^\s*[0-9][0-9., ']*\s*$`)

// moneyProblem says, for an amount the API refused, what to write
// instead: "1.250,00 is not a whole number of øre; write 125000". It is ""
// for a value it cannot read as kroner (the API's message stands).
func moneyProblem(field string, v any) string {
	if !moneyFields[field] || v == nil {
		return ""
	}
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case json.Number:
		text = x.String()
	default:
		return ""
	}
	if !amount.MatchString(text) {
		return ""
	}
	kroner, ok := readKroner(text)
	if !ok {
		return ""
	}
	ore := new(big.Rat).Mul(kroner, big.NewRat(100, 1))
	if !ore.IsInt() {
		return fmt.Sprintf("%s %s is not a whole number of øre (hundredths of a krone): write the amount in øre, a whole number", field, strings.TrimSpace(text))
	}
	return fmt.Sprintf("%s %s is not a whole number of øre; write %s (%s DKK in øre: amounts are whole øre, 1250 is 12.50 DKK)", field, strings.TrimSpace(text), ore.Num(), strings.TrimSpace(text))
}

// grouped is a whole number of kroner, plain or in thousands (1.250,
// 1,250, 12.345.678).
var grouped = regexp.MustCompile(`^([0-9]+|[0-9]{1,3}([.,][0-9]{3})+)$`)

// readKroner reads an amount of kroner as written in Danish (1.250,00) or
// English (1,250.00): the last separator followed by one or two digits at
// the end is the decimal one, the others group thousands.
func readKroner(text string) (*big.Rat, bool) {
	t := strings.NewReplacer(" ", "", "'", "").Replace(strings.TrimSpace(text))
	dec := strings.LastIndexAny(t, ".,")
	intPart, frac := t, ""
	if dec >= 0 && len(t)-dec-1 >= 1 && len(t)-dec-1 <= 2 {
		intPart, frac = t[:dec], t[dec+1:]
	}
	// One character groups thousands, and not the decimal one.
	seps := strings.Map(func(r rune) rune {
		if r == '.' || r == ',' {
			return r
		}
		return -1
	}, intPart)
	if !grouped.MatchString(intPart) || strings.Trim(seps, seps[:min(1, len(seps))]) != "" || dec >= 0 && frac != "" && strings.ContainsRune(seps, rune(t[dec])) {
		return nil, false
	}
	intPart = strings.NewReplacer(".", "", ",", "").Replace(intPart)
	r, ok := new(big.Rat).SetString(intPart + "." + frac + "0")
	return r, ok
}

// relativeTo is target as the report names it: relative to the report's
// folder when it is in that folder or below, absolute otherwise.
func relativeTo(report, target string) string {
	abs, err1 := filepath.Abs(target)
	dir, err2 := filepath.Abs(filepath.Dir(report))
	if err1 != nil || err2 != nil {
		return target
	}
	if rel, err := filepath.Rel(dir, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return abs
}
