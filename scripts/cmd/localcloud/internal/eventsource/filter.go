package eventsource

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Filter is one event filter pattern of an event source mapping, with
// Lambda's semantics: a record passes when every key of the pattern
// matches; an object recurses, an array lists the values (or operators:
// prefix, suffix, anything-but, exists, equals-ignore-case) any one of
// which must match; a record array matches when any element does.
type Filter map[string]any

// ParseFilters parses a mapping's filter patterns.
func ParseFilters(patterns []string) ([]Filter, error) {
	var out []Filter
	for _, p := range patterns {
		f, err := ParseFilter(p)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// ParseFilter parses one filter pattern, refusing operators it does not
// implement.
func ParseFilter(pattern string) (Filter, error) {
	var f Filter
	if err := json.Unmarshal([]byte(pattern), &f); err != nil {
		return nil, fmt.Errorf("filter pattern %s: %w", pattern, err)
	}
	if err := checkPattern(f, ""); err != nil {
		return nil, fmt.Errorf("filter pattern %s: %w; localcloud stops rather than filter otherwise than Lambda would", pattern, err)
	}
	return f, nil
}

// checkPattern refuses what matchObject does not implement: $or, and
// operators other than prefix, suffix, equals-ignore-case, exists and a
// flat anything-but (numeric, cidr, wildcard, anything-but of an
// operator, …), each named with where it is.
func checkPattern(p map[string]any, at string) error {
	for k, v := range p {
		path := strings.TrimPrefix(at+"."+k, ".")
		if strings.HasPrefix(k, "$") {
			return fmt.Errorf("%s: %s is not implemented", path, k)
		}
		switch t := v.(type) {
		case map[string]any:
			if err := checkPattern(t, path); err != nil {
				return err
			}
		case []any:
			for _, alt := range t {
				op, ok := alt.(map[string]any)
				if !ok {
					continue // a value to equal
				}
				if err := checkOperator(op, path); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%s: a pattern's values are arrays, not %v", path, v)
		}
	}
	return nil
}

func checkOperator(op map[string]any, at string) error {
	if len(op) != 1 {
		return fmt.Errorf("%s: an operator object holds one operator, not %d", at, len(op))
	}
	for name, arg := range op {
		switch name {
		case "prefix", "suffix", "equals-ignore-case":
			if _, ok := arg.(string); !ok {
				return fmt.Errorf("%s: %s of %v (only a string is implemented)", at, name, arg)
			}
		case "exists":
			if _, ok := arg.(bool); !ok {
				return fmt.Errorf("%s: exists of %v", at, arg)
			}
		case "anything-but":
			list, ok := arg.([]any)
			if !ok {
				list = []any{arg}
			}
			for _, x := range list {
				if _, nested := x.(map[string]any); nested {
					return fmt.Errorf("%s: anything-but of an operator (%v) is not implemented", at, x)
				}
			}
		default:
			return fmt.Errorf("%s: the %s operator is not implemented", at, name)
		}
	}
	return nil
}

// passes reports whether a record (a decoded JSON object) passes any of
// the filters; no filters pass everything.
func passes(filters []Filter, record map[string]any) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if matchObject(f, record) {
			return true
		}
	}
	return false
}

func matchObject(pattern map[string]any, value map[string]any) bool {
	for k, p := range pattern {
		v, present := value[k]
		switch pt := p.(type) {
		case map[string]any:
			vm, ok := v.(map[string]any)
			if !ok || !matchObject(pt, vm) {
				return false
			}
		case []any:
			if !matchValues(pt, v, present) {
				return false
			}
		default:
			return false // a pattern's leaves are arrays
		}
	}
	return true
}

// matchValues: any of the pattern's alternatives matches the value (or,
// for an array value, any of its elements).
func matchValues(alternatives []any, v any, present bool) bool {
	values := []any{v}
	if arr, ok := v.([]any); ok {
		values = arr
	}
	for _, alt := range alternatives {
		if op, ok := alt.(map[string]any); ok {
			if e, ok := op["exists"].(bool); ok {
				if e == present {
					return true
				}
				continue
			}
			for _, val := range values {
				if present && matchOperator(op, val) {
					return true
				}
			}
			continue
		}
		for _, val := range values {
			if present && equalJSON(alt, val) {
				return true
			}
		}
	}
	return false
}

func matchOperator(op map[string]any, v any) bool {
	s, isString := v.(string)
	for name, arg := range op {
		switch name {
		case "prefix":
			p, _ := arg.(string)
			return isString && strings.HasPrefix(s, p)
		case "suffix":
			p, _ := arg.(string)
			return isString && strings.HasSuffix(s, p)
		case "equals-ignore-case":
			p, _ := arg.(string)
			return isString && strings.EqualFold(s, p)
		case "anything-but":
			list, ok := arg.([]any)
			if !ok {
				list = []any{arg}
			}
			for _, x := range list {
				if equalJSON(x, v) {
					return false
				}
			}
			return true
		}
	}
	return false
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
