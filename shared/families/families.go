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
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/report"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/webhook"
)

// All returns the handlers of every family on db; webhook retries go
// through d.
func All(db *store.DB, d *webhook.Deliverer) map[string]httpapi.Handlers {
	return map[string]httpapi.Handlers{
		routes.Matters:     matter.Handlers(matter.NewStore(db)),
		routes.Parties:     party.Handlers(party.NewStore(db)),
		routes.TimeEntries: timeentry.Handlers(timeentry.NewStore(db)),
		routes.Invoices:    billing.Handlers(billing.NewStore(db)),
		routes.Documents:   document.Handlers(document.NewStore(db)),
		routes.Reports:     report.Handlers(report.NewStore(db)),
		routes.Webhooks:    webhook.Handlers(d.Store, d),
	}
}

// Handler serves every family behind the edge configured by cfg.
func Handler(cfg httpapi.Config, db *store.DB, d *webhook.Deliverer) (http.Handler, error) {
	return httpapi.NewHandler(cfg, All(db, d))
}
