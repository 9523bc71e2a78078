package main

import (
	"maps"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// suppressNag records, next to the stack, each cdk-nag finding (AwsSolutions
// and Serverless packs) that stays, with why; infra's TestCdkNag fails on
// any other.
func suppressNag(s *Stack) {
	suppress := func(construct any, children bool, id, reason string, appliesTo ...string) {
		var at *[]any
		if len(appliesTo) > 0 {
			list := make([]any, len(appliesTo))
			for i, a := range appliesTo {
				list[i] = a
			}
			at = &list
		}
		cdknag.NagSuppressions_AddResourceSuppressions(construct, &[]*cdknag.NagPackSuppression{
			{Id: jsii.String(id), Reason: jsii.String(reason), AppliesTo: at},
		}, jsii.Bool(children))
	}
	suppress(s.API, true, "AwsSolutions-APIG4",
		"The API authorizes in its functions, by design: bearer keys checked against their SHA-256 hashes in the same conditional "+
			"write that counts the rate limit, with per-operation scopes. A gateway authorizer would add an invocation per request "+
			"and cache decisions, so a revoked key would not stop at the very next request (the spec's rule). Public routes "+
			"(the document, the reference page, the catch-all) need none.")
	// Dead-letter queues need no dead-letter queue of their own: a message
	// there already failed, and an alarm watches each one's depth.
	for _, q := range append(mapsValues(s.DLQs), s.DispatchFailures, s.AlarmDeliveryFailures) {
		if q == nil {
			continue
		}
		suppress(q, true, "AwsSolutions-SQS3", "This queue is itself a dead-letter queue (or a failure destination): what lands here already failed, and its depth raises an alarm.")
		suppress(q, true, "Serverless-SQSRedrivePolicy", "This queue is itself a dead-letter queue (or a failure destination): a redrive policy on it would only move failures further from the alarm that watches it.")
	}
	for _, name := range slices.Sorted(maps.Keys(s.Functions)) {
		f := s.Functions[name]
		suppress(f, true, "Serverless-LambdaTracing", "X-Ray is off by decision (docs/cost-model.md): the functions carry no X-Ray "+
			"instrumentation, so a trace held only Lambda's own segment, which the REPORT line, Lambda's metrics and the request "+
			"metrics per version already give, for about $660 a month at 1,000 requests a second. The X-Request-Id an integrator "+
			"quotes joins the function's lines and the gateway's access log (integrationRequestId) instead.")
		switch name {
		case "dispatcher":
			suppress(f, true, "Serverless-LambdaDLQ", "Its asynchronous invocations (the schedule) have an on-failure destination, the dispatch-failures queue "+
				"(EventInvokeConfig): a destination records the failed invocation with its error, which a DLQ would not; both would send each failure twice.")
		case "releasecheck":
			suppress(f, true, "Serverless-LambdaDLQ", "CodeDeploy invokes it as a deployment's pre-traffic hook and waits for its answer; a run that fails or never answers fails the deployment (CodeDeploy's hook timeout), which rolls back: a dead-letter queue would hold nothing anyone acts on.")
			suppress(f, true, "Serverless-LambdaAsyncFailureDestination", "CodeDeploy invokes it as a deployment's pre-traffic hook; a failure fails and rolls back that deployment, which is where it is seen.")
		case "configseed":
			suppress(f, true, "Serverless-LambdaDLQ", "CloudFormation invokes it as the StageSecrets custom resource and waits for its answer; a run that fails or never answers fails the deploy, which is where it is seen.")
			suppress(f, true, "Serverless-LambdaAsyncFailureDestination", "CloudFormation invokes it as the StageSecrets custom resource; a failure fails that deploy, which rolls back.")
		case "synthetic":
			suppress(f, true, "Serverless-LambdaDLQ", "Invoked only by its one-minute schedule; a run that failed or never ran is what its alarm watches (missing data counts as failing), so a dead-letter queue would only hold what already paged.")
		case "enrichment", "delivery":
			suppress(f, true, "Serverless-LambdaDLQ", "Invoked only by its SQS event source mapping, never asynchronously: failed messages go to the queue's own dead-letter queue after five receives.")
			suppress(f, true, "Serverless-LambdaEventSourceMappingDestination", "SQS event source mappings take no on-failure destination; "+
				"the queue's redrive policy (five receives, then its dead-letter queue, with an alarm) is the failure path. Partial batch failures are reported.")
		default:
			suppress(f, true, "Serverless-LambdaDLQ", "Invoked only synchronously, by API Gateway: a failure is the caller's answer (a JSON 5xx), and nothing is queued to retry.")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Aliases)) {
		a := s.Aliases[name]
		if name == "enrichment" || name == "delivery" { // their SQS mappings hang off the alias they invoke
			suppress(a, true, "Serverless-LambdaEventSourceMappingDestination", "SQS event source mappings take no on-failure destination; "+
				"the queue's redrive policy (five receives, then its dead-letter queue, with an alarm) is the failure path. Partial batch failures are reported.")
		}
	}
	if r := s.Node().TryFindChild(jsii.String("synthetic-check")); r != nil {
		suppress(r, true, "Serverless-EventBusDLQ", "The synthetic check's schedule: an event EventBridge could not deliver is a minute without a check, which its alarm treats as failing and pages; the next minute's event is the retry.")
	}
	if a := s.Aliases["synthetic"]; a != nil {
		suppress(a, true, "Serverless-LambdaAsyncFailureDestination", "The synthetic check's failed runs are recorded as its metric (SyntheticCheckFailures) and page through its alarm; a failure destination would hold what already paged.")
	}
	if h := s.Functions["releasecheck"]; h != nil {
		suppress(h.Role(), true, "AwsSolutions-IAM5", "The release check invokes the version being released, which it learns from the deployment: <function ARN>:* is that function's versions and aliases and nothing else "+
			"(one statement per function).")
	}
	for _, fn := range Functions {
		if g := s.Node().TryFindChild(jsii.String(fn.Name + "-release")); g != nil {
			suppress(g, true, "AwsSolutions-IAM5", "CodeDeploy's role may invoke the release check's versions and aliases (<releasecheck ARN>:*), as the CDK grants it for a pre-traffic hook; nothing else.",
				"Resource::<releasecheckF526EFCA.Arn>:*")
			suppress(g, true, "AwsSolutions-IAM4", "The role CodeDeploy assumes to shift the function's alias carries AWS's managed policy for it, "+
				"AWSCodeDeployRoleForLambdaLimited, as CodeDeploy documents: it may only update aliases and read the deployment's alarms.",
				"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited")
		}
	}
	if p := s.Node().TryFindChild(jsii.String("BackupPlan")); p != nil {
		suppress(p, true, "AwsSolutions-IAM4", "The role AWS Backup assumes carries AWS's managed policy for it, AWSBackupServiceRolePolicyForBackup, as AWS Backup documents; "+
			"it is scoped to backup operations and maintained by AWS as DynamoDB's backup APIs change.",
			"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup")
	}
	if d := s.Functions["dispatcher"]; d != nil {
		// The role is the function's own (newFunction), beside it in the tree.
		suppress(d.Role(), true, "AwsSolutions-IAM5",
			"Resource * is required by dynamodb:ListStreams (the stream trigger), which has no resource. Every table action names "+
				"the table and its index, and the log actions the function's own log group.",
			"Resource::*")
		suppress(d, true, "AwsSolutions-IAM5",
			"Resource * is required by dynamodb:ListStreams (the stream trigger), which has no resource. Every table action names the table and its index.",
			"Resource::*")
	}
}

func mapsValues(m map[string]awssqs.Queue) []awssqs.Queue { return slices.Collect(maps.Values(m)) }
