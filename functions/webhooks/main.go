// Command webhooks is the Lambda of the webhooks family: the endpoint
// management API, its delivery log and manual retries (which feed the
// delivery queue).
package main

import (
	"context"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhook"
)

func main() {
	app.StartLambdaE(routes.Webhooks, func(db *store.DB) (httpapi.Handlers, error) {
		w, err := app.WorkersOn(context.Background(), db)
		if err != nil {
			return nil, err
		}
		return webhook.Handlers(w.Deliverer.Store, w.Deliverer), nil
	})
}
