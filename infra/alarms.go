package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/metrics"
)

// MetricNamespace holds the service's own metrics (EMF log lines).
const MetricNamespace = metrics.Namespace

// Severities of the alarms, in the runbook's words.
const (
	critical = "critical" // integrators are failing now: act at once, day or night
	high     = "high"     // work is piling up or failing unseen: act within the hour
	warning  = "warning"  // one integrator's problem, or headroom running out: next working day
)

// runbook is an alarm's section of docs/operations.md and its severity.
type runbook struct{ anchor, severity string }

// describe ends an alarm's description with its severity and runbook.
func (r runbook) describe(desc string) string {
	return fmt.Sprintf("%s. Severity: %s. Runbook: docs/operations.md#%s", strings.TrimSuffix(desc, "."), r.severity, r.anchor)
}

// newAlarms raises to one SNS topic, and says OK there too when a
// condition clears: the API's 5xx rate and p99 latency, every function's
// errors, throttles and duration near its timeout, the queues' oldest
// message and dead letters, DynamoDB throttles and system errors, the
// stream's iterator age, outbox dispatch failures and disabled webhook
// endpoints. A one-off blip does not page: most alarms want M of N
// periods. It also draws the stage's dashboard.
func newAlarms(s *Stack, p *Props) {
	topic := awssns.NewTopic(s.Stack, jsii.String("alarms"), &awssns.TopicProps{DisplayName: jsii.String("practice-api " + p.Stage + " alarms"),
		EnforceSSL: jsii.Bool(true)})
	allowCloudWatch(s, topic)
	// Critical alarms page: they go to a second topic too, for a pager (an
	// HTTPS endpoint, setting pagerUrl, or any subscription to the output
	// PagerTopicArn).
	pager := awssns.NewTopic(s.Stack, jsii.String("pager"), &awssns.TopicProps{DisplayName: jsii.String("practice-api " + p.Stage + " pager"),
		EnforceSSL: jsii.Bool(true)})
	allowCloudWatch(s, pager)
	s.AlarmTopic, s.PagerTopic = topic, pager
	if p.AlarmEmail != "" {
		// Notifications SNS could not hand to the e-mail service are kept
		// 14 days, not dropped (the dashboard shows the queue).
		s.AlarmDeliveryFailures = awssqs.NewQueue(s.Stack, jsii.String("alarm-delivery-failures"), &awssqs.QueueProps{
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)), EnforceSSL: jsii.Bool(true),
		})
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(p.AlarmEmail),
			&awssnssubscriptions.EmailSubscriptionProps{DeadLetterQueue: s.AlarmDeliveryFailures}))
	}
	if p.PagerURL != "" {
		if s.AlarmDeliveryFailures == nil {
			s.AlarmDeliveryFailures = awssqs.NewQueue(s.Stack, jsii.String("alarm-delivery-failures"), &awssqs.QueueProps{
				RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)), EnforceSSL: jsii.Bool(true),
			})
		}
		pager.AddSubscription(awssnssubscriptions.NewUrlSubscription(jsii.String(p.PagerURL),
			&awssnssubscriptions.UrlSubscriptionProps{DeadLetterQueue: s.AlarmDeliveryFailures, Protocol: awssns.SubscriptionProtocol_HTTPS}))
	}
	awscdk.NewCfnOutput(s.Stack, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{Value: topic.TopicArn(),
		Description: jsii.String("SNS topic of the stage's alarms: subscribe the on-call tool")})
	awscdk.NewCfnOutput(s.Stack, jsii.String("PagerTopicArn"), &awscdk.CfnOutputProps{Value: pager.TopicArn(),
		Description: jsii.String("SNS topic of the stage's critical alarms: subscribe the pager (or set pagerUrl)")})
	action, page := awscloudwatchactions.NewSnsAction(topic), awscloudwatchactions.NewSnsAction(pager)
	// Every alarm says how urgent it is and where its runbook section is
	// (docs/operations.md; a test holds the two in step).
	alarm := func(id string, rb runbook, desc string, metric awscloudwatch.IMetric, threshold, datapoints, periods float64) awscloudwatch.Alarm {
		a := awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(rb.describe(desc)),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			DatapointsToAlarm:  jsii.Number(datapoints),
			EvaluationPeriods:  jsii.Number(periods),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(action)
		a.AddOkAction(action)
		if rb.severity == critical {
			a.AddAlarmAction(page)
			a.AddOkAction(page)
		}
		return a
	}
	s.alarm = alarm
	minute, five := awscdk.Duration_Minutes(jsii.Number(1)), awscdk.Duration_Minutes(jsii.Number(5))
	sum := func(period awscdk.Duration) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum")}
	}
	rate := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("IF(requests > 20, 100 * errors / requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"errors":   s.API.MetricServerError(sum(five)),
			"requests": s.API.MetricCount(sum(five)),
		},
		Period: five, Label: jsii.String("5xx %"),
	})
	alarm("api-5xx-rate", runbook{"api-5xx-rate", critical}, "more than 1% of API requests answered 5xx, in 2 of 3 five-minute periods (20+ requests)", rate, 1, 2, 3)
	// Latency per route, each on its own threshold: a report may take
	// seconds where a read takes milliseconds, so one API-wide alarm would
	// either page on every report or miss a slow read.
	for _, rt := range routes.Table {
		threshold := RouteLatencyThresholdMS(rt)
		alarm("latency-"+routeAlarmID(rt), runbook{"route-latency", high}, fmt.Sprintf("%s %s: p99 latency over %.0f ms in 3 of 5 minutes", rt.Method, routes.Prefix+rt.Path, threshold),
			awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("AWS/ApiGateway"), MetricName: jsii.String("Latency"),
				DimensionsMap: &map[string]*string{"ApiId": s.API.ApiId(), "Stage": jsii.String("$default"),
					"Method": jsii.String(rt.Method), "Resource": jsii.String(routes.Prefix + rt.Path)},
				Period: minute, Statistic: jsii.String("p99")}), threshold, 3, 5)
	}
	// 5xx per route: a route with a small share of the traffic can fail
	// completely under the API-wide rate. Every route of the table gets one
	// (a route added to it is covered without a line here).
	for _, rt := range routes.Table {
		dims := &map[string]*string{"ApiId": s.API.ApiId(), "Stage": jsii.String("$default"),
			"Method": jsii.String(rt.Method), "Resource": jsii.String(routes.Prefix + rt.Path)}
		routeMetric := func(name string) awscloudwatch.IMetric {
			return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("AWS/ApiGateway"), MetricName: jsii.String(name),
				DimensionsMap: dims, Period: five, Statistic: jsii.String("Sum")})
		}
		alarm("5xx-"+routeAlarmID(rt), runbook{"route-5xx", critical}, fmt.Sprintf("%s %s: more than 5%% of its requests answered 5xx (at least 2), in 2 of 3 five-minute periods", rt.Method, routes.Prefix+rt.Path),
			awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
				Expression:   jsii.String("IF(errors >= 2, 100 * errors / requests, 0)"),
				UsingMetrics: &map[string]awscloudwatch.IMetric{"errors": routeMetric("5xx"), "requests": routeMetric("Count")},
				Period:       five, Label: jsii.String("5xx %"),
			}), 5, 2, 3)
	}
	// 401s: a key store or auth path that broke answers everyone 401 (no
	// 5xx at all); so does a flood of guessed keys. From the gateway's
	// access log, against the API's requests.
	unauthorized := s.accessLogMetric("Unauthorized", `{ $.status = "401" }`)
	alarm("api-401-rate", runbook{"api-401-rate", critical}, "more than 25% of API requests answered 401, in 2 of 3 five-minute periods (50+ requests)",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String("IF(requests >= 50, 100 * unauthorized / requests, 0)"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{"unauthorized": unauthorized, "requests": s.API.MetricCount(sum(five))},
			Period:       five, Label: jsii.String("401 %"),
		}), 25, 2, 3)
	// The synthetic check: a failed check (ALARM), or no check at all for
	// the evaluation's three minutes once it has run (the schedule or the
	// function broken: zero traffic is not health). Every run publishes
	// SyntheticCheckFailures (0 when all passed), so a minute without a
	// point is a minute without a check. Missing data is "missing", not
	// breaching, and INSUFFICIENT_DATA notifies (and pages) as ALARM does:
	// an alarm is created in INSUFFICIENT_DATA and CloudWatch acts only on
	// a change of state, so a new stack, whose check has not run yet, is
	// not paged (with missing data as breaching it was, on day one), while
	// a check that ran and stopped takes the alarm from OK (or ALARM) to
	// INSUFFICIENT_DATA, which pages.
	// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html
	// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html
	synthetic := awscloudwatch.NewAlarm(s.Stack, jsii.String("synthetic-check-alarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String(runbook{"synthetic-check", critical}.describe("the synthetic check failed in 2 of 3 minutes (ALARM), " +
			"or stopped running: no check in the last 3 minutes (INSUFFICIENT_DATA, which notifies too; a new stack is not paged before its first check)")),
		Metric: awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricNamespace), MetricName: jsii.String("SyntheticCheckFailures"),
			DimensionsMap: &map[string]*string{"Stage": jsii.String(p.Stage)}, Period: minute, Statistic: jsii.String("Sum")}),
		Threshold: jsii.Number(0), DatapointsToAlarm: jsii.Number(2), EvaluationPeriods: jsii.Number(3),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_MISSING,
	})
	for _, act := range []awscloudwatch.IAlarmAction{action, page} {
		synthetic.AddAlarmAction(act)
		synthetic.AddOkAction(act)
		synthetic.AddInsufficientDataAction(act)
	}
	for _, fn := range Functions {
		if fn.Deploy {
			continue // a failure fails the deploy: CloudFormation says so
		}
		f := s.Functions[fn.Name]
		alarm(fn.Name+"-errors", runbook{"function-errors", high}, fn.Name+": invocation errors in 2 of 3 five-minute periods", f.MetricErrors(sum(five)), 0, 2, 3)
		alarm(fn.Name+"-throttles", runbook{"function-throttles", high}, fn.Name+": throttled invocations in 2 of 3 five-minute periods", f.MetricThrottles(sum(five)), 0, 2, 3)
		alarm(fn.Name+"-duration", runbook{"function-duration", warning}, fn.Name+": p99 duration above 80% of its timeout in 3 of 5 minutes",
			f.MetricDuration(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("p99")}), 0.8*fn.TimeoutS*1000, 3, 5)
	}
	for _, name := range []string{"enrichment", "delivery"} {
		alarm(name+"-queue-age", runbook{"queue-age", high}, name+": the oldest message has waited over 15 minutes (workers stuck or too few), 3 of 5 minutes",
			s.Queues[name].MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}), 900, 3, 5)
	}
	for _, name := range slices.Sorted(maps.Keys(s.DLQs)) { // in order: the template is the same at every synth
		dlq := s.DLQs[name]
		alarm(name+"-dlq-depth", runbook{"dead-letter-queue", high}, name+": messages in the dead-letter queue (inspect and redrive)",
			dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}), 0, 1, 1)
	}
	alarm("dynamodb-throttles", runbook{"dynamodb-throttles", high}, "DynamoDB throttled requests on the table in 2 of 3 five-minute periods",
		s.tableSum("ThrottledRequests", "throttled requests", five), 0, 2, 3)
	alarm("dynamodb-system-errors", runbook{"dynamodb-system-errors", high}, "DynamoDB system errors on the table in 2 of 3 five-minute periods",
		s.tableSum("SystemErrors", "system errors", five), 0, 2, 3)
	alarm("outbox-stream-iterator-age", runbook{"outbox-stream-behind", high}, "the outbox stream is over 5 minutes behind (dispatcher failing or throttled), 3 of 5 minutes",
		s.Functions["dispatcher"].Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String("Maximum")}), 300_000, 3, 5)
	stage := &map[string]*string{"Stage": jsii.String(p.Stage)}
	alarm("outbox-dispatch-failures", runbook{"outbox-dispatch-failures", high}, "outbox events failed to dispatch in 3 of 5 minutes (they stay pending: the backlog grows)",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricNamespace), MetricName: jsii.String("OutboxDispatchFailures"),
			DimensionsMap: stage, Period: minute, Statistic: jsii.String("Sum")}), 0, 3, 5)
	alarm("outbox-events-parked", runbook{"outbox-events-parked", high}, "outbox events were parked: their sends failed 10 times, their type is unknown, or the item is not an event; `scripts/admin outbox parked` lists them with the reason, `outbox replay` sends them",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricNamespace), MetricName: jsii.String("OutboxEventsParked"),
			DimensionsMap: stage, Period: five, Statistic: jsii.String("Sum")}), 0, 1, 1)
	alarm("dispatch-failures-depth", runbook{"dispatch-failures", high}, "the dispatcher's triggers failed: stream batches past their retries or age, or crashed sweeps (their events stay pending; inspect the queue's messages)",
		s.DispatchFailures.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}), 0, 1, 1)
	if s.AlarmDeliveryFailures != nil {
		// The topic's other subscribers (an on-call tool) hear this one even
		// when the e-mail is what fails.
		alarm("alarm-delivery-failures-depth", runbook{"alarm-delivery-failures", warning}, "alarm notifications SNS could not deliver to alarmEmail are waiting in the alarm-delivery-failures queue "+
			"(an unconfirmed or bouncing address): read them there, and fix the subscription",
			s.AlarmDeliveryFailures.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}), 0, 1, 1)
	}
	alarm("webhook-endpoints-disabled", runbook{"webhook-endpoint-disabled", warning}, "a webhook endpoint was disabled after 20 consecutive failed deliveries",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricNamespace), MetricName: jsii.String("WebhookEndpointsDisabled"),
			DimensionsMap: stage, Period: five, Statistic: jsii.String("Sum")}), 0, 1, 1)
	// What the gateway refuses itself (a route's throttle, from the traffic
	// model): a 429 no function answered. The per-client limits' own 429s
	// come from the functions and are counted apart, for the dashboard.
	gatewayThrottled := s.accessLogMetric("GatewayThrottled", `{ ($.status = "429") && ($.integrationStatus = "-") }`)
	s.accessLogMetric("ClientRateLimited", `{ ($.status = "429") && ($.integrationStatus != "-") }`)
	alarm("api-gateway-throttles", runbook{"gateway-throttles", warning}, "the gateway refused requests over a route's throttle (the traffic model's peak, docs/cost-model.md), more than 100 in 2 of 3 five-minute periods",
		gatewayThrottled, 100, 2, 3)
	// The account's Lambda concurrency is shared by every function (and
	// every other service of the account): near its limit, throttles begin.
	alarm("account-concurrency", runbook{"account-concurrency", high}, fmt.Sprintf("the account's Lambda concurrency is above 80%% of its limit of %d (accountConcurrency) in 3 of 5 minutes", p.AccountConcurrency),
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("AWS/Lambda"), MetricName: jsii.String("ConcurrentExecutions"),
			Period: minute, Statistic: jsii.String("Maximum")}), 0.8*float64(p.AccountConcurrency), 3, 5)
	newDashboard(s, p)
}

// accessLogMetric counts the gateway's access log lines that match pattern
// as metric name of the service's namespace, per API (its ApiId, which
// tells stages in one account apart). A metric filter's dimension takes
// its value from a field of the event ("$.apiId"), never a literal: a
// literal stage name published nothing.
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html (publishing dimensions)
func (s *Stack) accessLogMetric(name, pattern string) awscloudwatch.IMetric {
	awslogs.NewMetricFilter(s.Stack, jsii.String(name+"-filter"), &awslogs.MetricFilterProps{
		LogGroup: s.AccessLogs, FilterPattern: awslogs.FilterPattern_Literal(jsii.String(pattern)),
		MetricNamespace: jsii.String(MetricNamespace), MetricName: jsii.String(name), MetricValue: jsii.String("1"),
		Dimensions: &map[string]*string{"ApiId": jsii.String("$.apiId")},
	})
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricNamespace), MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{"ApiId": s.API.ApiId()}, Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")})
}

// RouteLatencyThresholdMS is a route's p99 latency alarm threshold: 15 s
// for reports (their function may run 25 s), 1 s for everything else.
func RouteLatencyThresholdMS(rt routes.Route) float64 {
	if rt.Family == routes.Reports {
		return 15_000
	}
	return 1_000
}

// routeAlarmID is a construct id for a route: GET /matters/{matter} →
// get-matters-matter.
func routeAlarmID(rt routes.Route) string {
	id := strings.ToLower(rt.Method)
	for _, part := range strings.Split(rt.Path, "/") {
		if part = strings.Trim(part, "{}"); part != "" {
			id += "-" + part
		}
	}
	return strings.ReplaceAll(strings.ReplaceAll(id, ".", "-"), "_", "-")
}

// tableSum is a DynamoDB metric of the table summed over the operations
// the service calls, each FILLed with 0: DynamoDB publishes an
// operation's ThrottledRequests or SystemErrors only in a period when one
// happened, and metric math's sum of a missing data point is missing, so
// the plain sum (CDK's metricThrottledRequestsForOperations,
// metricSystemErrorsForOperations) has a value only in a period in which
// every one of the operations was throttled or failed: its alarm would
// not fire when the table throttles the service's reads alone (localcloud's
// alarm campaign found it so).
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html (FILL)
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/metrics-dimensions.html
func (s *Stack) tableSum(name, label string, period awscdk.Duration) awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	var terms []string
	for _, op := range tableOps {
		id := strings.ToLower(op)
		using[id] = awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("AWS/DynamoDB"), MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{"TableName": s.Table.TableName(), "Operation": jsii.String(op)}, Period: period, Statistic: jsii.String("Sum")})
		terms = append(terms, "FILL("+id+", 0)")
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{Expression: jsii.String(strings.Join(terms, " + ")), UsingMetrics: &using,
		Period: period, Label: jsii.String("Sum of " + label + " across the service's operations")})
}

// tableOps are the operations the service calls, by the names DynamoDB
// gives them in its metrics' Operation dimension (an alarm's expression
// may name at most ten metrics).
var tableOps = []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchWriteItem", "TransactWriteItems"}

// newDashboard is the stage's one page: the API, every function, the
// queues, the outbox and the webhooks.
func newDashboard(s *Stack, p *Props) {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	opts := func(stat string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: minute, Statistic: jsii.String(stat)}
	}
	graph := func(title string, metrics ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Left: &metrics, Width: jsii.Number(8)})
	}
	var errs, durations, throttles, depth, age []awscloudwatch.IMetric
	for _, fn := range Functions {
		if fn.Deploy {
			continue
		}
		f := s.Functions[fn.Name]
		errs = append(errs, f.MetricErrors(opts("Sum")))
		durations = append(durations, f.MetricDuration(opts("p99")))
		throttles = append(throttles, f.MetricThrottles(opts("Sum")))
	}
	for _, name := range slices.Sorted(maps.Keys(s.Queues)) {
		q := s.Queues[name]
		depth = append(depth, q.MetricApproximateNumberOfMessagesVisible(opts("Maximum")), s.DLQs[name].MetricApproximateNumberOfMessagesVisible(opts("Maximum")))
		age = append(age, q.MetricApproximateAgeOfOldestMessage(opts("Maximum")))
	}
	if s.AlarmDeliveryFailures != nil {
		depth = append(depth, s.AlarmDeliveryFailures.MetricApproximateNumberOfMessagesVisible(opts("Maximum")))
	}
	stage := &map[string]*string{"Stage": jsii.String(p.Stage)}
	custom := func(name string) awscloudwatch.IMetric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricNamespace), MetricName: jsii.String(name),
			DimensionsMap: stage, Period: minute, Statistic: jsii.String("Sum")})
	}
	perAPI := func(name string) awscloudwatch.IMetric { // the access log's metric filters (accessLogMetric)
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricNamespace), MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{"ApiId": s.API.ApiId()}, Period: minute, Statistic: jsii.String("Sum")})
	}
	awscloudwatch.NewDashboard(s.Stack, jsii.String("dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String("practice-api-" + p.Stage),
		Widgets: &[]*[]awscloudwatch.IWidget{
			{graph("API requests", s.API.MetricCount(opts("Sum"))), graph("API 4xx and 5xx", s.API.MetricClientError(opts("Sum")), s.API.MetricServerError(opts("Sum"))),
				graph("API latency p99 (ms)", s.API.MetricLatency(opts("p99")))},
			{graph("Lambda errors", errs...), graph("Lambda duration p99 (ms)", durations...), graph("Lambda throttles", throttles...)},
			{graph("Queue and DLQ depth", depth...), graph("Oldest message age (s)", age...),
				graph("Outbox: dispatched, failed, parked; stream iterator age", custom("OutboxDispatched"), custom("OutboxDispatchFailures"),
					custom("OutboxEventsParked"), s.Functions["dispatcher"].Metric(jsii.String("IteratorAge"), opts("Maximum")),
					s.DispatchFailures.MetricApproximateNumberOfMessagesVisible(opts("Maximum")))},
			{graph("Gateway throttles, per-client 429s, 401s", perAPI("GatewayThrottled"), perAPI("ClientRateLimited"), perAPI("Unauthorized")),
				graph("Account Lambda concurrency", awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("AWS/Lambda"),
					MetricName: jsii.String("ConcurrentExecutions"), Period: minute, Statistic: jsii.String("Maximum")}))},
			{graph("Webhook endpoints disabled", custom("WebhookEndpointsDisabled")),
				graph("DynamoDB throttled requests", s.tableSum("ThrottledRequests", "throttled requests", minute)),
				graph("DynamoDB system errors", s.tableSum("SystemErrors", "system errors", minute))},
		},
	})
}

// allowCloudWatch lets CloudWatch alarms of this account publish to topic
// (an EnforceSSL topic's policy is otherwise a lone Deny, and an alarm's
// notification fails: "CloudWatch … is not authorized to perform:
// SNS:Publish"), and no other account's (aws:SourceAccount, the
// confused-deputy guard SNS documents for service principals).
// https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html#source-account-versus-source-owner
// https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger
func allowCloudWatch(s *Stack, topic awssns.Topic) {
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsOfThisAccount"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"), Resources: &[]*string{topic.TopicArn()},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": s.Stack.Account()},
			"ArnLike":      map[string]any{"aws:SourceArn": "arn:" + *s.Stack.Partition() + ":cloudwatch:" + *s.Stack.Region() + ":" + *s.Stack.Account() + ":alarm:*"},
		},
	}))
}
