package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// TestCdkNag applies cdk-nag's AwsSolutions and Serverless packs to each
// stage's stack. Every finding left is suppressed in code (infra/nag.go)
// with its reason; a new, unsuppressed one fails the test.
func TestCdkNag(t *testing.T) {
	dir := standInCode(t)
	ctx, err := CDKJSONContext("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"dev", "prod"} {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "nag-"+stage)), Context: &ctx})
		s := NewPracticeStack(app, "PracticeApi-"+stage, &Props{Stage: stage, CodeDir: dir, RateLimit: 120, AlarmEmail: "ops@example.com"})
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
		awscdk.Aspects_Of(app).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
		ann := assertions.Annotations_FromStack(s.Stack)
		var findings []string
		all := assertions.Match_StringLikeRegexp(jsii.String(".*"))
		for level, msgs := range map[string]*[]*cxapi.SynthesisMessage{
			"error": ann.FindError(jsii.String("*"), all), "warning": ann.FindWarning(jsii.String("*"), all),
		} {
			for _, m := range *msgs {
				rule, _, _ := strings.Cut(fmt.Sprint(m.Entry.Data), ": ")
				findings = append(findings, fmt.Sprintf("%s %s %s", level, rule, *m.Id))
			}
		}
		sort.Strings(findings)
		t.Logf("%s: %d findings", stage, len(findings))
		for _, f := range findings {
			t.Log(f)
		}
		if len(findings) > 0 {
			t.Errorf("%s: %d cdk-nag findings neither fixed nor suppressed with a reason in infra/nag.go", stage, len(findings))
		}
	}
}
