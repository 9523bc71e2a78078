package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/jsii-runtime-go"
)

// MetricNamespace holds the service's own metrics (EMF log lines).
const MetricNamespace = "PracticeApi"

// newAlarms raises to one SNS topic: the API's 5xx rate, every function's
// errors and throttles, any message in a dead-letter queue, and any webhook
// endpoint turned off by failures.
func newAlarms(s *Stack, p *Props) {
	topic := awssns.NewTopic(s.Stack, jsii.String("alarms"), &awssns.TopicProps{DisplayName: jsii.String("practice-api " + p.Stage + " alarms")})
	if p.AlarmEmail != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(p.AlarmEmail), nil))
	}
	action := awscloudwatchactions.NewSnsAction(topic)
	alarm := func(id, desc string, metric awscloudwatch.IMetric, threshold float64, periods float64) {
		a := awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(desc),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(periods),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(action)
	}
	five := awscdk.Duration_Minutes(jsii.Number(5))
	rate := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("IF(requests > 20, 100 * errors / requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"errors":   s.API.MetricServerError(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
			"requests": s.API.MetricCount(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
		},
		Period: five, Label: jsii.String("5xx %"),
	})
	alarm("api-5xx-rate", "more than 1% of API requests answered 5xx over 5 minutes (20+ requests)", rate, 1, 1)
	for _, fn := range Functions {
		f := s.Functions[fn.Name]
		alarm(fn.Name+"-errors", fn.Name+": invocation errors", f.MetricErrors(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), 0, 1)
		alarm(fn.Name+"-throttles", fn.Name+": throttled invocations", f.MetricThrottles(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}), 0, 1)
	}
	for name, dlq := range s.DLQs {
		alarm(name+"-dlq-depth", name+": messages in the dead-letter queue (inspect and redrive)",
			dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}), 0, 1)
	}
	alarm("webhook-endpoints-disabled", "a webhook endpoint was disabled after 20 consecutive failed deliveries",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricNamespace), MetricName: jsii.String("WebhookEndpointsDisabled"),
			DimensionsMap: &map[string]*string{"Stage": jsii.String(p.Stage)}, Period: five, Statistic: jsii.String("Sum")}), 0, 1)
}
