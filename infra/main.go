// Command infra is the CDK app: `cdk deploy -c stage=prod` (cdk.json runs
// it), or `go run ./infra` to synthesize into cdk.out offline. The Lambda
// binaries come from `make build` (.bin/lambda/<function>/bootstrap).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	var appProps *awscdk.AppProps
	if os.Getenv("CDK_OUTDIR") == "" {
		// Run without the CDK CLI (make synth): write where cdk would, with
		// the context cdk deploy gives (cdk.json: feature flags, stages);
		// CDK_CONTEXT_JSON still sets the stage and the rest.
		ctx, err := CDKJSONContext("cdk.json")
		if err != nil {
			fmt.Fprintln(os.Stderr, "infra:", err)
			os.Exit(1)
		}
		outdir := os.Getenv("SYNTH_OUTDIR") // scripts/localcloud synthesizes beside its own build
		if outdir == "" {
			outdir = "cdk.out"
		}
		appProps = &awscdk.AppProps{Outdir: jsii.String(outdir), Context: &ctx}
	}
	app := awscdk.NewApp(appProps)
	props, err := PropsFromContext(app)
	if err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
	NewPracticeStack(app, "PracticeApi-"+props.Stage, props)
	app.Synth(nil)
}

// CDKJSONContext reads the "context" of a cdk.json.
func CDKJSONContext(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var f struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Context, nil
}
