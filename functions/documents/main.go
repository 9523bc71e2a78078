// Command documents is the Lambda of the documents family.
package main

import (
	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/store"
)

func main() {
	apiapp.Start(routes.Documents, apiapp.On(func(db *store.DB) httpapi.Handlers { return document.Handlers(document.NewStore(db)) }))
}
