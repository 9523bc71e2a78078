// Package families composes every endpoint family into one handler for the
// processes that serve them all (the devserver, end-to-end tests). Lambdas
// do not import it: each links only its own family.
package families

import (
	"net/http"

	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/openapi"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/report"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/webhook"
)

// Builds returns how each family's handlers are built on a store, as its
// Lambda's main builds them; webhook operations (manual retries) use d.
func Builds(d *webhook.Deliverer) map[string]func(*store.DB) httpapi.Handlers {
	return map[string]func(*store.DB) httpapi.Handlers{
		routes.Matters:     func(db *store.DB) httpapi.Handlers { return matter.Handlers(matter.NewStore(db)) },
		routes.Parties:     func(db *store.DB) httpapi.Handlers { return party.Handlers(party.NewStore(db)) },
		routes.TimeEntries: func(db *store.DB) httpapi.Handlers { return timeentry.Handlers(timeentry.NewStore(db)) },
		routes.Invoices:    func(db *store.DB) httpapi.Handlers { return billing.Handlers(billing.NewStore(db)) },
		routes.Documents:   func(db *store.DB) httpapi.Handlers { return document.Handlers(document.NewStore(db)) },
		routes.Reports:     func(db *store.DB) httpapi.Handlers { return report.Handlers(report.NewStore(db)) },
		routes.Webhooks:    func(*store.DB) httpapi.Handlers { return webhook.Handlers(d.Store, d) },
		routes.Meta:        func(*store.DB) httpapi.Handlers { return openapi.Handlers() },
	}
}

// All returns the handlers of every family on db.
func All(db *store.DB, d *webhook.Deliverer) map[string]httpapi.Handlers {
	out := map[string]httpapi.Handlers{}
	for family, build := range Builds(d) {
		out[family] = build(db)
	}
	return out
}

// Handler serves every family behind the edge configured by cfg.
func Handler(cfg httpapi.Config, db *store.DB, d *webhook.Deliverer) (http.Handler, error) {
	return httpapi.NewHandler(cfg, All(db, d))
}
