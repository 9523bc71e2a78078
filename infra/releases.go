package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodedeploy"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/metrics"
)

// Deployments are the ways a stage may shift a release's traffic
// (setting deployment): CodeDeploy's predefined configurations for Lambda.
var Deployments = map[string]func() awscodedeploy.ILambdaDeploymentConfig{
	"allAtOnce":                     awscodedeploy.LambdaDeploymentConfig_ALL_AT_ONCE,
	"canary10Percent5Minutes":       awscodedeploy.LambdaDeploymentConfig_CANARY_10PERCENT_5MINUTES,
	"canary10Percent10Minutes":      awscodedeploy.LambdaDeploymentConfig_CANARY_10PERCENT_10MINUTES,
	"canary10Percent15Minutes":      awscodedeploy.LambdaDeploymentConfig_CANARY_10PERCENT_15MINUTES,
	"canary10Percent30Minutes":      awscodedeploy.LambdaDeploymentConfig_CANARY_10PERCENT_30MINUTES,
	"linear10PercentEvery1Minute":   awscodedeploy.LambdaDeploymentConfig_LINEAR_10PERCENT_EVERY_1MINUTE,
	"linear10PercentEvery2Minutes":  awscodedeploy.LambdaDeploymentConfig_LINEAR_10PERCENT_EVERY_2MINUTES,
	"linear10PercentEvery3Minutes":  awscodedeploy.LambdaDeploymentConfig_LINEAR_10PERCENT_EVERY_3MINUTES,
	"linear10PercentEvery10Minutes": awscodedeploy.LambdaDeploymentConfig_LINEAR_10PERCENT_EVERY_10MINUTES,
}

// DefaultDeployment is a stage's when it sets none: protected stages try a
// release on a tenth of the traffic for ten minutes first, long enough for
// its one-minute alarms to see it (docs/releases.md has the arithmetic);
// dev and local move at once.
func (p *Props) DefaultDeployment() string {
	if p.Protected() {
		return "canary10Percent10Minutes"
	}
	return "allAtOnce"
}

// versionAlarms are the alarms that roll a function's release back: they
// watch the new version alone (its Version dimension follows the version
// CloudFormation just published, and an old version's alarm state cannot
// stop a later deploy), in one-minute periods, 2 of 3, on what users see:
// every function's invocation errors of that version (a crash, a timeout,
// a handler error: the gateway answers 500, the queue retries); for the
// API's functions, the version's share of 5xx answers (the handlers
// answer panics and store outages with JSON 500/503, which Lambda counts
// as successes) and its p99 latency, from the request metrics each access
// log line carries (shared/metrics, EMF); for the keyed families, its
// share of 4xx (a release that answers 401 to everyone).
// https://docs.aws.amazon.com/codedeploy/latest/userguide/monitoring-create-alarms.html
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html (ExecutedVersion)
func (s *Stack) versionAlarms(fn Function, p *Props) []awscloudwatch.IAlarm {
	f := s.Functions[fn.Name]
	version := f.CurrentVersion().Version()
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	rb := runbook{"release-rollback", high}
	emf := func(name, stat string) awscloudwatch.IMetric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(MetricNamespace), MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{"Stage": jsii.String(p.Stage), "Function": f.FunctionName(), "Version": version},
			Period:        minute, Statistic: jsii.String(stat)})
	}
	share := func(expr string, of string) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{Expression: jsii.String(expr), Period: minute,
			UsingMetrics: &map[string]awscloudwatch.IMetric{"part": emf(of, "Sum"), "requests": emf(metrics.Requests, "Sum")}})
	}
	alarms := []awscloudwatch.IAlarm{
		s.alarm(fn.Name+"-version-errors", rb, fn.Name+": the version being released failed invocations in 2 of 3 minutes (its release rolls back)",
			awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("AWS/Lambda"), MetricName: jsii.String("Errors"),
				DimensionsMap: &map[string]*string{"FunctionName": f.FunctionName(), "Resource": jsii.String(*f.FunctionName() + ":live"), "ExecutedVersion": version},
				Period:        minute, Statistic: jsii.String("Sum")}), 0, 2, 3),
	}
	if fn.Family == "" {
		return alarms
	}
	threshold := 1000.0
	if fn.Family == routes.Reports {
		threshold = 15_000
	}
	alarms = append(alarms,
		s.alarm(fn.Name+"-version-5xx", rb, fn.Name+": the version being released answered more than 1% 5xx (at least 2) in 2 of 3 minutes (its release rolls back)",
			share("IF(part >= 2, 100 * part / requests, 0)", metrics.ServerErrors), 1, 2, 3),
		s.alarm(fn.Name+"-version-latency", rb, fmt.Sprintf("%s: the version being released answered with p99 latency over %.0f ms in 2 of 3 minutes (its release rolls back)", fn.Name, threshold),
			emf(metrics.Latency, "p99"), threshold, 2, 3),
	)
	if fn.Family != routes.Meta {
		alarms = append(alarms, s.alarm(fn.Name+"-version-4xx", rb, fn.Name+": the version being released answered more than half its requests 4xx (at least 10 requests) in 2 of 3 minutes (its release rolls back)",
			share("IF(requests >= 10, 100 * part / requests, 0)", metrics.ClientErrors), 50, 2, 3))
	}
	return alarms
}

// checkDeployment refuses a deployment that CodeDeploy does not have.
func checkDeployment(name string) error {
	if _, ok := Deployments[name]; !ok {
		return fmt.Errorf("deployment %q: use one of %s", name, strings.Join(slices.Sorted(maps.Keys(Deployments)), ", "))
	}
	return nil
}

// releases puts each function's live alias under CodeDeploy: a deploy that
// changes a function publishes a version, and CodeDeploy shifts the alias
// onto it as the stage's deployment says, rolling back by itself when one
// of the new version's alarms fires meanwhile (versionAlarms), or the
// deployment fails or is stopped.
func (s *Stack) releases(p *Props) {
	app := awscodedeploy.NewLambdaApplication(s.Stack, jsii.String("releases"), &awscodedeploy.LambdaApplicationProps{
		ApplicationName: jsii.String("practice-api-" + p.Stage),
	})
	hook := s.Functions["releasecheck"]
	functions, groups := map[string]*string{}, map[string]*string{}
	for _, fn := range Functions {
		if fn.Hook || fn.Deploy {
			continue
		}
		functions[cmp.Or(fn.Family, fn.Name)] = s.Functions[fn.Name].FunctionName()
		// The check invokes the new version (and the other functions'
		// live aliases, for the smoke checks' other paths).
		hook.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("lambda:InvokeFunction"), Resources: &[]*string{jsii.String(*s.Functions[fn.Name].FunctionArn() + ":*")},
		}))
	}
	for _, fn := range Functions {
		if fn.Hook || fn.Deploy {
			continue
		}
		s.ReleaseAlarms[fn.Name] = s.versionAlarms(fn, p)
		var alarms []interfacesawscloudwatch.IAlarmRef
		for _, a := range s.ReleaseAlarms[fn.Name] {
			alarms = append(alarms, a)
		}
		group := awscodedeploy.NewLambdaDeploymentGroup(s.Stack, jsii.String(fn.Name+"-release"), &awscodedeploy.LambdaDeploymentGroupProps{
			Application: app, Alias: s.Aliases[fn.Name], DeploymentConfig: Deployments[p.Deployment](),
			Alarms: &alarms,
			// Before any traffic: the smoke checks against the new version.
			PreHook: hook,
			AutoRollback: &awscodedeploy.AutoRollbackConfig{
				FailedDeployment: jsii.Bool(true), StoppedDeployment: jsii.Bool(true), DeploymentInAlarm: jsii.Bool(true),
			},
		})
		// The alias's update starts the deployment: its UpdatePolicy's
		// reference to the group orders the group (and the alarms it names,
		// which follow the new version) first (infra's TestDeployOrder).
		groups[cmp.Or(fn.Family, fn.Name)] = group.DeploymentGroupName()
		hook.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("codedeploy:GetDeployment"), Resources: &[]*string{group.DeploymentGroupArn()},
		}))
	}
	s.hookEnvironment(functions, groups)
}

// hookEnvironment tells the release check which function each family (or
// worker) is, and which deployment group releases it.
func (s *Stack) hookEnvironment(functions, groups map[string]*string) {
	hook := s.Functions["releasecheck"]
	hook.AddEnvironment(jsii.String("RELEASE_FUNCTIONS"), s.Stack.ToJsonString(functions, nil), nil)
	hook.AddEnvironment(jsii.String("RELEASE_GROUPS"), s.Stack.ToJsonString(groups, nil), nil)
}
