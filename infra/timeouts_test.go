package main

import (
	"testing"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
)

// TestAPIFunctionTimeoutsAreTheDevserversDeadlines: each API function's
// timeout is routes.Timeouts' for its family, the deadline the devserver
// gives the family's requests (lambdahttp.RequestDeadlines), so a store that
// stops answering gets the same 503 at the same time on AWS and locally.
func TestAPIFunctionTimeoutsAreTheDevserversDeadlines(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Functions {
		if f.Family == "" {
			continue
		}
		seen[f.Family] = true
		if want, ok := routes.Timeouts[f.Family]; !ok || float64(want) != f.TimeoutS {
			t.Errorf("%s: timeout %v s, routes.Timeouts says %d s", f.Name, f.TimeoutS, want)
		}
	}
	for family := range routes.Timeouts {
		if !seen[family] {
			t.Errorf("routes.Timeouts names %s, which no function serves", family)
		}
	}
}
