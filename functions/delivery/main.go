// Command delivery is the webhook delivery worker: it consumes the delivery
// queue (SQS event source), signs and sends each job, records the attempt
// and schedules the next one on failure.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/practice-api/practice-api/shared/app"
)

func main() {
	lambda.Start(app.SQSHandler(app.LoadWorkers().Deliverer.Handle))
}
