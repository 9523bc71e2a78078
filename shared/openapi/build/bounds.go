package build

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/httpapi"
)

// Bounds every value of the document carries (OWASP API4:2023: a client
// generator and a validator can refuse what the API would): a string's
// maxLength (or enum, or const), an integer's format, minimum and maximum,
// an array's maxItems. Where a value's form fixes its length, the pass
// below fills the bound in; every other schema says its own, from the
// limit the code enforces on input, or the most the service ever writes
// on output. TestEveryValueIsBounded fails on one that does not.
const (
	maxUUID     = 36
	maxDate     = len("2006-01-02")
	maxDateTime = len("2006-01-02T15:04:05.999999999+07:00")
	maxURI      = 2048
	maxEmail    = 254
	// maxInt64 is the largest integer JSON numbers carry exactly in every
	// client (2^53 − 1): amounts and counts never come near it.
	maxInt64 = 1<<53 - 1
)

// formatLengths are the lengths the formats fix.
var formatLengths = map[string]int{
	"uuid": maxUUID, "date": maxDate, "date-time": maxDateTime, "uri": maxURI, "email": maxEmail,
}

// bound fills in the bounds a schema's format fixes, in every schema under
// v, and an integer's format (int64: every integer the API writes is a
// Go int64).
func bound(v any) {
	switch s := v.(type) {
	case []any:
		for _, x := range s {
			bound(x)
		}
	case []M:
		for _, x := range s {
			bound(x)
		}
	case M:
		types := typesOf(s)
		if slices.Contains(types, "string") && !hasAny(s, "maxLength", "enum", "const") {
			if n, ok := formatLengths[fmt.Sprint(s["format"])]; ok {
				s["maxLength"] = n
			}
		}
		if slices.Contains(types, "integer") {
			// Every integer the API reads or writes is a Go int64, and none
			// is negative unless its schema says so; JSON carries them
			// exactly up to 2^53 − 1 (amounts and counts stay far below).
			if s["format"] == nil {
				s["format"] = "int64"
			}
			if !hasAny(s, "minimum", "exclusiveMinimum") {
				s["minimum"] = 0
			}
			if !hasAny(s, "maximum", "exclusiveMaximum") {
				s["maximum"] = maxInt64
			}
		}
		for k, x := range s {
			if k == "example" || k == "examples" || k == "enum" || k == "const" || k == "default" {
				continue
			}
			bound(x)
		}
	}
}

func typesOf(s M) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []string:
		return t
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

func hasAny(s M, keys ...string) bool {
	for _, k := range keys {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

// unbounded lists the schemas under v, by their place in the document,
// that lack a bound: what TestEveryValueIsBounded reports.
func unbounded(v any, at string) []string {
	var out []string
	switch s := v.(type) {
	case []any:
		for i, x := range s {
			out = append(out, unbounded(x, fmt.Sprintf("%s/%d", at, i))...)
		}
	case M:
		types := typesOf(s)
		if slices.Contains(types, "string") && !hasAny(s, "maxLength", "enum", "const") {
			out = append(out, at+": a string without maxLength")
		}
		if slices.Contains(types, "integer") && (!hasAny(s, "minimum", "exclusiveMinimum") || !hasAny(s, "maximum", "exclusiveMaximum")) {
			out = append(out, at+": an integer without minimum and maximum")
		}
		if slices.Contains(types, "array") && !hasAny(s, "maxItems") {
			out = append(out, at+": an array without maxItems")
		}
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "example" || k == "examples" || k == "enum" || k == "const" || k == "default" {
				continue
			}
			out = append(out, unbounded(s[k], at+"/"+strings.ReplaceAll(k, "/", "~1"))...)
		}
	}
	return out
}

// maxPageFile bounds a file of the reference page (the largest is a
// fraction of it); maxHeader is API Gateway's limit on a request's headers
// (10 KB), which refuses a longer one before the API sees it.
const (
	maxPageFile = 16 << 20
	maxHeader   = 10240
)

// maxScope bounds a scope's name (`webhooks:manage`); maxMediaType a
// media type (RFC 6838).
const (
	maxScope     = 50
	maxMediaType = document.MaxMediaType
)

// perPage is a page's size as its meta says it.
func perPage() M {
	return withDesc(M{"type": "integer", "minimum": 1, "maximum": httpapi.MaxPerPage}, "The page size asked for (default 50).")
}

// pageCount is how many items a page holds.
func pageCount(desc string) M {
	return withDesc(M{"type": "integer", "minimum": 0, "maximum": httpapi.MaxPerPage}, desc)
}
