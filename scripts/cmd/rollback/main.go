// Command rollback is the break-glass rollback of a stage's functions:
// each function's live alias goes back to its previous version at once,
// without CloudFormation and without CodeDeploy's alarms (a deployment in
// progress is stopped first, so it cannot shift the alias again). One line
// per function.
//
//	make rollback STAGE=prod                    # every function
//	make rollback STAGE=prod FUNCTION=matters   # one
//
// "Previous" is: while a release shifts (the alias routes a share to a new
// version), the version that served before it; otherwise the highest
// published version below the one the alias serves. The stack still
// names the newer version: the next deploy that changes the function
// shifts from the rolled-back version to its new one (docs/operations.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// The calls the rollback makes (tests answer them with the SDK's types).
type (
	CloudFormationAPI interface {
		DescribeStackResources(ctx context.Context, in *cloudformation.DescribeStackResourcesInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourcesOutput, error)
	}
	LambdaAPI interface {
		GetAlias(ctx context.Context, in *lambda.GetAliasInput, opts ...func(*lambda.Options)) (*lambda.GetAliasOutput, error)
		ListVersionsByFunction(ctx context.Context, in *lambda.ListVersionsByFunctionInput, opts ...func(*lambda.Options)) (*lambda.ListVersionsByFunctionOutput, error)
		UpdateAlias(ctx context.Context, in *lambda.UpdateAliasInput, opts ...func(*lambda.Options)) (*lambda.UpdateAliasOutput, error)
	}
	CodeDeployAPI interface {
		ListDeployments(ctx context.Context, in *codedeploy.ListDeploymentsInput, opts ...func(*codedeploy.Options)) (*codedeploy.ListDeploymentsOutput, error)
		StopDeployment(ctx context.Context, in *codedeploy.StopDeploymentInput, opts ...func(*codedeploy.Options)) (*codedeploy.StopDeploymentOutput, error)
	}
)

// Rollback holds the clients.
type Rollback struct {
	CloudFormation CloudFormationAPI
	Lambda         LambdaAPI
	CodeDeploy     CodeDeployAPI
}

func main() {
	stage := flag.String("stage", "", "the stage (PracticeApi-<stage>)")
	function := flag.String("function", "", "one function (its name under functions/); all when empty")
	flag.Parse()
	if *stage == "" {
		fmt.Fprintln(os.Stderr, "rollback: -stage is required")
		os.Exit(2)
	}
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rollback:", err)
		os.Exit(2)
	}
	r := &Rollback{CloudFormation: cloudformation.NewFromConfig(cfg), Lambda: lambda.NewFromConfig(cfg), CodeDeploy: codedeploy.NewFromConfig(cfg)}
	if err := r.Run(ctx, *stage, *function, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rollback:", err)
		os.Exit(1)
	}
}

// Run rolls back stage's functions (or the one named), one line each to out.
func (r *Rollback) Run(ctx context.Context, stage, function string, out io.Writer) error {
	res, err := r.CloudFormation.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String("PracticeApi-" + stage)})
	if err != nil {
		return err
	}
	// The function names under functions/ are the logical ids' prefixes:
	// <name><hash> for the function, <name>release<hash> for its group.
	fns, groups := map[string]string{}, map[string]string{}
	for _, sr := range res.StackResources {
		id, phys := aws.ToString(sr.LogicalResourceId), aws.ToString(sr.PhysicalResourceId)
		switch aws.ToString(sr.ResourceType) {
		case "AWS::Lambda::Function":
			fns[strings.TrimRight(id, "0123456789ABCDEF")] = phys
		case "AWS::CodeDeploy::DeploymentGroup":
			if name, ok := strings.CutSuffix(strings.TrimRight(id, "0123456789ABCDEF"), "release"); ok {
				groups[name] = phys
			}
		}
	}
	names := make([]string, 0, len(fns))
	for n := range fns {
		if function == "" || n == function {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("no function %q in PracticeApi-%s", function, stage)
	}
	sort.Strings(names)
	var failed []string
	for _, n := range names {
		line, err := r.one(ctx, stage, fns[n], groups[n])
		if err != nil {
			failed = append(failed, n)
			fmt.Fprintf(out, "%s: %v\n", n, err)
			continue
		}
		fmt.Fprintf(out, "%s: %s\n", n, line)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d function(s) not rolled back: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// one rolls one function's live alias back.
func (r *Rollback) one(ctx context.Context, stage, fn, group string) (string, error) {
	stopped := ""
	if group != "" {
		ds, err := r.CodeDeploy.ListDeployments(ctx, &codedeploy.ListDeploymentsInput{ApplicationName: aws.String("practice-api-" + stage), DeploymentGroupName: aws.String(group),
			IncludeOnlyStatuses: []cdtypes.DeploymentStatus{cdtypes.DeploymentStatusCreated, cdtypes.DeploymentStatusQueued, cdtypes.DeploymentStatusInProgress, cdtypes.DeploymentStatusReady}})
		if err != nil {
			return "", fmt.Errorf("list its deployments: %w", err)
		}
		for _, id := range ds.Deployments {
			if _, err := r.CodeDeploy.StopDeployment(ctx, &codedeploy.StopDeploymentInput{DeploymentId: aws.String(id), AutoRollbackEnabled: aws.Bool(false)}); err != nil {
				return "", fmt.Errorf("stop deployment %s: %w", id, err)
			}
			stopped += " (deployment " + id + " stopped)"
		}
	}
	alias, err := r.Lambda.GetAlias(ctx, &lambda.GetAliasInput{FunctionName: aws.String(fn), Name: aws.String("live")})
	if err != nil {
		return "", fmt.Errorf("its live alias: %w", err)
	}
	current := aws.ToString(alias.FunctionVersion)
	target := ""
	if rc := alias.RoutingConfig; rc != nil && len(rc.AdditionalVersionWeights) > 0 {
		target = current // mid-release: the primary is the version that served before
	} else {
		cur, err := strconv.Atoi(current)
		if err != nil {
			return "", fmt.Errorf("the alias serves %q, not a published version", current)
		}
		best := 0
		p := lambda.NewListVersionsByFunctionPaginator(r.Lambda, &lambda.ListVersionsByFunctionInput{FunctionName: aws.String(fn)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return "", fmt.Errorf("list its versions: %w", err)
			}
			for _, v := range page.Versions {
				if n, err := strconv.Atoi(aws.ToString(v.Version)); err == nil && n < cur && n > best {
					best = n
				}
			}
		}
		if best == 0 {
			return "", errors.New("no version before " + current + " to go back to")
		}
		target = strconv.Itoa(best)
	}
	if _, err := r.Lambda.UpdateAlias(ctx, &lambda.UpdateAliasInput{FunctionName: aws.String(fn), Name: aws.String("live"), FunctionVersion: aws.String(target),
		RoutingConfig: &lambdatypes.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{}}}); err != nil {
		return "", fmt.Errorf("move its alias: %w", err)
	}
	return fmt.Sprintf("live %s → %s%s", describeAlias(alias), target, stopped), nil
}

func describeAlias(a *lambda.GetAliasOutput) string {
	s := aws.ToString(a.FunctionVersion)
	if a.RoutingConfig != nil {
		for v, w := range a.RoutingConfig.AdditionalVersionWeights {
			s += fmt.Sprintf(" (%s at %.0f%%)", v, 100*w)
		}
	}
	return s
}
