package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/store"
)

// Stack is the service's one stack and the parts tests look at.
type Stack struct {
	awscdk.Stack
	Table     awsdynamodb.Table
	Functions map[string]awslambda.Function
	Queues    map[string]awssqs.Queue // name -> main queue (each has a DLQ)
	DLQs      map[string]awssqs.Queue
	API       awsapigatewayv2.HttpApi
}

// NewPracticeStack builds the stack: data, queues, functions, the HTTP API
// from the route table, the outbox triggers, and alarms.
func NewPracticeStack(scope constructs.Construct, id string, p *Props) *Stack {
	sp := p.StackProps
	sp.TerminationProtection = jsii.Bool(p.Protected()) // a protected stage's stack is not deleted by accident
	st := awscdk.NewStack(scope, jsii.String(id), &sp)
	s := &Stack{Stack: st, Functions: map[string]awslambda.Function{}, Queues: map[string]awssqs.Queue{}, DLQs: map[string]awssqs.Queue{}}
	awscdk.Tags_Of(st).Add(jsii.String("service"), jsii.String("practice-api"), nil)
	awscdk.Tags_Of(st).Add(jsii.String("stage"), jsii.String(p.Stage), nil)
	s.Table = newTable(st, p)
	// The enrichment worker runs up to 30 s; SQS should hide a message for
	// six times that while a batch is in flight (AWS's guidance).
	s.addQueue("enrichment", 180)
	// Deliveries: retries beyond SQS's 15-minute delay hop through the queue
	// (a job carries its not-before time), so visibility only covers a run.
	s.addQueue("delivery", 180)
	for _, fn := range Functions {
		s.Functions[fn.Name] = s.newFunction(fn, p)
	}
	s.wireWorkers()
	s.API = s.newAPI(p)
	newAlarms(s, p)
	suppressNag(s)
	awscdk.NewCfnOutput(st, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: jsii.String(*s.API.ApiEndpoint() + routes.Prefix), Description: jsii.String("base URL of /api/v1")})
	awscdk.NewCfnOutput(st, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: s.Table.TableName(), Description: jsii.String("TABLE_NAME for scripts/admin")})
	return s
}

// newTable is the single table, its keys and GSIs exactly as the code
// defines them (store.TableDefinition), on demand, with point-in-time
// recovery, the TTL attribute, and a stream for the outbox dispatcher.
func newTable(scope constructs.Construct, p *Props) awsdynamodb.Table {
	def := store.TableDefinition("practice-api")
	removal := awscdk.RemovalPolicy_DESTROY
	if p.Protected() {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	key := func(name *string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: name, Type: awsdynamodb.AttributeType_STRING}
	}
	encryption, encryptionKey := awsdynamodb.TableEncryption_AWS_MANAGED, awskms.IKey(nil)
	if p.Protected() {
		// A customer-managed key: its use is in CloudTrail, it can be
		// revoked, and it also seals webhook signing secrets (envelope).
		encryption = awsdynamodb.TableEncryption_CUSTOMER_MANAGED
		encryptionKey = awskms.NewKey(scope, jsii.String("TableKey"), &awskms.KeyProps{
			Description:       jsii.String("practice-api " + p.Stage + ": the table and webhook signing secrets"),
			EnableKeyRotation: jsii.Bool(true), RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		})
	}
	t := awsdynamodb.NewTable(scope, jsii.String("Table"), &awsdynamodb.TableProps{
		Encryption:          encryption,
		EncryptionKey:       encryptionKey,
		PartitionKey:        key(def.KeySchema[0].AttributeName),
		SortKey:             key(def.KeySchema[1].AttributeName),
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(store.AttrTTL),
		Stream:              awsdynamodb.StreamViewType_NEW_IMAGE,
		DeletionProtection:  jsii.Bool(p.Protected()),
		RemovalPolicy:       removal,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
	})
	for _, g := range def.GlobalSecondaryIndexes {
		t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      g.IndexName,
			PartitionKey:   key(g.KeySchema[0].AttributeName),
			SortKey:        key(g.KeySchema[1].AttributeName),
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		})
	}
	return t
}

// addQueue makes a queue with a dead-letter queue: a message that failed
// five receives goes there (and raises an alarm) instead of looping.
func (s *Stack) addQueue(name string, visibilityS float64) {
	dlq := awssqs.NewQueue(s.Stack, jsii.String(name+"-dlq"), &awssqs.QueueProps{
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)), EnforceSSL: jsii.Bool(true),
	})
	q := awssqs.NewQueue(s.Stack, jsii.String(name+"-queue"), &awssqs.QueueProps{
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(visibilityS)),
		RetentionPeriod:   awscdk.Duration_Days(jsii.Number(4)),
		EnforceSSL:        jsii.Bool(true),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(5)},
	})
	s.Queues[name], s.DLQs[name] = q, dlq
}

// newFunction builds one Lambda with exactly its table actions.
func (s *Stack) newFunction(fn Function, p *Props) awslambda.Function {
	logs := awslogs.NewLogGroup(s.Stack, jsii.String(fn.Name+"-logs"), &awslogs.LogGroupProps{
		Retention: p.LogRetention(), RemovalPolicy: p.LogRemoval(),
	})
	modes := "test"
	if p.Stage == "prod" {
		modes = "live"
	}
	env := map[string]*string{
		"TABLE_NAME":            s.Table.TableName(),
		"RATE_LIMIT_PER_MINUTE": jsii.String(strconv.Itoa(p.RateLimit)),
		"API_KEY_MODES":         jsii.String(modes),
		"COMPANY_REGISTER_URL":  jsii.String(p.CompanyRegisterURL),
		"ENRICHMENT_QUEUE_URL":  s.Queues["enrichment"].QueueUrl(),
		"DELIVERY_QUEUE_URL":    s.Queues["delivery"].QueueUrl(),
		// Never in AWS: a subscriber URL must not reach the VPC, the
		// metadata service or loopback.
		"WEBHOOK_ALLOW_PRIVATE_TARGETS": jsii.String("0"),
		"STAGE":                         jsii.String(p.Stage),
	}
	if p.PublicBaseURL != "" { // a custom domain; unset, the API's own domain name is used
		env["PUBLIC_BASE_URL"] = jsii.String(p.PublicBaseURL)
	}
	if key := s.Table.EncryptionKey(); key != nil && (fn.Name == "webhooks" || fn.Name == "delivery") {
		env["WEBHOOK_SECRETS_KEY_ARN"] = key.KeyArn() // envelope encryption of signing secrets
	}
	if len(fn.Table) == 0 { // no store, no queues: only what it reads
		env = map[string]*string{"STAGE": jsii.String(p.Stage)}
	}
	f := awslambda.NewFunction(s.Stack, jsii.String(fn.Name), &awslambda.FunctionProps{
		Description:   jsii.String("practice-api " + fn.Name),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  p.Architecture(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(p.CodeDir, fn.Name)), nil),
		MemorySize:    jsii.Number(fn.MemoryMB),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(fn.TimeoutS)),
		Environment:   &env,
		Tracing:       awslambda.Tracing_ACTIVE,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		LogGroup:      logs,
	})
	if fn.Reserved > 0 && p.ReserveConcurrency() {
		f.Node().DefaultChild().(awslambda.CfnFunction).SetReservedConcurrentExecutions(jsii.Number(fn.Reserved))
	}
	if len(fn.Table) == 0 {
		return f
	}
	s.grantTable(f, fn)
	return f
}

// grantTable gives a function exactly its table actions, on the table and
// (for Queries) each named index, and with them the use of the table's key
// when it has a customer-managed one: the key grants follow the table's,
// so a new function cannot be given one without the other.
func (s *Stack) grantTable(f awslambda.Function, fn Function) {
	resources := []*string{s.Table.TableArn()}
	if fn.IndexRead {
		for _, idx := range store.GSIs { // named, not index/*
			resources = append(resources, jsii.String(*s.Table.TableArn()+"/index/"+idx))
		}
	}
	f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("Table"), Actions: jsii.Strings(fn.Table...), Resources: &resources,
	}))
	if key := s.Table.EncryptionKey(); key != nil {
		key.Grant(f, jsii.String("kms:Decrypt"), jsii.String("kms:Encrypt"), jsii.String("kms:GenerateDataKey"), jsii.String("kms:DescribeKey"))
	}
}

// wireWorkers connects the outbox and the queues: the dispatcher runs on
// every new outbox event (stream, filtered to event inserts) and every
// minute (the sweep); the enrichment worker consumes its queue.
func (s *Stack) wireWorkers() {
	d := s.Functions["dispatcher"]
	d.AddEventSource(awslambdaeventsources.NewDynamoEventSource(s.Table, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:  awslambda.StartingPosition_LATEST,
		BatchSize:         jsii.Number(100),
		MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(1)),
		RetryAttempts:     jsii.Number(3),
		Filters: &[]*map[string]interface{}{awslambda.FilterCriteria_Filter(&map[string]interface{}{
			"eventName": awslambda.FilterRule_IsEqual("INSERT"),
			"dynamodb":  map[string]interface{}{"NewImage": map[string]interface{}{"kind": map[string]interface{}{"S": awslambda.FilterRule_IsEqual("event")}}},
		})},
	}))
	awsevents.NewRule(s.Stack, jsii.String("outbox-sweep"), &awsevents.RuleProps{
		Description: jsii.String("sweep outbox events that no stream invocation dispatched"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		// No retries of a sweep: the next one runs in a minute, and retried
		// sweeps would only overlap it.
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(d, &awseventstargets.LambdaFunctionProps{RetryAttempts: jsii.Number(0)})},
	})
	d.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{RetryAttempts: jsii.Number(0)})
	s.Queues["enrichment"].GrantSendMessages(d)
	s.Queues["delivery"].GrantSendMessages(d) // the webhook fan-out

	e := s.Functions["enrichment"]
	e.AddEventSource(awslambdaeventsources.NewSqsEventSource(s.Queues["enrichment"], &awslambdaeventsources.SqsEventSourceProps{
		// At most five lookups at once: the company register is someone else's service.
		BatchSize: jsii.Number(10), ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(5),
	}))
	s.Queues["enrichment"].GrantSendMessages(e) // retries re-enqueue with a delay

	w := s.Functions["delivery"]
	w.AddEventSource(awslambdaeventsources.NewSqsEventSource(s.Queues["delivery"], &awslambdaeventsources.SqsEventSourceProps{
		BatchSize: jsii.Number(10), ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(20),
	}))
	s.Queues["delivery"].GrantSendMessages(w)                       // the next attempt
	s.Queues["delivery"].GrantSendMessages(s.Functions["webhooks"]) // manual retries
}

// guardStage sets, through the $default stage's escape hatch (the stage is
// kept, not replaced), a rate and burst limit for every route, before any
// Lambda or table is touched, and JSON access logs to their own log group,
// which record the answers API Gateway gives itself (throttles,
// integration errors, timeouts).
func (s *Stack) guardStage(api awsapigatewayv2.HttpApi, p *Props) {
	logs := awslogs.NewLogGroup(s.Stack, jsii.String("api-access-logs"), &awslogs.LogGroupProps{
		Retention: p.LogRetention(), RemovalPolicy: p.LogRemoval(),
	})
	stage := api.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	rate, burst := cmp.Or(p.ThrottleRate, DefaultThrottleRate), cmp.Or(p.ThrottleBurst, DefaultThrottleBurst)
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		ThrottlingRateLimit: jsii.Number(rate), ThrottlingBurstLimit: jsii.Number(burst),
	})
	format, _ := json.Marshal(map[string]string{
		"requestId": "$context.requestId", "routeKey": "$context.routeKey", "status": "$context.status",
		"integrationError": "$context.integrationErrorMessage", "integrationStatus": "$context.integrationStatus",
		"latencyMs": "$context.responseLatency", "integrationLatencyMs": "$context.integrationLatency",
		"method": "$context.httpMethod", "path": "$context.path", "ip": "$context.identity.sourceIp", "time": "$context.requestTimeEpoch",
	})
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(), Format: jsii.String(string(format)),
	})
}

// newAPI creates the HTTP API (payload v2) with one route per row of the
// route table, each to its family's function.
func (s *Stack) newAPI(p *Props) awsapigatewayv2.HttpApi {
	integrations := map[string]awsapigatewayv2integrations.HttpLambdaIntegration{}
	for _, fn := range Functions {
		if fn.Family != "" {
			integrations[fn.Family] = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(fn.Name+"-integration"), s.Functions[fn.Name],
				&awsapigatewayv2integrations.HttpLambdaIntegrationProps{PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0()})
		}
	}
	api := awsapigatewayv2.NewHttpApi(s.Stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:     jsii.String("practice-api-" + p.Stage),
		Description: jsii.String("Practice API /api/v1 (" + p.Stage + ")"),
		// $default: what matches no route goes to the meta function, which
		// answers as the API does (JSON 404, or 405 with Allow, with a
		// request id), not with API Gateway's own {"message":"Not Found"}.
		DefaultIntegration: integrations[routes.Meta],
	})
	s.guardStage(api, p)
	for _, rt := range routes.Table {
		integ, ok := integrations[rt.Family]
		if !ok {
			panic(fmt.Sprintf("route %s: family %s has no function in infra/functions.go", rt.Name, rt.Family))
		}
		api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(routes.Prefix + rt.Path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(rt.Method)},
			Integration: integ,
		})
	}
	return api
}
