package docs

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/workflow"
)

// TestWorkflowTablesAreTheCodes: each state machine's table in
// workflows.md lists, for every state, exactly the moves the code's
// workflow.Transitions allows.
func TestWorkflowTablesAreTheCodes(t *testing.T) {
	raw, err := os.ReadFile("workflows.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]map[string][]string{}
	section := ""
	for line := range strings.SplitSeq(string(raw), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			sections[section] = map[string][]string{}
			continue
		}
		cells := strings.Split(line, "|")
		if section == "" || len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue // not a row of a state: a header, a rule, (import)
		}
		for _, from := range codes(cells[1]) {
			sections[section][from] = codes(cells[2])
		}
	}
	check(t, sections["Matter"], matter.Transitions)
	check(t, sections["Time entry"], timeentry.Transitions)
	check(t, sections["Invoice"], billing.Transitions)
}

var code = regexp.MustCompile("`([a-z_]+)`")

// codes are the states a cell names in backticks.
func codes(cell string) []string {
	var out []string
	for _, m := range code.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

func check[S ~string](t *testing.T, doc map[string][]string, code workflow.Transitions[S]) {
	t.Helper()
	if len(doc) != len(code) {
		t.Errorf("workflows.md has %d states, the code %d: %v", len(doc), len(code), doc)
	}
	for from, next := range code {
		want := workflow.Strings(next)
		got, ok := doc[string(from)]
		slices.Sort(want)
		slices.Sort(got)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("from %s workflows.md says %v, the code %v", from, got, want)
		}
	}
}
