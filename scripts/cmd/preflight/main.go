// Command preflight checks, before CloudFormation starts, what a stage's
// first deploy (or its next) would fail on in the account and region of
// the credentials in use, one line per problem:
//
//   - the account's Lambda concurrency: the template's reserved concurrent
//     executions must leave at least 100 unreserved (Lambda refuses the
//     function that would take it below);
//
//   - the region: every resource type the template uses exists there, and
//     every property it sets is in that type's schema there;
//
//   - names the template fixes that must be free: a backup vault with a
//     literal name that exists outside this stack.
//
//     go run ./scripts/cmd/preflight -template cdk.out/PracticeApi-prod.template.json -stack PracticeApi-prod
//
// make deploy runs it on the template it is about to deploy.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/backup"
	backuptypes "github.com/aws/aws-sdk-go-v2/service/backup/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/smithy-go"
)

// The AWS calls preflight makes, as the SDK's clients make them (tests
// answer them with the SDK's own types).
type (
	LambdaAPI interface {
		GetAccountSettings(ctx context.Context, in *lambda.GetAccountSettingsInput, opts ...func(*lambda.Options)) (*lambda.GetAccountSettingsOutput, error)
		GetFunctionConcurrency(ctx context.Context, in *lambda.GetFunctionConcurrencyInput, opts ...func(*lambda.Options)) (*lambda.GetFunctionConcurrencyOutput, error)
	}
	CloudFormationAPI interface {
		DescribeType(ctx context.Context, in *cloudformation.DescribeTypeInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeTypeOutput, error)
		DescribeStackResources(ctx context.Context, in *cloudformation.DescribeStackResourcesInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourcesOutput, error)
	}
	BackupAPI interface {
		DescribeBackupVault(ctx context.Context, in *backup.DescribeBackupVaultInput, opts ...func(*backup.Options)) (*backup.DescribeBackupVaultOutput, error)
	}
)

// UnreservedMinimum is what Lambda keeps unreserved for the account's
// functions without reserved concurrency.
// https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
const UnreservedMinimum = 100

// Checker holds the clients and the region.
type Checker struct {
	Lambda         LambdaAPI
	CloudFormation CloudFormationAPI
	Backup         BackupAPI
	Region         string
}

func main() {
	tplPath := flag.String("template", "", "the synthesized template")
	stackName := flag.String("stack", "", "the stack's name (PracticeApi-<stage>)")
	flag.Parse()
	if *tplPath == "" || *stackName == "" {
		fmt.Fprintln(os.Stderr, "preflight: -template and -stack are required")
		os.Exit(2)
	}
	raw, err := os.ReadFile(*tplPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "preflight:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "preflight:", err)
		os.Exit(2)
	}
	c := &Checker{Lambda: lambda.NewFromConfig(cfg), CloudFormation: cloudformation.NewFromConfig(cfg), Backup: backup.NewFromConfig(cfg), Region: cfg.Region}
	problems, err := c.Check(ctx, raw, *stackName)
	if err != nil {
		fmt.Fprintln(os.Stderr, "preflight:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println("preflight:", p)
	}
	if len(problems) > 0 {
		fmt.Printf("preflight: %d problem(s) before CloudFormation starts; nothing was deployed\n", len(problems))
		os.Exit(1)
	}
	fmt.Printf("preflight: %s in %s: concurrency, resource properties and names are clear\n", *stackName, c.Region)
}

// Check returns one line per problem the deploy of template as stackName
// would meet; an error is a check that could not be made.
func (c *Checker) Check(ctx context.Context, template []byte, stackName string) ([]string, error) {
	var tpl checkedTemplate
	if err := json.Unmarshal(template, &tpl); err != nil {
		return nil, fmt.Errorf("the template: %w", err)
	}
	existing, err := c.stackResources(ctx, stackName)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, check := range []func(context.Context, checkedTemplate, map[string]string) ([]string, error){
		c.concurrency, c.schemas, c.freeNames,
	} {
		found, err := check(ctx, tpl, existing)
		if err != nil {
			return nil, err
		}
		problems = append(problems, found...)
	}
	sort.Strings(problems)
	return problems, nil
}

// checkedTemplate is what the checks read of a template.
type checkedTemplate struct {
	Resources map[string]struct {
		Type       string
		Properties map[string]any
	}
}

// concurrency: what the template's functions reserve must leave the
// account the unreserved concurrency Lambda keeps.
func (c *Checker) concurrency(ctx context.Context, tpl checkedTemplate, existing map[string]string) ([]string, error) {
	var problems []string
	reserved, byFn := 0, map[string]int{}
	for id, r := range tpl.Resources {
		if r.Type == "AWS::Lambda::Function" {
			if n, ok := r.Properties["ReservedConcurrentExecutions"].(float64); ok {
				reserved += int(n)
				byFn[id] = int(n)
			}
		}
	}
	if reserved > 0 {
		acct, err := c.Lambda.GetAccountSettings(ctx, &lambda.GetAccountSettingsInput{})
		if err != nil {
			return nil, fmt.Errorf("lambda GetAccountSettings: %w", err)
		}
		// What this stack's functions reserve already is out of the
		// unreserved pool now, and comes back when they are updated.
		already := 0
		for id := range byFn {
			if phys, ok := existing[id]; ok {
				out, err := c.Lambda.GetFunctionConcurrency(ctx, &lambda.GetFunctionConcurrencyInput{FunctionName: aws.String(phys)})
				if err != nil {
					return nil, fmt.Errorf("lambda GetFunctionConcurrency %s: %w", phys, err)
				}
				if out.ReservedConcurrentExecutions != nil {
					already += int(*out.ReservedConcurrentExecutions)
				}
			}
		}
		limit, unreserved := int(aws.ToInt32(&acct.AccountLimit.ConcurrentExecutions)), int(aws.ToInt32(acct.AccountLimit.UnreservedConcurrentExecutions))
		if left := unreserved + already - reserved; left < UnreservedMinimum {
			problems = append(problems, fmt.Sprintf("Lambda concurrency: the template reserves %d concurrent executions (%s), which would leave %d unreserved of the account's %d in %s; Lambda keeps at least %d: ask Service Quotas for a limit of at least %d (\"Concurrent executions\"), or deploy with -c reservedConcurrency=off",
				reserved, describe(byFn), left, limit, c.Region, UnreservedMinimum, limit+UnreservedMinimum-left))
		}
	}
	return problems, nil
}

// schemas: each resource type, and each property the template gives it,
// is in the region's CloudFormation schema.
func (c *Checker) schemas(ctx context.Context, tpl checkedTemplate, _ map[string]string) ([]string, error) {
	var problems []string
	types := map[string][]string{}
	for id, r := range tpl.Resources {
		if strings.HasPrefix(r.Type, "AWS::") {
			types[r.Type] = append(types[r.Type], id)
		}
	}
	for _, typ := range sortedKeys(types) {
		out, err := c.CloudFormation.DescribeType(ctx, &cloudformation.DescribeTypeInput{Type: cfntypes.RegistryTypeResource, TypeName: aws.String(typ)})
		var notFound *cfntypes.TypeNotFoundException
		if errors.As(err, &notFound) {
			problems = append(problems, fmt.Sprintf("%s: CloudFormation has no such resource type in %s (%s)", typ, c.Region, strings.Join(types[typ], ", ")))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cloudformation DescribeType %s: %w", typ, err)
		}
		var schema struct{ Properties map[string]any }
		if err := json.Unmarshal([]byte(aws.ToString(out.Schema)), &schema); err != nil {
			return nil, fmt.Errorf("the schema of %s: %w", typ, err)
		}
		for _, id := range types[typ] {
			for _, prop := range sortedKeys(tpl.Resources[id].Properties) {
				if _, ok := schema.Properties[prop]; !ok {
					problems = append(problems, fmt.Sprintf("%s (%s): its property %s is not in %s's schema in %s", id, typ, prop, typ, c.Region))
				}
			}
		}
	}
	return problems, nil
}

// freeNames: a fixed name the template gives (a backup vault's) is free,
// or the stack's own.
func (c *Checker) freeNames(ctx context.Context, tpl checkedTemplate, existing map[string]string) ([]string, error) {
	var problems []string
	for id, r := range tpl.Resources {
		name, literal := r.Properties["BackupVaultName"].(string)
		if r.Type != "AWS::Backup::BackupVault" || !literal {
			continue
		}
		_, err := c.Backup.DescribeBackupVault(ctx, &backup.DescribeBackupVaultInput{BackupVaultName: aws.String(name)})
		var nf *backuptypes.ResourceNotFoundException
		switch {
		case errors.As(err, &nf):
		case err != nil:
			return nil, fmt.Errorf("backup DescribeBackupVault %s: %w", name, err)
		case existing[id] != name:
			problems = append(problems, fmt.Sprintf("%s: a backup vault named %s already exists in %s and is not this stack's (a retained vault of an earlier, failed deploy?): CloudFormation would fail with AlreadyExists", id, name, c.Region))
		}
	}
	return problems, nil
}

// stackResources are the stack's resources' physical ids by logical id
// (none when the stack does not exist yet).
func (c *Checker) stackResources(ctx context.Context, name string) (map[string]string, error) {
	out, err := c.CloudFormation.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "does not exist") {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cloudformation DescribeStackResources %s: %w", name, err)
	}
	m := map[string]string{}
	for _, r := range out.StackResources {
		m[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
	}
	return m, nil
}

func describe(byFn map[string]int) string {
	var parts []string
	for _, id := range sortedKeys(byFn) {
		parts = append(parts, fmt.Sprintf("%s %d", id, byFn[id]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
