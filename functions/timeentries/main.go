// Command timeentries is the Lambda of the time entries family: GET and
// POST /time-entries.
package main

import (
	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
)

func main() {
	apiapp.Start(routes.TimeEntries, apiapp.On(func(db *store.DB) httpapi.Handlers { return timeentry.Handlers(timeentry.NewStore(db)) }))
}
