package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/store"
)

// Stack is the service's one stack and the parts tests look at.
type Stack struct {
	awscdk.Stack
	Table awsdynamodb.Table
	// AccessLogs holds the gateway's access log lines.
	AccessLogs awslogs.LogGroup
	// SecretsKey seals webhook signing secrets on protected stages: a key of
	// its own, which only the functions that seal and open them may use.
	SecretsKey awskms.Key
	Functions  map[string]awslambda.Function
	// Aliases are each function's "live" alias: what the routes, event
	// sources and schedule invoke, moved to a new version by CodeDeploy.
	Aliases map[string]awslambda.Alias
	// ReleaseAlarms are the alarms whose firing rolls a function's release
	// back (its errors and duration alarms).
	ReleaseAlarms map[string][]awscloudwatch.IAlarm
	Queues        map[string]awssqs.Queue // name -> main queue (each has a DLQ)
	DLQs          map[string]awssqs.Queue
	// DispatchFailures receives what the dispatcher's triggers could not
	// hand it: stream batches it failed on past their retries or age, and
	// schedule events of sweeps that crashed.
	DispatchFailures awssqs.Queue
	// AlarmDeliveryFailures keeps alarm e-mails SNS could not send (when
	// the stage has an alarm address).
	AlarmDeliveryFailures awssqs.Queue
	API                   awsapigatewayv2.HttpApi
	// AlarmTopic gets every alarm; PagerTopic the critical ones besides.
	AlarmTopic, PagerTopic awssns.Topic
	// alarm makes an alarm with its runbook, notifying the topics.
	alarm func(id string, rb runbook, desc string, metric awscloudwatch.IMetric, threshold, datapoints, periods float64) awscloudwatch.Alarm
}

// NewPracticeStack builds the stack: data, queues, functions, the HTTP API
// from the route table, the outbox triggers, backups, and alarms.
func NewPracticeStack(scope constructs.Construct, id string, p *Props) *Stack {
	p.defaults()
	sp := p.StackProps
	sp.TerminationProtection = jsii.Bool(p.Protected()) // a protected stage's stack is not deleted by accident
	st := awscdk.NewStack(scope, jsii.String(id), &sp)
	s := &Stack{Stack: st, Functions: map[string]awslambda.Function{}, Aliases: map[string]awslambda.Alias{},
		ReleaseAlarms: map[string][]awscloudwatch.IAlarm{}, Queues: map[string]awssqs.Queue{}, DLQs: map[string]awssqs.Queue{}}
	// Not on the dashboard: AWS::CloudWatch::Dashboard has no Tags in
	// every region's schema (cfn-lint's E3002 in us-east-1).
	untagged := &awscdk.TagProps{ExcludeResourceTypes: jsii.Strings("AWS::CloudWatch::Dashboard")}
	awscdk.Tags_Of(st).Add(jsii.String("service"), jsii.String("practice-api"), untagged)
	awscdk.Tags_Of(st).Add(jsii.String("stage"), jsii.String(p.Stage), untagged)
	var tableKey awskms.IKey
	if p.Protected() {
		// A customer-managed key: its use is in CloudTrail and it can be
		// revoked. Webhook signing secrets have a key of their own.
		tableKey = awskms.NewKey(st, jsii.String("TableKey"), &awskms.KeyProps{
			Description:       jsii.String("practice-api " + p.Stage + ": the table"),
			EnableKeyRotation: jsii.Bool(true), RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
			Policy: awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
				keyAdministration(),
				// The account's principals (functions, operators, AWS
				// Backup's role) use it only through DynamoDB or AWS
				// Backup on their own behalf, as the AWS managed key for
				// DynamoDB allows: reading the table is what IAM decides,
				// no one decrypts with the key directly.
				// https://docs.aws.amazon.com/kms/latest/developerguide/services-dynamodb.html
				awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
					Sid:        jsii.String("UseThroughDynamoDB"),
					Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
					Actions:    jsii.Strings("kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:CreateGrant", "kms:DescribeKey"),
					Resources:  jsii.Strings("*"),
					Conditions: &map[string]any{"StringEquals": map[string]any{
						"kms:ViaService":    []string{"dynamodb." + *st.Region() + ".amazonaws.com", "backup." + *st.Region() + ".amazonaws.com"},
						"kms:CallerAccount": st.Account(),
					}},
				}),
			}}),
		})
	}
	if p.RestoringFrom != "" {
		// The import step of a restore (docs/operations.md, "Restore the
		// table"): the stage as deployed, on its current table, plus the
		// restored table as the restore left it, for cdk import to adopt.
		current := p.RestoringFrom
		if current == "-" {
			current = ""
		}
		s.Table = newTable(st, p, tableKey, current, false)
		newTable(st, p, tableKey, p.TableName, true)
	} else {
		s.Table = newTable(st, p, tableKey, p.TableName, false)
	}
	if p.Protected() {
		// Its use by the two functions that seal and open secrets is added
		// once their roles exist (secretsKeyUse).
		s.SecretsKey = awskms.NewKey(st, jsii.String("WebhookSecretsKey"), &awskms.KeyProps{
			Description:       jsii.String("practice-api " + p.Stage + ": webhook signing secrets (envelope encryption)"),
			EnableKeyRotation: jsii.Bool(true), RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
			Policy: awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{keyAdministration()}}),
		})
	}
	// The enrichment worker runs up to 30 s; SQS should hide a message for
	// six times that while a batch is in flight (AWS's guidance).
	s.addQueue("enrichment", 180)
	// Deliveries: retries beyond SQS's 15-minute delay hop through the queue
	// (a job carries its not-before time), so visibility only covers a run.
	s.addQueue("delivery", 180)
	s.DispatchFailures = awssqs.NewQueue(st, jsii.String("dispatch-failures"), &awssqs.QueueProps{
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)), EnforceSSL: jsii.Bool(true),
	})
	// The API first: the synthetic check's function is given its URL (the
	// routes come after the functions, newAPI).
	s.API = s.newAPIBase(p)
	for _, fn := range Functions {
		f := s.newFunction(fn, p)
		s.Functions[fn.Name] = f
		if fn.Hook || fn.Deploy {
			continue // invoked by CodeDeploy or CloudFormation by name, never released itself
		}
		// Each deploy publishes a version (when the code or configuration
		// changed) and CodeDeploy moves "live" onto it (releases).
		s.Aliases[fn.Name] = awslambda.NewAlias(st, jsii.String(fn.Name+"-live"), &awslambda.AliasProps{
			AliasName: jsii.String("live"), Version: f.CurrentVersion(),
			Description: jsii.String("practice-api " + fn.Name + ": the version that serves; CodeDeploy shifts it"),
		})
	}
	s.secretsKeyUse()
	s.seedConfig(p)
	s.wireWorkers(p)
	s.addRoutes()
	if p.Protected() {
		s.backups(p)
	}
	newAlarms(s, p)
	s.releases(p)
	suppressNag(s)
	awscdk.NewCfnOutput(st, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: jsii.String(s.apiURL(p)), Description: jsii.String("base URL of /api/v1")})
	awscdk.NewCfnOutput(st, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: s.Table.TableName(), Description: jsii.String("TABLE_NAME for scripts/admin")})
	if p.CloudFront {
		s.cloudFront(p)
	}
	return s
}

// apiURL is the base URL clients use: the custom domain's, or the API's own.
func (s *Stack) apiURL(p *Props) string {
	if p.DomainName != "" {
		return "https://" + p.DomainName + routes.Prefix
	}
	// The API's endpoint attribute (https://<id>.execute-api.<region>.<suffix>):
	// localcloud answers it with its own gateway's address.
	return *s.API.Node().DefaultChild().(awsapigatewayv2.CfnApi).AttrApiEndpoint() + routes.Prefix
}

// newTable is the single table, its keys and GSIs exactly as the code
// defines them (store.TableDefinition), on demand, with point-in-time
// recovery, the TTL attribute, and a stream for the outbox dispatcher.
//
// name is its physical name: "" lets CloudFormation name it (the table a
// stage is born with, construct "Table"); a restored table's name
// (the tableName setting) is kept, under a construct of its own
// ("Table" and the name), so that CloudFormation adopts it as a resource
// of its own and retains the one it replaces. asRestored declares the
// table as a restore leaves it (no stream, TTL, point-in-time recovery or
// deletion protection) for the import step: the deploy after it declares
// them again, and so puts them back.
func newTable(scope constructs.Construct, p *Props, encryptionKey awskms.IKey, name string, asRestored bool) awsdynamodb.Table {
	def := store.TableDefinition("practice-api")
	removal := awscdk.RemovalPolicy_DESTROY
	if p.Protected() {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	key := func(name *string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: name, Type: awsdynamodb.AttributeType_STRING}
	}
	encryption := awsdynamodb.TableEncryption_AWS_MANAGED
	if encryptionKey != nil {
		encryption = awsdynamodb.TableEncryption_CUSTOMER_MANAGED
	}
	props := &awsdynamodb.TableProps{
		Encryption:          encryption,
		EncryptionKey:       encryptionKey,
		PartitionKey:        key(def.KeySchema[0].AttributeName),
		SortKey:             key(def.KeySchema[1].AttributeName),
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(store.AttrTTL),
		Stream:              awsdynamodb.StreamViewType_NEW_IMAGE,
		// Which partitions DynamoDB throttled, by key (the hot-organisation
		// runbook names the organisation from them): throttled keys only,
		// so it costs per throttled request, not per request.
		// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/contributorinsights_HowItWorks.html
		ContributorInsightsSpecification: &awsdynamodb.ContributorInsightsSpecification{
			Enabled: jsii.Bool(true), Mode: awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS,
		},
		DeletionProtection: jsii.Bool(p.Protected()),
		RemovalPolicy:      removal,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
	}
	id := "Table"
	if name != "" {
		props.TableName = jsii.String(name)
		id = "Table" + regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(name, "")
	}
	if asRestored {
		props.TimeToLiveAttribute, props.Stream, props.DeletionProtection = nil, "", jsii.Bool(false)
		props.PointInTimeRecoverySpecification = nil
		props.RemovalPolicy = awscdk.RemovalPolicy_RETAIN // cdk import needs a deletion policy; a restored table is never deleted by a stack
	}
	t := awsdynamodb.NewTable(scope, jsii.String(id), props)
	for _, g := range def.GlobalSecondaryIndexes {
		projection := awsdynamodb.ProjectionType_ALL
		if g.Projection.ProjectionType == ddbtypes.ProjectionTypeKeysOnly {
			projection = awsdynamodb.ProjectionType_KEYS_ONLY
		}
		t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      g.IndexName,
			PartitionKey:   key(g.KeySchema[0].AttributeName),
			SortKey:        key(g.KeySchema[1].AttributeName),
			ProjectionType: projection,
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
	env := map[string]*string{
		"TABLE_NAME":            s.Table.TableName(),
		"RATE_LIMIT_PER_MINUTE": jsii.String(strconv.Itoa(p.RateLimit)),
		"API_KEY_MODES":         jsii.String(p.KeyModes()),
		"COMPANY_REGISTER_URL":  jsii.String(p.CompanyRegisterURL),
		"ENRICHMENT_QUEUE_URL":  s.Queues["enrichment"].QueueUrl(),
		"DELIVERY_QUEUE_URL":    s.Queues["delivery"].QueueUrl(),
		// Never in AWS: a subscriber URL must not reach the VPC, the
		// metadata service or loopback (the local stage's setting may allow
		// it: its receivers are on the same machine).
		"WEBHOOK_ALLOW_PRIVATE_TARGETS": jsii.String(map[bool]string{true: "1", false: "0"}[p.AllowPrivateTargets]),
		"STAGE":                         jsii.String(p.Stage),
		"OUTBOX_SHARDS":                 jsii.String(strconv.Itoa(p.OutboxShards)),
		"OUTBOX_RETENTION":              jsii.String(strconv.Itoa(p.OutboxRetentionDays*24) + "h"),
		"EVENT_RETENTION":               jsii.String(strconv.Itoa(p.EventRetentionDays*24) + "h"),
		"LOG_LEVEL":                     jsii.String(p.LogLevel),
	}
	if p.CompanyRegisterKeySecret != "" && fn.Name == "enrichment" {
		env["COMPANY_REGISTER_KEY_SECRET"] = jsii.String(p.CompanyRegisterKeySecret)
	}
	if p.PublicBaseURL != "" { // a custom domain; unset, the API's own domain name is used
		env["PUBLIC_BASE_URL"] = jsii.String(p.PublicBaseURL)
	}
	if s.SecretsKey != nil && sealsSecrets(fn.Name) {
		env["WEBHOOK_SECRETS_KEY_ARN"] = s.SecretsKey.KeyArn() // envelope encryption of signing secrets
	}
	if len(fn.Table) == 0 { // no store, no queues: only what it reads
		env = map[string]*string{"STAGE": jsii.String(p.Stage), "LOG_LEVEL": jsii.String(p.LogLevel)}
	}
	if fn.Name == "synthetic" || fn.Name == "releasecheck" {
		env["SYNTHETIC_BASE_URL"] = jsii.String(s.apiURL(p))
		if p.SmokeKeySecret != "" {
			env["SMOKE_KEY_SECRET"] = jsii.String(p.SmokeKeySecret)
		}
	}
	// Its own role, without AWSLambdaBasicExecutionRole (which may write
	// to any log group of the account): it may write to its own log group
	// only. Lambda creates no group, as this one exists before the function.
	role := awsiam.NewRole(s.Stack, jsii.String(fn.Name+"-role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("practice-api " + fn.Name + ": its own log group, and what its code calls"),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*logs.LogGroupArn()),
	}))
	f := awslambda.NewFunction(s.Stack, jsii.String(fn.Name), &awslambda.FunctionProps{
		Role:         role,
		Description:  jsii.String("practice-api " + fn.Name),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: p.Architecture(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(p.CodeDir, fn.Name)), nil),
		MemorySize:   jsii.Number(fn.MemoryMB),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(fn.TimeoutS)),
		Environment:  &env,
		// No X-Ray: the functions carry no instrumentation, so a trace held
		// only what the REPORT line and the metrics already say, at about
		// $660 a month at the traffic model's 1,000 requests a second
		// (docs/cost-model.md).
		Tracing:       awslambda.Tracing_DISABLED,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		// The functions log JSON lines with a "level" (slog). The stage's
		// logLevel is applied by the functions themselves (LOG_LEVEL), which
		// keep every line that carries metrics whatever the level: Lambda's
		// own filter stops at INFO (or a lower stage level), so it drops
		// nothing a metric or its alarm reads.
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel(LambdaAppLevel(p.LogLevel)),
		SystemLogLevelV2:      awslambda.SystemLogLevel(p.SystemLogLevel),
		LogGroup:              logs,
	})
	if reserved := p.reserved(fn); reserved > 0 && p.ReserveConcurrency() {
		f.Node().DefaultChild().(awslambda.CfnFunction).SetReservedConcurrentExecutions(jsii.Number(reserved))
	}
	// cfn-lint's W3005 (a DependsOn a reference already enforces): the CDK
	// lists the function's role in its DependsOn beside the Role's GetAtt
	// (with the role's policy, which is what that DependsOn is for). The
	// one warning make check allows, here only (scripts/lib/cfn-lint).
	f.Node().DefaultChild().(awslambda.CfnFunction).AddMetadata(jsii.String("cfn-lint"),
		map[string]any{"config": map[string]any{"ignore_checks": []string{"W3005"}}})
	if s.SecretsKey != nil && sealsSecrets(fn.Name) {
		// The webhooks family seals new secrets (a data key) and opens
		// them (test events); delivery only opens them. Each under an
		// encryption context naming the secret's organisation and
		// endpoint; the key's own policy says the same (secretsKeyUse).
		f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("WebhookSecretsKey"), Actions: jsii.Strings(secretsKeyActions(fn.Name)...),
			Resources: &[]*string{s.SecretsKey.KeyArn()}, Conditions: &secretsKeyContext,
		}))
	}
	if p.CompanyRegisterKeySecret != "" && fn.Name == "enrichment" {
		// The register's key: this secret, read, and nothing else.
		secret := awssecretsmanager.Secret_FromSecretNameV2(s.Stack, jsii.String("register-key"), jsii.String(p.CompanyRegisterKeySecret))
		if strings.HasPrefix(p.CompanyRegisterKeySecret, "arn:") {
			secret = awssecretsmanager.Secret_FromSecretCompleteArn(s.Stack, jsii.String("register-key"), jsii.String(p.CompanyRegisterKeySecret))
		}
		secret.GrantRead(f, nil)
	}
	if p.SmokeKeySecret != "" && (fn.Name == "synthetic" || fn.Name == "releasecheck") {
		secret := awssecretsmanager.Secret_FromSecretNameV2(s.Stack, jsii.String("smoke-key"), jsii.String(p.SmokeKeySecret))
		if strings.HasPrefix(p.SmokeKeySecret, "arn:") {
			secret = awssecretsmanager.Secret_FromSecretCompleteArn(s.Stack, jsii.String("smoke-key"), jsii.String(p.SmokeKeySecret))
		}
		secret.GrantRead(f, nil)
	}
	if len(fn.Table) == 0 {
		return f
	}
	s.grantTable(f, fn)
	return f
}

// sealsSecrets names the functions that seal or open webhook signing
// secrets: the webhooks family (create, rotate) and delivery (signing).
func sealsSecrets(name string) bool { return name == "webhooks" || name == "delivery" }

// secretsKeyActions are what a function may do with the secrets key:
// webhooks seals (GenerateDataKey) and opens (Decrypt), delivery opens.
func secretsKeyActions(name string) []string {
	if name == "webhooks" {
		return []string{"kms:Decrypt", "kms:GenerateDataKey"}
	}
	return []string{"kms:Decrypt"}
}

// secretsKeyContext is the encryption context every use of the secrets key
// must carry: the organisation and the endpoint the secret belongs to
// (webhook.KMSBox), and nothing else. A data key made for one endpoint
// opens only with that endpoint's names, and CloudTrail names both.
// https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html#conditions-kms-encryption-context
var secretsKeyContext = map[string]any{
	"StringLike":                map[string]any{"kms:EncryptionContext:org": "?*", "kms:EncryptionContext:endpoint": "?*"},
	"ForAllValues:StringEquals": map[string]any{"kms:EncryptionContextKeys": []string{"org", "endpoint"}},
}

// keyAdministration is the statement of a key's policy that lets the
// account's administrators (through IAM) manage the key: describe it, set
// its policy, rotation, description, tags and aliases, enable, disable,
// schedule or cancel its deletion, list and revoke grants. Not encrypt,
// decrypt, make data keys or grants: a key policy without a kms:*
// statement for the account does not hand those to IAM, so no IAM policy
// (an administrator's kms:* on *, the deploy role's) can give them. The
// account keeps PutKeyPolicy, so the policy passes KMS's lockout safety
// check for CloudFormation and whoever deploys, and the key can always be
// managed: an administrator who wants to decrypt must change this policy
// first, which CloudTrail records.
// https://docs.aws.amazon.com/kms/latest/developerguide/key-policy-default.html
// https://docs.aws.amazon.com/kms/latest/APIReference/API_PutKeyPolicy.html
func keyAdministration() awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("KeyAdministration"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
		Actions:    jsii.Strings(KeyAdministrationActions...),
		Resources:  jsii.Strings("*"),
	})
}

// KeyAdministrationActions are the key-management actions administrators
// keep on the stage's keys (keyAdministration): none of them encrypts,
// decrypts, makes a data key or a grant.
var KeyAdministrationActions = []string{
	"kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:ListResourceTags", "kms:ListKeyPolicies",
	"kms:ListGrants", "kms:ListKeyRotations", "kms:PutKeyPolicy", "kms:UpdateKeyDescription", "kms:EnableKey", "kms:DisableKey",
	"kms:EnableKeyRotation", "kms:DisableKeyRotation", "kms:RotateKeyOnDemand", "kms:TagResource", "kms:UntagResource",
	"kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion", "kms:RevokeGrant", "kms:CreateAlias", "kms:UpdateAlias", "kms:DeleteAlias",
}

// secretsKeyUse writes the webhook secrets key's use into its policy: the
// webhooks role may make data keys and decrypt, delivery's decrypt, each
// only under secretsKeyContext; no one else may use it. Each statement
// names the account with the role's ARN as aws:PrincipalArn (rather than
// the role as principal), so both the key policy and the role's own
// policy must allow a call, and the policy stays valid across a role's
// replacement.
// https://docs.aws.amazon.com/kms/latest/developerguide/conditions-aws.html
func (s *Stack) secretsKeyUse() {
	if s.SecretsKey == nil {
		return
	}
	for _, name := range []string{"webhooks", "delivery"} {
		cond := map[string]any{"ArnEquals": map[string]any{"aws:PrincipalArn": s.Functions[name].Role().RoleArn()}}
		maps.Copy(cond, secretsKeyContext)
		s.SecretsKey.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(map[string]string{"webhooks": "SealAndOpenWebhookSecrets", "delivery": "OpenWebhookSecrets"}[name]),
			Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
			Actions:    jsii.Strings(secretsKeyActions(name)...),
			Resources:  jsii.Strings("*"),
			Conditions: &cond,
		}), jsii.Bool(false))
	}
}

// seedConfig makes the stage's secrets (store.ConfigSecrets, in CONFIG) at
// deploy: a custom resource whose handler is the configseed function,
// which puts each one that is not there yet (and never replaces one: a
// changed id key would re-derive every id). Every function that reads the
// table waits for it, so none starts before its secrets exist; none of
// their roles may write CONFIG (grantTable), configseed's may write it
// alone. A new secret name in the list updates the resource, which seeds
// it at the next deploy; deleting the stack leaves them (with the table).
// It also stores the stage's default rate limit (auth's stage limit), which
// scripts/admin counts keys at.
func (s *Stack) seedConfig(p *Props) {
	seeder, ok := s.Functions["configseed"]
	if !ok {
		return
	}
	seed := awscdk.NewCustomResource(s.Stack, jsii.String("StageSecrets"), &awscdk.CustomResourceProps{
		ServiceToken: seeder.FunctionArn(),
		ResourceType: jsii.String("Custom::StageSecrets"),
		// The stage's default rate limit is a property too: a changed
		// RATE_LIMIT_PER_MINUTE updates the resource, which stores it for
		// the admin tool's count of keys against ceilings.
		Properties: &map[string]any{"Secrets": store.ConfigSecrets, "RateLimitPerMinute": strconv.Itoa(p.RateLimit)},
		// A handler that never answers (a failed cold start) fails the
		// deploy after this, not CloudFormation's hour.
		ServiceTimeout: awscdk.Duration_Minutes(jsii.Number(5)),
	})
	for _, fn := range Functions {
		if len(fn.Table) > 0 && !fn.Deploy {
			s.Functions[fn.Name].Node().AddDependency(seed)
		}
	}
}

// LambdaAppLevel is the application log level Lambda filters a stage's
// functions at: the stage's logLevel when it is INFO or lower, else INFO.
// Above INFO the functions drop what is below the stage's level
// themselves (LOG_LEVEL), all but the lines that carry metrics: a metric
// must not depend on the log level (an alarm that reads a WARN line would
// otherwise never fire at ERROR).
func LambdaAppLevel(stageLevel string) string {
	switch stageLevel {
	case "TRACE", "DEBUG", "INFO":
		return stageLevel
	}
	return "INFO"
}

// reserved is a function's reserved concurrency on this stage: the
// dispatcher's from its shards, enrichment's from the register's
// allowance (it takes one record per invocation), the others' as listed.
func (p *Props) reserved(fn Function) float64 {
	switch fn.Name {
	case "dispatcher":
		return float64(p.DispatcherConcurrency)
	case "enrichment":
		return float64(max(p.RegisterConcurrency, 2))
	case "reports":
		return ReportsConcurrency
	}
	return fn.Reserved
}

// grantTable gives a function exactly its table actions: reads on the
// table and (for Queries) each index it queries; writes only as its
// Writes allow them (dynamodb:LeadingKeys, dynamodb:Attributes with
// dynamodb:ReturnValues), with a deny of the endpoints' partitions to an
// action allowed on the organisation's partition alone; and with them the
// use of the table's key when it has a customer-managed one, only through
// DynamoDB (kms:ViaService): the key grants follow the table's, so a new
// function cannot be given one without the other, and none can use the
// key itself.
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html
func (s *Stack) grantTable(f awslambda.Function, fn Function) {
	resources := []*string{s.Table.TableArn()}
	for _, idx := range fn.Indexes { // named, not index/*
		resources = append(resources, jsii.String(*s.Table.TableArn()+"/index/"+idx))
	}
	var reads []string
	writable := map[string]bool{}
	for _, w := range fn.Writes {
		for _, a := range w.Actions {
			writable[a] = true
		}
	}
	for _, a := range fn.Table {
		if !isWrite(a) {
			reads = append(reads, a)
		} else if !writable[a] {
			panic(fmt.Sprintf("function %s: %s is in its table actions but in none of its Writes", fn.Name, a))
		}
	}
	read := &awsiam.PolicyStatementProps{Sid: jsii.String("Table"), Actions: jsii.Strings(reads...), Resources: &resources}
	if len(fn.ReadKeys) > 0 {
		read.Conditions = &map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": patterns(fn.ReadKeys)}}
	}
	f.AddToRolePolicy(awsiam.NewPolicyStatement(read))
	onOrg, onEndpoint := map[string]bool{}, map[string]bool{}
	for i, w := range fn.Writes {
		for _, a := range w.Actions {
			if !slices.Contains(fn.Table, a) {
				panic(fmt.Sprintf("function %s: its Writes allow %s, which is not in its table actions", fn.Name, a))
			}
			onOrg[a] = onOrg[a] || slices.Contains(w.Partitions, OrgPartition)
			onEndpoint[a] = onEndpoint[a] || slices.Contains(w.Partitions, EndpointPartition)
		}
		cond := map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": patterns(w.Partitions)}}
		if len(w.Attributes) > 0 {
			cond["ForAllValues:StringLike"].(map[string]any)["dynamodb:Attributes"] = w.Attributes
			// ALL_OLD and ALL_NEW would return attributes outside the list.
			// IfExists: a write that sends no ReturnValues returns nothing
			// (NONE), whether or not IAM is given the key for it.
			cond["StringEqualsIfExists"] = map[string]any{"dynamodb:ReturnValues": []string{"NONE", "UPDATED_OLD", "UPDATED_NEW"}}
		}
		f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String(fmt.Sprintf("TableWrites%d", i+1)), Actions: jsii.Strings(w.Actions...), Resources: &[]*string{s.Table.TableArn()},
			Conditions: &cond,
		}))
	}
	// O#* matches an endpoint's partition (O#<org>#WH#<endpoint>) too: an
	// action allowed on the organisation's partition but not on its
	// endpoints' is denied there (no organisation or endpoint id holds a #).
	var orgOnly []string
	for _, a := range fn.Table {
		if onOrg[a] && !onEndpoint[a] {
			orgOnly = append(orgOnly, a)
		}
	}
	if len(orgOnly) > 0 {
		f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("NoEndpointPartitions"), Effect: awsiam.Effect_DENY, Actions: jsii.Strings(orgOnly...), Resources: &[]*string{s.Table.TableArn()},
			Conditions: &map[string]any{"ForAnyValue:StringLike": map[string]any{"dynamodb:LeadingKeys": []string{"O#*#*"}}},
		}))
	}
	if key := s.Table.EncryptionKey(); key != nil {
		f.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("TableKeyThroughDynamoDB"),
			Actions:    jsii.Strings("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"),
			Resources:  &[]*string{key.KeyArn()},
			Conditions: &map[string]any{"StringEquals": map[string]any{"kms:ViaService": s.dynamoDBService()}},
		}))
	}
}

// patterns are the partitions' dynamodb:LeadingKeys patterns.
func patterns(ps []Partition) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Pattern())
	}
	return out
}

// dynamoDBService is DynamoDB's kms:ViaService name in the stack's region:
// what a key used for the table sees when DynamoDB (its stream included)
// calls KMS for a principal.
func (s *Stack) dynamoDBService() string { return "dynamodb." + *s.Stack.Region() + ".amazonaws.com" }

// isWrite reports whether a DynamoDB action writes items.
func isWrite(action string) bool {
	switch action {
	case "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem":
		return true
	}
	return false
}

// wireWorkers connects the outbox and the queues: the dispatcher runs on
// every new outbox event (stream, filtered to event inserts) and every
// minute (the sweep); the enrichment and delivery workers consume their
// queues. Every failure path ends somewhere an alarm watches: stream
// batches the dispatcher fails on past their retries or age, and schedule
// events of sweeps that crashed, go to DispatchFailures.
func (s *Stack) wireWorkers(p *Props) {
	d := s.Aliases["dispatcher"]
	// The mapping reads the stream as the table without its key: the CDK
	// would grant the dispatcher the key's Decrypt for an encrypted stream
	// with no condition, where its table statement (grantTable) already
	// allows it through DynamoDB alone (kms:ViaService).
	streamSource := awsdynamodb.Table_FromTableAttributes(s.Stack, jsii.String("TableStream"), &awsdynamodb.TableAttributes{
		TableArn: s.Table.TableArn(), TableStreamArn: s.Table.TableStreamArn(),
	})
	d.AddEventSource(awslambdaeventsources.NewDynamoEventSource(streamSource, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:  awslambda.StartingPosition_LATEST,
		BatchSize:         jsii.Number(100),
		MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(1)),
		// A batch that fails (the function crashed or timed out: events that
		// fail to send are left pending for the sweep, not failed) is split
		// to find the record at fault, retried, and after its retries or an
		// hour goes to DispatchFailures; its events stay pending, so the
		// sweep still sends them.
		RetryAttempts:      jsii.Number(3),
		BisectBatchOnError: jsii.Bool(true),
		MaxRecordAge:       awscdk.Duration_Hours(jsii.Number(1)),
		OnFailure:          awslambdaeventsources.NewSqsDlq(s.DispatchFailures),
		// Inserts of outbox events, and of companies: a company's insert
		// starts its enrichment (its company.created, an event of the
		// feed, goes to webhook subscribers only).
		Filters: &[]*map[string]interface{}{awslambda.FilterCriteria_Filter(&map[string]interface{}{
			"eventName": awslambda.FilterRule_IsEqual("INSERT"),
			"dynamodb":  map[string]interface{}{"NewImage": map[string]interface{}{"kind": map[string]interface{}{"S": []interface{}{"event", "company"}}}},
		})},
	}))
	awsevents.NewRule(s.Stack, jsii.String("outbox-sweep"), &awsevents.RuleProps{
		Description: jsii.String("sweep outbox events that no stream invocation dispatched"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		// No retries of a sweep: the next one runs in a minute, and retried
		// sweeps would only overlap it. A schedule event EventBridge could not
		// deliver goes to DispatchFailures.
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(d, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(0), MaxEventAge: awscdk.Duration_Minutes(jsii.Number(5)), DeadLetterQueue: s.DispatchFailures,
		})},
	})
	// A sweep invocation that crashed or timed out is not retried (the next
	// one comes in a minute), but recorded in DispatchFailures.
	d.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{RetryAttempts: jsii.Number(0),
		OnFailure: awslambdadestinations.NewSqsDestination(s.DispatchFailures)})
	s.Queues["enrichment"].GrantSendMessages(d)
	s.Queues["delivery"].GrantSendMessages(d) // the webhook fan-out

	e := s.Aliases["enrichment"]
	e.AddEventSource(awslambdaeventsources.NewSqsEventSource(s.Queues["enrichment"], &awslambdaeventsources.SqsEventSourceProps{
		// The company register is someone else's service: one lookup per
		// invocation and at most RegisterConcurrency invocations, so no more
		// than its allowance is ever in flight (SQS's minimum is 2).
		BatchSize: jsii.Number(1), ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(float64(max(p.RegisterConcurrency, 2))),
	}))
	s.Queues["enrichment"].GrantSendMessages(e) // retries re-enqueue with a delay

	w := s.Aliases["delivery"]
	w.AddEventSource(awslambdaeventsources.NewSqsEventSource(s.Queues["delivery"], &awslambdaeventsources.SqsEventSourceProps{
		// Many small batches (#40, item 3): a batch's records run at once
		// (app.SQSHandler, partial batch responses), but its invocation
		// lasts as long as its slowest record, so with 10 a receiver that
		// takes seconds held an invocation and nine slots beside it, and
		// 20 such invocations left a quiet organisation's job waiting for
		// one. 2 × 100 is the same 200 jobs in flight as 10 × 20; on make
		// fairness's localcloud run (A's 16 endpoints at 6 s) quiet jobs
		// no longer waited in the queue (waiting in 3 of 13 samples with
		// 10 × 20, none with 2 × 100) and the quiet organisations' p99
		// fell from 6.0–7.9 s to 4.4–5.3 s.
		BatchSize: jsii.Number(2), ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(100),
	}))
	// The synthetic check, every minute; a run that fails is its metric's
	// (and a run that did not happen pages too: its alarm treats missing
	// data as failing), so none is retried.
	awsevents.NewRule(s.Stack, jsii.String("synthetic-check"), &awsevents.RuleProps{
		Description: jsii.String("call the stage as an integrator would, read-only, every minute"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Aliases["synthetic"], &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(0), MaxEventAge: awscdk.Duration_Minutes(jsii.Number(1)),
		})},
	})
	s.Aliases["synthetic"].ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{RetryAttempts: jsii.Number(0)})
	s.Queues["delivery"].GrantSendMessages(w)                       // the next attempt
	s.Queues["delivery"].GrantSendMessages(s.Functions["webhooks"]) // manual retries
}

// backups keeps a protected stage's table in AWS Backup besides its
// point-in-time recovery: a daily recovery point kept 35 days, in a vault
// whose lock stops anyone (a compromised account included) from deleting
// recovery points early, optionally copied to a vault in another account.
func (s *Stack) backups(p *Props) {
	// The vault is retained when its stack goes (a failed first create, a
	// make destroy), so a fixed name would stop the next deploy with
	// AlreadyExists. Its name ends with the last part of the stack's id,
	// which is new for each stack CloudFormation creates and the same for
	// the stack's life (vault names: 2 to 50 of [A-Za-z0-9_-]):
	// practice-api-<stage>-<12 hex digits>.
	// https://docs.aws.amazon.com/aws-backup/latest/devguide/API_CreateBackupVault.html
	stackUUID := awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), awscdk.Aws_STACK_ID(), nil))
	vaultName := awscdk.Fn_Join(jsii.String("-"), &[]*string{jsii.String("practice-api"), jsii.String(p.Stage),
		awscdk.Fn_Select(jsii.Number(4), awscdk.Fn_Split(jsii.String("-"), stackUUID, nil))})
	vault := awsbackup.NewBackupVault(s.Stack, jsii.String("BackupVault"), &awsbackup.BackupVaultProps{
		BackupVaultName: vaultName,
		RemovalPolicy:   awscdk.RemovalPolicy_RETAIN,
		LockConfiguration: &awsbackup.LockConfiguration{
			MinRetention: awscdk.Duration_Days(jsii.Number(35)),
			// Governance for three days after deploy, then compliance mode:
			// no one can shorten retention or remove the lock.
			ChangeableFor: awscdk.Duration_Days(jsii.Number(3)),
		},
	})
	rule := &awsbackup.BackupPlanRuleProps{
		RuleName: jsii.String("daily"), BackupVault: vault,
		ScheduleExpression: awsevents.Schedule_Cron(&awsevents.CronOptions{Hour: jsii.String("3"), Minute: jsii.String("0")}),
		DeleteAfter:        awscdk.Duration_Days(jsii.Number(35)),
	}
	if p.BackupCopyVaultArn != "" {
		rule.CopyActions = &[]*awsbackup.BackupPlanCopyActionProps{{
			DestinationBackupVault: awsbackup.BackupVault_FromBackupVaultArn(s.Stack, jsii.String("BackupCopyVault"), jsii.String(p.BackupCopyVaultArn)),
			DeleteAfter:            awscdk.Duration_Days(jsii.Number(35)),
		}}
	}
	plan := awsbackup.NewBackupPlan(s.Stack, jsii.String("BackupPlan"), &awsbackup.BackupPlanProps{
		BackupPlanName:  jsii.String("practice-api-" + p.Stage),
		BackupPlanRules: &[]awsbackup.BackupPlanRule{awsbackup.NewBackupPlanRule(rule)},
	})
	plan.AddSelection(jsii.String("table"), &awsbackup.BackupSelectionOptions{
		Resources: &[]awsbackup.BackupResource{awsbackup.BackupResource_FromDynamoDbTable(s.Table)},
	})
}

// cloudFront puts a distribution in front of the API: nothing cached
// (every answer is per key), every header but Host forwarded, and the WAF
// web ACL of WafWebAclArn attached, for per-IP rate-based rules.
func (s *Stack) cloudFront(p *Props) {
	origin := jsii.String(p.DomainName) // the execute-api endpoint is off with a custom domain
	if p.DomainName == "" {
		origin = awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), s.API.ApiEndpoint(), nil))
	}
	props := &awscloudfront.DistributionProps{
		Comment: jsii.String("practice-api " + p.Stage),
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin:               awscloudfrontorigins.NewHttpOrigin(origin, &awscloudfrontorigins.HttpOriginProps{}),
			AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
			ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_HTTPS_ONLY,
			CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
			OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
		},
		MinimumProtocolVersion: awscloudfront.SecurityPolicyProtocol_TLS_V1_2_2021,
	}
	if p.WafWebAclArn != "" {
		props.WebAclId = jsii.String(p.WafWebAclArn)
	}
	dist := awscloudfront.NewDistribution(s.Stack, jsii.String("Distribution"), props)
	awscdk.NewCfnOutput(s.Stack, jsii.String("DistributionUrl"), &awscdk.CfnOutputProps{
		Value:       jsii.String("https://" + *dist.DistributionDomainName() + routes.Prefix),
		Description: jsii.String("base URL through CloudFront: set publicBaseUrl to its origin, so links point here"),
	})
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
	s.AccessLogs = logs
	stage := api.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	rate, burst := cmp.Or(p.ThrottleRate, DefaultThrottleRate), cmp.Or(p.ThrottleBurst, DefaultThrottleBurst)
	// Every route has settings of its own, so the stage's default applies
	// to none of today's: it is the floor a route would get that the
	// table somehow missed (API Gateway applies DefaultRouteSettings only
	// to routes without their own).
	floorRate, floorBurst := ScaledRouteThrottle(routes.Route{}, rate, burst)
	if p.Stage == "local" {
		floorRate, floorBurst = rate, burst
	}
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		ThrottlingRateLimit: jsii.Number(floorRate), ThrottlingBurstLimit: jsii.Number(floorBurst),
		DetailedMetricsEnabled: jsii.Bool(true), // per-route metrics, for per-route latency alarms
	})
	// Each keyed route is throttled from the traffic model (traffic.go),
	// scaled by the stage's throttleRate and throttleBurst: a flood of one
	// route stops at the gateway, whatever keys it uses, and one setting
	// moves every route (the runbook's write freeze sets it very low).
	// Routes that need no key have no per-client limit either: a client
	// that floods them must not take the stage's whole budget.
	settings := map[string]any{}
	for _, rt := range routes.Table {
		if rt.Public {
			continue
		}
		r, b := ScaledRouteThrottle(rt, rate, burst)
		if p.Stage == "local" { // the black-box suites' bursts, as the devserver takes them
			r, b = rate, burst
		}
		// RouteSettings is free-form JSON in CloudFormation: its keys are
		// written as the resource wants them (a struct would go out in camelCase).
		settings[rt.Method+" "+routes.Prefix+rt.Path] = map[string]any{"ThrottlingRateLimit": r, "ThrottlingBurstLimit": b, "DetailedMetricsEnabled": true}
	}
	for _, key := range publicRouteKeys() {
		settings[key] = map[string]any{"ThrottlingRateLimit": p.PublicThrottleRate, "ThrottlingBurstLimit": p.PublicThrottleBurst,
			"DetailedMetricsEnabled": true}
	}
	stage.SetRouteSettings(settings)
	format, _ := json.Marshal(AccessLogFormat)
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(), Format: jsii.String(string(format)),
	})
}

// AccessLogFormat is the gateway's access log line. It names the route by
// its key (GET /api/v1/people/{id}), never by the path the client sent:
// a path or query may hold a CPR number, and this log is kept for a year,
// outside the app's redaction (the app's own request log carries the
// redacted path, under the same requestId). TestAccessLogCarriesNoRawPath
// holds every field to this list's variables.
var AccessLogFormat = map[string]string{
	"requestId": "$context.requestId", "routeKey": "$context.routeKey", "status": "$context.status",
	"integrationError": "$context.integrationErrorMessage", "integrationStatus": "$context.integrationStatus",
	"latencyMs": "$context.responseLatency", "integrationLatencyMs": "$context.integrationLatency",
	"method": "$context.httpMethod", "ip": "$context.identity.sourceIp", "time": "$context.requestTimeEpoch",
	"apiId": "$context.apiId", // the access log's metrics' dimension (metric filters take it from the line)
	// The function's request id: the X-Request-Id the API answers and its
	// own log lines carry, so a line an integrator quotes joins this one.
	"integrationRequestId": "$context.integration.requestId",
}

// publicRouteKeys are the route keys that need no key: $default and the
// public rows of the route table.
func publicRouteKeys() []string {
	keys := []string{"$default"}
	for _, rt := range routes.Table {
		if rt.Public {
			keys = append(keys, rt.Method+" "+routes.Prefix+rt.Path)
		}
	}
	return keys
}

// newAPIBase creates the HTTP API (payload v2) and its stage, on the
// custom domain when the stage has one (and then only there); addRoutes
// adds its routes once the functions exist.
func (s *Stack) newAPIBase(p *Props) awsapigatewayv2.HttpApi {
	apiProps := &awsapigatewayv2.HttpApiProps{
		ApiName:     jsii.String("practice-api-" + p.Stage),
		Description: jsii.String("Practice API /api/v1 (" + p.Stage + ")"),
		// No CORS: integrators call the API from servers with a secret key,
		// which must never sit in a browser (docs/api.md).
	}
	if p.DomainName != "" {
		domain := awsapigatewayv2.NewDomainName(s.Stack, jsii.String("Domain"), &awsapigatewayv2.DomainNameProps{
			DomainName:  jsii.String(p.DomainName),
			Certificate: awscertificatemanager.Certificate_FromCertificateArn(s.Stack, jsii.String("DomainCertificate"), jsii.String(p.CertificateArn)),
		})
		apiProps.DefaultDomainMapping = &awsapigatewayv2.DomainMappingOptions{DomainName: domain}
		// One way in: the execute-api URL would bypass the domain's links
		// and anything put in front of the domain.
		apiProps.DisableExecuteApiEndpoint = jsii.Bool(true)
		awscdk.NewCfnOutput(s.Stack, jsii.String("DomainTarget"), &awscdk.CfnOutputProps{
			Value:       domain.RegionalDomainName(),
			Description: jsii.String("point the custom domain's DNS (CNAME or alias) here"),
		})
	}
	api := awsapigatewayv2.NewHttpApi(s.Stack, jsii.String("Api"), apiProps)
	s.guardStage(api, p)
	return api
}

// addRoutes gives the API one route per row of the route table, each to
// its family's function, and $default: what matches no route goes to the
// meta function, which answers as the API does (JSON 404, or 405 with
// Allow, with a request id), not with API Gateway's own {"message":"Not
// Found"}.
func (s *Stack) addRoutes() {
	api := s.API
	integrations := map[string]awsapigatewayv2integrations.HttpLambdaIntegration{}
	for _, fn := range Functions {
		if fn.Family != "" {
			integrations[fn.Family] = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(fn.Name+"-integration"), s.Aliases[fn.Name],
				&awsapigatewayv2integrations.HttpLambdaIntegrationProps{PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0()})
		}
	}
	added := []constructs.IDependable{awsapigatewayv2.NewHttpRoute(api, jsii.String("DefaultRoute"), &awsapigatewayv2.HttpRouteProps{
		HttpApi: api, RouteKey: awsapigatewayv2.HttpRouteKey_DEFAULT(), Integration: integrations[routes.Meta],
	})}
	for _, rt := range routes.Table {
		integ, ok := integrations[rt.Family]
		if !ok {
			panic(fmt.Sprintf("route %s: family %s has no function in infra/functions.go", rt.Name, rt.Family))
		}
		for _, r := range *api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(routes.Prefix + rt.Path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(rt.Method)},
			Integration: integ,
		}) {
			added = append(added, r)
		}
	}
	// The stage's RouteSettings name every route: API Gateway refuses a
	// stage whose settings name a route that does not exist yet
	// (NotFoundException: Unable to find Route by key …), so the stage
	// waits for them all (infra's TestDeployOrder).
	api.DefaultStage().Node().AddDependency(added...)
}
