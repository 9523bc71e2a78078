package httpapi

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/body"
	"github.com/practice-api/practice-api/shared/listing"
)

// QueryValue is the value of query parameter name, "" when absent. A
// parameter sent more than once (status=active&status=closed) is a 422:
// answering one of them silently would filter on a value the caller may
// not have meant.
func QueryValue(q url.Values, name string) (string, error) {
	switch v := q[name]; len(v) {
	case 0:
		return "", nil
	case 1:
		return v[0], nil
	}
	return "", Invalid(name, "%s is sent %d times; send it once (filters combine with AND across parameters, not within one)", name, len(q[name]))
}

// UUIDParam validates an optional uuid filter; "" when absent. Ids are
// returned in canonical lower-case form.
func UUIDParam(q url.Values, name string) (string, error) {
	v, err := QueryValue(q, name)
	if err != nil || v == "" {
		return "", err
	}
	id, err := uuid.Parse(v)
	if err != nil || len(v) != 36 {
		return "", Invalid(name, "%s must be a UUID such as 0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10", name)
	}
	return id.String(), nil
}

// EnumParam validates an optional filter against its allowed values (a
// domain's typed states, or plain strings).
func EnumParam[S ~string](q url.Values, name string, allowed ...S) (S, error) {
	v, err := QueryValue(q, name)
	if err != nil || v == "" || slices.Contains(allowed, S(v)) {
		return S(v), err
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return "", Invalid(name, "%s must be one of %s", name, strings.Join(names, ", "))
}

// SinceParam parses updated_since: a date (midnight UTC) or an ISO 8601
// date-time with Z or an offset. A '+' sent unencoded arrives as a space and
// is refused with a message that says so. The result is in listing.TimeLayout.
func SinceParam(q url.Values, name string) (string, error) {
	v, err := QueryValue(q, name)
	if err != nil || v == "" {
		return "", err
	}
	if strings.Contains(v, " ") {
		return "", Invalid(name, "%s contains a space: a '+' in a query string means a space, so send the offset as %%2B (for example 2024-05-01T10:00:00%%2B02:00) or use Z", name)
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return listing.FormatTime(t), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return listing.FormatTime(t), nil
	}
	return "", Invalid(name, "%s must be a date (2024-05-01) or a date-time with Z or an offset (2024-05-01T10:00:00Z)", name)
}

// PathID returns the canonical form of a path id, or ok=false for a malformed
// one, which callers answer with the same 404 as an absent id.
func PathID(v string) (string, bool) {
	id, err := uuid.Parse(v)
	if err != nil || len(v) != 36 {
		return "", false
	}
	return id.String(), true
}

// DateParam validates an optional YYYY-MM-DD filter.
func DateParam(q url.Values, name string) (string, error) {
	v, err := QueryValue(q, name)
	if err != nil || v == "" {
		return "", err
	}
	if msg := body.DateProblem(name, v); msg != "" {
		return "", Invalid(name, "%s", msg)
	}
	return v, nil
}

// DateRangeParams validates an optional inclusive date range; a range that
// ends before it starts is a 422 on toName.
func DateRangeParams(q url.Values, fromName, toName string) (from, to string, err error) {
	if from, err = DateParam(q, fromName); err != nil {
		return "", "", err
	}
	if to, err = DateParam(q, toName); err != nil {
		return "", "", err
	}
	if from != "" && to != "" && from > to {
		return "", "", Invalid(toName, "%s (%s) is before %s (%s); both are inclusive", toName, to, fromName, from)
	}
	return from, to, nil
}
