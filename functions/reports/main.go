// Command reports is the Lambda of the reports family.
package main

import (
	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/report"
	"github.com/practice-api/practice-api/shared/store"
)

func main() {
	apiapp.Start(routes.Reports, apiapp.On(func(db *store.DB) httpapi.Handlers { return report.Handlers(report.NewStore(db)) }))
}
