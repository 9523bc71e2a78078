package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// fakeAccount is a stage's functions, aliases and deployments.
type fakeAccount struct {
	aliases  map[string]*lambda.GetAliasOutput // function → its live alias
	versions map[string][]string
	running  map[string][]string // deployment group → deployments in progress
	stopped  []string
}

func (f *fakeAccount) DescribeStackResources(context.Context, *cloudformation.DescribeStackResourcesInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourcesOutput, error) {
	res := func(id, typ, phys string) cfntypes.StackResource {
		return cfntypes.StackResource{LogicalResourceId: aws.String(id), ResourceType: aws.String(typ), PhysicalResourceId: aws.String(phys)}
	}
	return &cloudformation.DescribeStackResourcesOutput{StackResources: []cfntypes.StackResource{
		res("matters1BB0ED14", "AWS::Lambda::Function", "fn-matters"), res("mattersrelease8053EE0F", "AWS::CodeDeploy::DeploymentGroup", "dg-matters"),
		res("delivery5ED78C03", "AWS::Lambda::Function", "fn-delivery"), res("deliveryrelease3101B850", "AWS::CodeDeploy::DeploymentGroup", "dg-delivery"),
	}}, nil
}

func (f *fakeAccount) GetAlias(_ context.Context, in *lambda.GetAliasInput, _ ...func(*lambda.Options)) (*lambda.GetAliasOutput, error) {
	return f.aliases[*in.FunctionName], nil
}

func (f *fakeAccount) ListVersionsByFunction(_ context.Context, in *lambda.ListVersionsByFunctionInput, _ ...func(*lambda.Options)) (*lambda.ListVersionsByFunctionOutput, error) {
	out := &lambda.ListVersionsByFunctionOutput{}
	for _, v := range f.versions[*in.FunctionName] {
		out.Versions = append(out.Versions, lambdatypes.FunctionConfiguration{Version: aws.String(v)})
	}
	return out, nil
}

func (f *fakeAccount) UpdateAlias(_ context.Context, in *lambda.UpdateAliasInput, _ ...func(*lambda.Options)) (*lambda.UpdateAliasOutput, error) {
	f.aliases[*in.FunctionName] = &lambda.GetAliasOutput{FunctionVersion: in.FunctionVersion, RoutingConfig: in.RoutingConfig}
	return &lambda.UpdateAliasOutput{}, nil
}

func (f *fakeAccount) ListDeployments(_ context.Context, in *codedeploy.ListDeploymentsInput, _ ...func(*codedeploy.Options)) (*codedeploy.ListDeploymentsOutput, error) {
	return &codedeploy.ListDeploymentsOutput{Deployments: f.running[*in.DeploymentGroupName]}, nil
}

func (f *fakeAccount) StopDeployment(_ context.Context, in *codedeploy.StopDeploymentInput, _ ...func(*codedeploy.Options)) (*codedeploy.StopDeploymentOutput, error) {
	f.stopped = append(f.stopped, *in.DeploymentId)
	return &codedeploy.StopDeploymentOutput{}, nil
}

// TestRollbackMovesAliasesBackWithoutCloudFormation: a function mid-canary
// (its alias at version 7 with a tenth to 8) has its deployment stopped
// and goes back to 7 alone; a function after a release (at 12, versions
// 3, 9, 11, 12) goes back to 11; FUNCTION picks one; a function with no
// earlier version is an error.
func TestRollbackMovesAliasesBackWithoutCloudFormation(t *testing.T) {
	f := &fakeAccount{
		aliases: map[string]*lambda.GetAliasOutput{
			"fn-matters":  {FunctionVersion: aws.String("7"), RoutingConfig: &lambdatypes.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{"8": 0.1}}},
			"fn-delivery": {FunctionVersion: aws.String("12")},
		},
		versions: map[string][]string{"fn-delivery": {"$LATEST", "3", "9", "11", "12"}},
		running:  map[string][]string{"dg-matters": {"d-123"}},
	}
	r := &Rollback{CloudFormation: f, Lambda: f, CodeDeploy: f}
	var out bytes.Buffer
	if err := r.Run(context.Background(), "prod", "", &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "delivery: live 12 → 11\nmatters: live 7 (8 at 10%) → 7 (deployment d-123 stopped)\n" {
		t.Fatalf("got:\n%s", got)
	}
	if m := f.aliases["fn-matters"]; *m.FunctionVersion != "7" || len(m.RoutingConfig.AdditionalVersionWeights) != 0 || len(f.stopped) != 1 {
		t.Fatalf("matters' alias %v, stopped %v", m, f.stopped)
	}
	out.Reset()
	if err := r.Run(context.Background(), "prod", "delivery", &out); err != nil || out.String() != "delivery: live 11 → 9\n" {
		t.Fatalf("FUNCTION=delivery: %v %q", err, out.String())
	}
	f.versions["fn-delivery"] = []string{"9"}
	f.aliases["fn-delivery"] = &lambda.GetAliasOutput{FunctionVersion: aws.String("9")}
	out.Reset()
	if err := r.Run(context.Background(), "prod", "delivery", &out); err == nil || !strings.Contains(out.String(), "no version before 9") {
		t.Fatalf("nothing to go back to: %v %q", err, out.String())
	}
}
