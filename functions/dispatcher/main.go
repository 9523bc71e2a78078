// Command dispatcher moves pending outbox events to their queues. The
// table's stream invokes it with the new events themselves, and a schedule
// invokes it every minute to sweep anything an invocation left pending;
// events are claimed before they are sent, so the two send each once. The
// sweep also queues again the webhook delivery attempts whose worker
// stopped mid-send and whose job is gone.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/practice-api/practice-api/shared/app"
)

func main() {
	w := app.LoadWorkers()
	lambda.Start(app.DispatcherHandler(w.Dispatcher, w.Deliverer, w.Metrics))
}
