// Command webhooks is the Lambda of the webhooks family: the endpoint
// management API, its delivery log and manual retries.
package main

import (
	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhook"
)

func main() {
	d := app.LoadWorkers().Deliverer
	app.StartLambda(routes.Webhooks, func(*store.DB) httpapi.Handlers { return webhook.Handlers(d.Store, d) })
}
