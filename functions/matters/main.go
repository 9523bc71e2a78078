// Command matters is the Lambda of the matters family: GET /matters and
// GET /matters/{matter}.
package main

import (
	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/store"
)

func main() {
	apiapp.Start(routes.Matters, apiapp.On(func(db *store.DB) httpapi.Handlers { return matter.Handlers(matter.NewStore(db)) }))
}
