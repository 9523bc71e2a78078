// Command dispatcher moves pending outbox events to their queues. The
// table's stream invokes it with the new events themselves, and a schedule
// invokes it every minute to sweep anything an invocation left pending;
// events are claimed before they are sent, so the two send each once.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/practice-api/practice-api/shared/app"
)

func main() {
	lambda.Start(app.DispatcherHandler(app.LoadWorkers().Dispatcher))
}
