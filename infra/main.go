// Command infra is the CDK app: `cdk deploy -c stage=prod` (cdk.json runs
// it), or `go run ./infra` to synthesize into cdk.out offline. The Lambda
// binaries come from `make build` (.bin/lambda/<function>/bootstrap).
package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"

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
		// make synth passes CDK_ARGS on as SYNTH_ARGS: its -c key=value
		// pairs, as cdk deploy would take them.
		extra, err := ContextArgs(os.Getenv("SYNTH_ARGS"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "infra:", err)
			os.Exit(1)
		}
		maps.Copy(ctx, extra)
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

// ContextArgs reads the -c key=value (or --context key=value) pairs of a
// cdk command line; anything else is refused, since synth would ignore it.
func ContextArgs(args string) (map[string]any, error) {
	out := map[string]any{}
	fields := strings.Fields(args)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		var kv string
		switch {
		case f == "-c" || f == "--context":
			if i+1 == len(fields) {
				return nil, fmt.Errorf("CDK_ARGS: %s needs key=value", f)
			}
			i++
			kv = fields[i]
		case strings.HasPrefix(f, "--context="):
			kv = strings.TrimPrefix(f, "--context=")
		default:
			return nil, fmt.Errorf("CDK_ARGS: make synth takes -c key=value only, not %q", f)
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("CDK_ARGS: %q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
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
