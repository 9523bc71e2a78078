// Package families composes every endpoint family into one handler for the
// processes that serve them all (the devserver, end-to-end tests). Lambdas
// do not import it: each links only its own family.
package families

import (
	"context"
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

// Option changes how the families are built for one process.
type Option func(*options)

type options struct {
	afterCompanyCreate func(ctx context.Context, org string, c party.Company)
}

// AfterCompanyCreate has the parties family call f after each company it
// creates: in a process with no table stream (the devserver, tests), the
// trigger of the company's enrichment.
func AfterCompanyCreate(f func(ctx context.Context, org string, c party.Company)) Option {
	return func(o *options) { o.afterCompanyCreate = f }
}

// Builds returns how each family's handlers are built on a store, as its
// Lambda's main builds them; webhook operations (manual retries) use d.
func Builds(d *webhook.Deliverer, opts ...Option) map[string]func(*store.DB) httpapi.Handlers {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return map[string]func(*store.DB) httpapi.Handlers{
		routes.Matters: func(db *store.DB) httpapi.Handlers { return matter.Handlers(matter.NewStore(db)) },
		routes.Parties: func(db *store.DB) httpapi.Handlers {
			s := party.NewStore(db)
			s.AfterCompanyCreate = o.afterCompanyCreate
			return party.Handlers(s)
		},
		routes.TimeEntries: func(db *store.DB) httpapi.Handlers { return timeentry.Handlers(timeentry.NewStore(db)) },
		routes.Invoices:    func(db *store.DB) httpapi.Handlers { return billing.Handlers(billing.NewStore(db)) },
		routes.Documents:   func(db *store.DB) httpapi.Handlers { return document.Handlers(document.NewStore(db)) },
		routes.Reports:     func(db *store.DB) httpapi.Handlers { return report.Handlers(report.NewStore(db)) },
		routes.Webhooks:    func(*store.DB) httpapi.Handlers { return webhook.Handlers(d.Store, d) },
		routes.Meta:        func(*store.DB) httpapi.Handlers { return openapi.Handlers() },
	}
}

// All returns the handlers of every family on db.
func All(db *store.DB, d *webhook.Deliverer, opts ...Option) map[string]httpapi.Handlers {
	out := map[string]httpapi.Handlers{}
	for family, build := range Builds(d, opts...) {
		out[family] = build(db)
	}
	return out
}

// Handler serves every family behind the edge configured by cfg.
func Handler(cfg httpapi.Config, db *store.DB, d *webhook.Deliverer, opts ...Option) (http.Handler, error) {
	return httpapi.NewHandler(cfg, All(db, d, opts...))
}
