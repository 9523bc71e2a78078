package lambda

import (
	"context"
	"encoding/json"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
)

// StreamConsumer is a function as a stream's event source mapping invokes
// it: each batch it sends puts the mapping's IteratorAge (AWS/Lambda, per
// FunctionName and per FunctionName and Resource): the age of the batch's
// last record, from its ApproximateCreationDateTime to the send, as
// Lambda measures it for DynamoDB streams.
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#event-source-mapping-metrics
//
// The age is on the clock the alarms' periods run on
// (LOCALCLOUD_TIME_SCALE, Scale): a record that has waited five seconds
// at scale 60 has waited five of the alarms' minutes, as a stream stalled
// for five of those minutes would be behind. (A function's Duration is not
// scaled: it is the work the function does, in real time.)
//
// With the manual clock, Age measures it on that clock instead (how far
// the clock moved since the record was created).
type StreamConsumer struct {
	*Alias
	Scale float64
	Age   func(created time.Time) time.Duration // nil: the wall clock, Scale times over
}

// Invoke puts the batch's IteratorAge and invokes the function.
func (c StreamConsumer) Invoke(ctx context.Context, payload []byte, wait time.Duration) (Outcome, string, error) {
	var ev struct {
		Records []struct {
			DynamoDB struct {
				ApproximateCreationDateTime float64
			} `json:"dynamodb"`
		}
	}
	if m := c.base.Metrics; m != nil && json.Unmarshal(payload, &ev) == nil && len(ev.Records) > 0 {
		if created := ev.Records[len(ev.Records)-1].DynamoDB.ApproximateCreationDateTime; created > 0 {
			at := time.Unix(0, int64(created*float64(time.Second)))
			ms := float64(time.Since(at).Milliseconds()) * max(c.Scale, 1)
			if c.Age != nil {
				ms = float64(c.Age(at).Milliseconds())
			}
			fn := c.base.Spec.Name
			for _, d := range []map[string]string{{"FunctionName": fn}, {"FunctionName": fn, "Resource": fn + ":" + c.AliasName}} {
				m.Put(cloudwatch.Metric{Namespace: "AWS/Lambda", Name: "IteratorAge", Dims: d}, max(ms, 0))
			}
		}
	}
	return c.Alias.Invoke(ctx, payload, wait)
}
