package main

import (
	"math"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
)

// TrafficModel is the peak the stage is built for, in requests per
// second per route: 1,000 a second across 10,000 organisations, 60 %
// single reads, 20 % lists, 20 % creates (docs/cost-model.md, where it is
// priced). Each route's gateway throttle is three times its share (at
// least MinRouteRate), so a route may triple before the gateway sheds it,
// and one route's flood cannot take the account's Lambda concurrency from
// the others. Routes not named here are rare (webhook management).
var TrafficModel = map[string]float64{
	// single reads: 600/s
	"matters.get": 180, "clients.get": 90, "people.get": 60, "companies.get": 60,
	"invoices.get": 120, "documents.get": 80, "webhooks.get": 5, "reports.get": 5,
	// lists: 200/s
	"matters.list": 50, "clients.list": 20, "people.list": 15, "companies.list": 15, "time_entries.list": 50,
	"invoices.list": 25, "documents.list": 20, "webhooks.list": 3, "webhooks.deliveries": 2,
	// creates: 200/s
	"companies.create": 15, "people.create": 15, "clients.create": 30, "matters.create": 40, "time_entries.create": 100,
}

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

// RouteThrottle is a keyed route's rate and burst at the gateway.
func RouteThrottle(rt routes.Route) (rate, burst float64) {
	if rt.Family == routes.Reports {
		return ReportsRate, ReportsBurst
	}
	rate = math.Max(MinRouteRate, math.Ceil(3*TrafficModel[rt.Name]/10)*10)
	return rate, 2 * rate
}
