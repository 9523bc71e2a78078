// Command dispatcher moves pending outbox events to their queues. The
// table's stream invokes it as events are written, and a schedule invokes
// it every minute to sweep anything a failed invocation left pending.
package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/practice-api/practice-api/shared/app"
)

func main() {
	d := app.LoadWorkers().Dispatcher
	lambda.Start(func(ctx context.Context, _ json.RawMessage) error {
		n, err := d.Sweep(ctx, 0)
		slog.InfoContext(ctx, "outbox sweep", "dispatched", n)
		return err
	})
}
