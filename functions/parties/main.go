// Command parties is the Lambda of the parties family: the reads of
// clients, people and companies.
package main

import (
	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/store"
)

func main() {
	apiapp.Start(routes.Parties, apiapp.On(func(db *store.DB) httpapi.Handlers { return party.Handlers(party.NewStore(db)) }))
}
