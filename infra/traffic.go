package main

import (
	"math"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
)

// TrafficModel is routes.Traffic: the peak the stage is built for.
// Each route's gateway throttle is three times its share (at least
// MinRouteRate), so a route may triple before the gateway sheds it, and
// one route's flood cannot take the account's Lambda concurrency from the
// others.
var TrafficModel = routes.Traffic

// Throttles of routes outside the model's shares.
const (
	// MinRouteRate is the least any keyed route is allowed (requests/s).
	MinRouteRate = 20
	// ReportsRate and ReportsBurst hold reports low: one may read a year
	// of entries for several seconds, and ReportsConcurrency caps what
	// they can take of the account's Lambda concurrency.
	ReportsRate, ReportsBurst = 5, 10
	ReportsConcurrency        = 10
)

// ModelPeak is the traffic model's total (requests/s): the stage's
// throttleRate that gives every keyed route exactly RouteThrottle.
const ModelPeak = 1000

// ScaledRouteThrottle is a keyed route's rate and burst at the gateway for
// a stage whose throttleRate is peak and throttleBurst burst: the model's
// throttle (RouteThrottle) times peak/ModelPeak, with a burst of
// burst/peak times its rate (a whole number, at least 1: API Gateway's
// burst limit is an integer). So throttleRate scales every keyed route
// together: 2,000 doubles each, a very low one freezes them all.
func ScaledRouteThrottle(rt routes.Route, peak, burst float64) (r, b float64) {
	model, _ := RouteThrottle(rt)
	r = model * peak / ModelPeak
	return r, math.Max(1, math.Round(r*burst/peak))
}

// RouteThrottle is a keyed route's rate and burst at the gateway under
// the traffic model's peak (throttleRate = ModelPeak).
func RouteThrottle(rt routes.Route) (rate, burst float64) {
	if rt.Family == routes.Reports {
		return ReportsRate, ReportsBurst
	}
	rate = math.Max(MinRouteRate, math.Ceil(3*TrafficModel[rt.Name]/10)*10)
	return rate, 2 * rate
}
