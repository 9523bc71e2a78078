package eventsource

import (
	"strings"
	"testing"
)

func TestFilterPatterns(t *testing.T) {
	rec := map[string]any{"eventName": "INSERT", "dynamodb": map[string]any{"NewImage": map[string]any{
		"kind": map[string]any{"S": "event"}, "type": map[string]any{"S": "matter.created"}}}}
	for pattern, want := range map[string]bool{
		`{"dynamodb":{"NewImage":{"kind":{"S":["event"]}}},"eventName":["INSERT"]}`:                 true,
		`{"dynamodb":{"NewImage":{"kind":{"S":["event"]}}},"eventName":["MODIFY"]}`:                 false,
		`{"dynamodb":{"NewImage":{"type":{"S":[{"anything-but":["matter.created"]}]}}}}`:            false,
		`{"dynamodb":{"NewImage":{"type":{"S":[{"prefix":"matter."}]}}}}`:                           true,
		`{"dynamodb":{"NewImage":{"gone":{"S":[{"exists":false}]}}}}`:                               false, // the object itself is absent
		`{"dynamodb":{"NewImage":{"kind":[{"exists":true}]}}}`:                                      true,
		`{"eventName":["INSERT","MODIFY"],"dynamodb":{"NewImage":{"type":{"S":["invoice.paid"]}}}}`: false,
	} {
		f, err := ParseFilter(pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := passes([]Filter{f}, rec); got != want {
			t.Errorf("%s: %v, want %v", pattern, got, want)
		}
	}
}

// TestUnimplementedFilterOperatorsStopLocalcloud: an operator localcloud
// does not implement is refused by name at start, never matched some
// other way.
func TestUnimplementedFilterOperatorsStopLocalcloud(t *testing.T) {
	for pattern, names := range map[string]string{
		`{"size":[{"numeric":[">",0]}]}`:                              "numeric",
		`{"ip":[{"cidr":"10.0.0.0/24"}]}`:                             "cidr",
		`{"name":[{"wildcard":"matter.*"}]}`:                          "wildcard",
		`{"$or":[{"a":["x"]},{"b":["y"]}]}`:                           "$or",
		`{"type":[{"anything-but":{"prefix":"matter."}}]}`:            "anything-but of an operator",
		`{"type":[{"anything-but":[{"prefix":"matter."}]}]}`:          "anything-but of an operator",
		`{"dynamodb":{"NewImage":{"n":{"N":[{"numeric":["=",1]}]}}}}`: "dynamodb.NewImage.n.N: the numeric operator",
		`{"type":"matter.created"}`:                                   "values are arrays",
		`{"type":[{"prefix":"a","suffix":"b"}]}`:                      "one operator",
	} {
		if _, err := ParseFilter(pattern); err == nil || !strings.Contains(err.Error(), names) {
			t.Errorf("%s: %v, want an error naming %q", pattern, err, names)
		}
	}
}
