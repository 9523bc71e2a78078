package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/backup"
	backuptypes "github.com/aws/aws-sdk-go-v2/service/backup/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"
)

// fakeAWS answers preflight's calls as an account would, with the SDK's
// own output and error types.
type fakeAWS struct {
	limit, unreserved int32
	reservedNow       map[string]int32  // physical function name → its reservation
	stack             map[string]string // logical → physical; nil: no stack
	schemas           map[string]string // type → schema; absent: no such type
	vaults            map[string]bool   // existing vault names
}

func (f *fakeAWS) GetAccountSettings(context.Context, *lambda.GetAccountSettingsInput, ...func(*lambda.Options)) (*lambda.GetAccountSettingsOutput, error) {
	return &lambda.GetAccountSettingsOutput{AccountLimit: &lambdatypes.AccountLimit{ConcurrentExecutions: f.limit, UnreservedConcurrentExecutions: aws.Int32(f.unreserved)}}, nil
}

func (f *fakeAWS) GetFunctionConcurrency(_ context.Context, in *lambda.GetFunctionConcurrencyInput, _ ...func(*lambda.Options)) (*lambda.GetFunctionConcurrencyOutput, error) {
	if n, ok := f.reservedNow[*in.FunctionName]; ok {
		return &lambda.GetFunctionConcurrencyOutput{ReservedConcurrentExecutions: aws.Int32(n)}, nil
	}
	return &lambda.GetFunctionConcurrencyOutput{}, nil
}

func (f *fakeAWS) DescribeType(_ context.Context, in *cloudformation.DescribeTypeInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeTypeOutput, error) {
	s, ok := f.schemas[*in.TypeName]
	if !ok {
		return nil, &cfntypes.TypeNotFoundException{Message: aws.String("The type '" + *in.TypeName + "' cannot be found.")}
	}
	return &cloudformation.DescribeTypeOutput{Schema: aws.String(s)}, nil
}

func (f *fakeAWS) DescribeStackResources(_ context.Context, in *cloudformation.DescribeStackResourcesInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourcesOutput, error) {
	if f.stack == nil {
		return nil, &smithy.GenericAPIError{Code: "ValidationError", Message: "Stack with id " + *in.StackName + " does not exist"}
	}
	out := &cloudformation.DescribeStackResourcesOutput{}
	for l, p := range f.stack {
		out.StackResources = append(out.StackResources, cfntypes.StackResource{LogicalResourceId: aws.String(l), PhysicalResourceId: aws.String(p)})
	}
	return out, nil
}

func (f *fakeAWS) DescribeBackupVault(_ context.Context, in *backup.DescribeBackupVaultInput, _ ...func(*backup.Options)) (*backup.DescribeBackupVaultOutput, error) {
	if !f.vaults[*in.BackupVaultName] {
		return nil, &backuptypes.ResourceNotFoundException{Message: aws.String("no vault")}
	}
	return &backup.DescribeBackupVaultOutput{BackupVaultName: in.BackupVaultName}, nil
}

// A template as the stack's: four reserved functions (50 in all), a
// dashboard with Tags, and a backup vault with a fixed name.
const template = `{"Resources":{
 "dispatcher":{"Type":"AWS::Lambda::Function","Properties":{"MemorySize":256,"ReservedConcurrentExecutions":10}},
 "enrichment":{"Type":"AWS::Lambda::Function","Properties":{"ReservedConcurrentExecutions":5}},
 "delivery":{"Type":"AWS::Lambda::Function","Properties":{"ReservedConcurrentExecutions":25}},
 "reports":{"Type":"AWS::Lambda::Function","Properties":{"ReservedConcurrentExecutions":10}},
 "matters":{"Type":"AWS::Lambda::Function","Properties":{"MemorySize":512}},
 "dashboard":{"Type":"AWS::CloudWatch::Dashboard","Properties":{"DashboardBody":"{}","Tags":[]}},
 "vault":{"Type":"AWS::Backup::BackupVault","Properties":{"BackupVaultName":"practice-api-prod"}}}}`

func schemas() map[string]string {
	return map[string]string{
		"AWS::Lambda::Function":      `{"properties":{"MemorySize":{},"ReservedConcurrentExecutions":{}},"Properties":{"MemorySize":{},"ReservedConcurrentExecutions":{}}}`,
		"AWS::CloudWatch::Dashboard": `{"Properties":{"DashboardBody":{},"DashboardName":{}}}`,
		"AWS::Backup::BackupVault":   `{"Properties":{"BackupVaultName":{},"LockConfiguration":{}}}`,
	}
}

// TestPreflightSaysWhatTheDeployWouldFailOn: a new account's concurrency
// limit of 10 cannot take 50 reserved executions (one line, saying the
// limit to ask for); a property the region's schema lacks and a resource
// type it does not have are named; a vault name taken outside the stack
// is; a roomy account, the region's full schema and a free name pass; and
// what the stack reserves already counts back when it is updated.
func TestPreflightSaysWhatTheDeployWouldFailOn(t *testing.T) {
	ctx := context.Background()
	check := func(f *fakeAWS) []string {
		c := &Checker{Lambda: f, CloudFormation: f, Backup: f, Region: "us-east-1"}
		p, err := c.Check(ctx, []byte(template), "PracticeApi-prod")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := check(&fakeAWS{limit: 10, unreserved: 10, schemas: schemas(), vaults: map[string]bool{"practice-api-prod": true}})
	if len(p) != 3 || !strings.Contains(p[0], "reserves 50 concurrent executions") || !strings.Contains(p[0], "at least 150") ||
		!strings.Contains(p[1], "dashboard (AWS::CloudWatch::Dashboard): its property Tags") || !strings.Contains(p[2], "AlreadyExists") {
		t.Fatalf("a new account:\n%s", strings.Join(p, "\n"))
	}
	for _, l := range p {
		if strings.Contains(l, "\n") {
			t.Errorf("a problem on more than one line: %q", l)
		}
	}
	full := schemas()
	full["AWS::CloudWatch::Dashboard"] = `{"Properties":{"DashboardBody":{},"Tags":{}}}`
	if p := check(&fakeAWS{limit: 1000, unreserved: 1000, schemas: full, vaults: map[string]bool{}}); len(p) != 0 {
		t.Fatalf("a roomy account:\n%s", strings.Join(p, "\n"))
	}
	// The stack exists and reserves its 50 already: 140 unreserved of 190 is enough.
	if p := check(&fakeAWS{limit: 190, unreserved: 140, schemas: full, vaults: map[string]bool{"practice-api-prod": true},
		stack:       map[string]string{"dispatcher": "fn-d", "enrichment": "fn-e", "delivery": "fn-v", "reports": "fn-r", "vault": "practice-api-prod"},
		reservedNow: map[string]int32{"fn-d": 10, "fn-e": 5, "fn-v": 25, "fn-r": 10}}); len(p) != 0 {
		t.Fatalf("an update:\n%s", strings.Join(p, "\n"))
	}
	noVaults := schemas()
	delete(noVaults, "AWS::Backup::BackupVault")
	if p := check(&fakeAWS{limit: 1000, unreserved: 1000, schemas: noVaults, vaults: map[string]bool{}}); len(p) != 2 || !strings.Contains(strings.Join(p, "\n"), "no such resource type") {
		t.Fatalf("a region without AWS Backup:\n%s", strings.Join(p, "\n"))
	}
}
