// Command webhooks is the Lambda of the webhooks family: the endpoint
// management API, its delivery log, manual retries and replays (which feed
// the delivery queue). It wires webhook delivery alone (webhookwire), no
// other worker.
package main

import (
	"context"

	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhook"
	"github.com/practice-api/practice-api/shared/webhookwire"
)

func main() {
	apiapp.Start(routes.Webhooks, func(ctx context.Context, db *store.DB, cfg config.Config) (httpapi.Handlers, error) {
		d, err := webhookwire.DelivererOn(ctx, db, cfg)
		if err != nil {
			return nil, err
		}
		return webhook.Handlers(d.Store, d), nil
	})
}
