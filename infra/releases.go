package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscodedeploy"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"
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
// release on a tenth of the traffic for five minutes first; dev and local
// move at once.
func (p *Props) DefaultDeployment() string {
	if p.Protected() {
		return "canary10Percent5Minutes"
	}
	return "allAtOnce"
}

// checkDeployment refuses a deployment that CodeDeploy does not have.
func checkDeployment(name string) error {
	if _, ok := Deployments[name]; !ok {
		var known []string
		for k := range Deployments {
			known = append(known, k)
		}
		return fmt.Errorf("deployment %q: use one of %s", name, strings.Join(sortStrings(known), ", "))
	}
	return nil
}

// releases puts each function's live alias under CodeDeploy: a deploy that
// changes a function publishes a version, and CodeDeploy shifts the alias
// onto it as the stage's deployment says, rolling back by itself when the
// function's errors or duration alarm fires meanwhile (or the deployment
// fails or is stopped).
func (s *Stack) releases(p *Props) {
	app := awscodedeploy.NewLambdaApplication(s.Stack, jsii.String("releases"), &awscodedeploy.LambdaApplicationProps{
		ApplicationName: jsii.String("practice-api-" + p.Stage),
	})
	for _, fn := range Functions {
		var alarms []interfacesawscloudwatch.IAlarmRef
		for _, a := range s.ReleaseAlarms[fn.Name] {
			alarms = append(alarms, a)
		}
		group := awscodedeploy.NewLambdaDeploymentGroup(s.Stack, jsii.String(fn.Name+"-release"), &awscodedeploy.LambdaDeploymentGroupProps{
			Application: app, Alias: s.Aliases[fn.Name], DeploymentConfig: Deployments[p.Deployment](),
			Alarms: &alarms,
			AutoRollback: &awscodedeploy.AutoRollbackConfig{
				FailedDeployment: jsii.Bool(true), StoppedDeployment: jsii.Bool(true), DeploymentInAlarm: jsii.Bool(true),
			},
		})
		// The alias's update starts the deployment: its group and the
		// alarms the group watches (which follow the new version) are
		// updated first (infra's TestDeployOrder).
		s.Aliases[fn.Name].Node().AddDependency(group)
	}
}

func sortStrings(s []string) []string { slices.Sort(s); return s }
