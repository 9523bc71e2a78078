package main

import (
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// suppressNag records, next to the stack, each cdk-nag finding (AwsSolutions
// pack) that stays, with why; infra's TestCdkNag fails on any other.
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
	for _, f := range s.Functions {
		suppress(f, true, "AwsSolutions-IAM4",
			"AWSLambdaBasicExecutionRole only lets the function write its own logs (CreateLogGroup, CreateLogStream, PutLogEvents); "+
				"writing that policy by hand would repeat it exactly.",
			"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole")
		suppress(f, true, "AwsSolutions-IAM5",
			"Resource * is required by the two actions that have no resource: xray:PutTraceSegments/PutTelemetryRecords (tracing) "+
				"and dynamodb:ListStreams (the dispatcher's stream trigger). Every table action names the table and its indexes.",
			"Resource::*")
	}
}
