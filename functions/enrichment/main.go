// Command enrichment is the company-enrichment worker: it consumes the
// enrichment queue (SQS event source) and reports failed records back as
// batch item failures, so only those are retried.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/practice-api/practice-api/shared/app"
)

func main() {
	lambda.Start(app.SQSHandler(app.LoadWorkers().Enricher.Handle))
}
