// Command infra is the CDK app: `cdk deploy -c stage=prod` (cdk.json runs
// it), or `go run ./infra` to synthesize into cdk.out offline. The Lambda
// binaries come from `make build` (.bin/lambda/<function>/bootstrap).
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	var appProps *awscdk.AppProps
	if os.Getenv("CDK_OUTDIR") == "" { // run without the CDK CLI: write where cdk would
		appProps = &awscdk.AppProps{Outdir: jsii.String("cdk.out")}
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
