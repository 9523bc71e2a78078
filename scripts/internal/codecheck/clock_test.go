package codecheck

import (
	"go/ast"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// clockScope are the directories (and those under them) whose production
// code reads the time and waits through a clock.Clock (shared/clock), not
// the time package (issue #39 item 3): every part where time passes
// (leases, sweeps, schedules, visibility timeouts, key and secret expiry)
// takes the Clock it is given, so a test moves time instead of sleeping.
var clockScope = []string{"shared", "scripts/cmd/localcloud/internal/apigw"}

// clockExempt are directories of clockScope that are not checked at all,
// each with why.
var clockExempt = map[string]string{
	"shared/clock": "the clock itself: Real is the time package",
}

// wallClock are the functions of the time package that read the wall
// clock or wait on it.
var wallClock = []string{"Now", "Since", "Until", "Sleep", "After", "Tick", "NewTicker", "NewTimer", "AfterFunc"}

// wallClockAllowed are the production functions (package-path.Func or
// package-path.Type.Method; a package path alone for all of it) of
// clockScope that may still use the wall clock, each with why. A use that
// is the service's own time (a lease, an expiry, a schedule) does not
// belong here: it takes a Clock.
var wallClockAllowed = map[string]string{
	// The access log's duration_ms: how long the request took, real time.
	"shared/httpapi.Config.edge": "the access log's duration_ms: the real time a request took",
	"shared/apitest":             "the API tests' harness: Env.Now is the tests' clock (SetNow), its faults wait real time for the engine",
	// Not the service's time: what a person or another system reads.
	"shared/metrics":                         "EMF's _aws.Timestamp is when a line was written, on the wall clock CloudWatch files it under",
	"shared/smoke.RunWith":                   "a smoke check's latency against a deployed stage: real time",
	"shared/app.invokeTransport.RoundTrip":   "a synthetic API Gateway event's requestTimeEpoch, as API Gateway stamps it",
	"shared/queue.Run":                       "the devserver worker loop's failure summary every 10 s: log pacing, not the queue's time",
	"shared/seed.Run":                        "seed data's default time when the caller gives none (an operator's seed run)",
	"shared/seed.DemoLine":                   "the demo organisation's data is dated now (make run)",
	"shared/client":                          "the Go client for integrators: its retries wait on the caller's wall clock (Client.Sleep replaces it in tests)",
	"shared/store/ddblocal":                  "starts and probes the DynamoDB Local process: real time",
	"shared/store/storetest.(package level)": "a test run's table-name prefix",
	"scripts/cmd/localcloud/internal/apigw.Gateway.ServeHTTP": "Latency and IntegrationLatency measure real time taken (the metrics' own clock stamps them: Metrics.Now)",
}

// TestTimePassesOnAClock fails when production code under clockScope
// uses the wall clock (time.Now, time.Sleep, time.After, timers and
// tickers; also as a value, such as `now := time.Now`) outside the
// functions wallClockAllowed names, and on an entry there that no longer
// uses it.
func TestTimePassesOnAClock(t *testing.T) {
	uses := map[string][]string{} // allow-list key -> "file:line time.X"
	var found []string
	checked := 0
	for _, f := range productionFiles(t) {
		if !inClockScope(f.dir) {
			continue
		}
		checked++
		timeName := ""
		for _, im := range f.ast.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "time" {
				timeName = "time"
				if im.Name != nil {
					timeName = im.Name.Name
				}
			}
		}
		if timeName == "" {
			continue
		}
		for _, d := range f.ast.Decls {
			where := f.dir + ".(package level)"
			if fn, ok := d.(*ast.FuncDecl); ok {
				where = funcName(f.dir, fn)
			}
			ast.Inspect(d, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != timeName || !slices.Contains(wallClock, sel.Sel.Name) {
					return true
				}
				use := f.dir + "/" + f.name + " " + where + ": time." + sel.Sel.Name
				key := allowedBy(where, f.dir)
				if key == "" {
					found = append(found, use)
				} else {
					uses[key] = append(uses[key], use)
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d files under %v: the scan is broken", checked, clockScope)
	}
	slices.Sort(found)
	for _, u := range found {
		t.Errorf("%s: take the time from the part's clock.Clock (shared/clock), or say in wallClockAllowed why the wall clock is right here", u)
	}
	for key, why := range wallClockAllowed {
		if len(uses[key]) == 0 {
			t.Errorf("%s is in wallClockAllowed (%s) but uses no wall clock: take it off the list", key, why)
		}
	}
}

// inClockScope reports whether dir is checked.
func inClockScope(dir string) bool {
	for ex := range clockExempt {
		if dir == ex || strings.HasPrefix(dir, ex+"/") {
			return false
		}
	}
	for _, s := range clockScope {
		if dir == s || strings.HasPrefix(dir, s+"/") {
			return true
		}
	}
	return false
}

// allowedBy is the wallClockAllowed key that covers a use in the function
// where (of the package at dir), or "".
func allowedBy(where, dir string) string {
	if _, ok := wallClockAllowed[where]; ok {
		return where
	}
	if _, ok := wallClockAllowed[dir]; ok {
		return dir
	}
	return ""
}
