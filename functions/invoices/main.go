// Command invoices is the Lambda of the invoices family.
package main

import (
	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/store"
)

func main() {
	apiapp.Start(routes.Invoices, apiapp.On(func(db *store.DB) httpapi.Handlers { return billing.Handlers(billing.NewStore(db)) }))
}
