// Command synth synthesizes the CDK app offline through the machine's
// synth cache (scripts/internal/synthcache), one assembly per pair of
// arguments, at once:
//
//	go run ./scripts/cmd/synth -infra .bin/cfn-lint/infra OUT-DIR CONTEXT-JSON [OUT-DIR CONTEXT-JSON ...]
//
// make check's cfn-lint synthesizes the dev and prod templates with it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/practice-api/practice-api/scripts/internal/synthcache"
	"github.com/practice-api/practice-api/shared/modroot"
)

func main() {
	infra := flag.String("infra", ".bin/synth/infra", "where to build the infra program")
	flag.Parse()
	if err := run(*infra, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
}

func run(infra string, args []string) error {
	if len(args) == 0 || len(args)%2 != 0 {
		return fmt.Errorf("want pairs of an assembly folder and a context (JSON), got %d arguments", len(args))
	}
	root, err := modroot.Find()
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := synthcache.Build(ctx, root, infra); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(args)/2)
	for i := 0; i < len(args); i += 2 {
		var c map[string]string
		if err := json.Unmarshal([]byte(args[i+1]), &c); err != nil {
			return fmt.Errorf("context %s: %w", args[i+1], err)
		}
		wg.Go(func() {
			res, err := synthcache.Synthesize(ctx, synthcache.Request{Root: root, Infra: infra, Context: c, Out: args[i]})
			if err != nil {
				errs[i/2] = fmt.Errorf("%s: %w", args[i], err)
				return
			}
			how := map[string]string{"": "synthesized", "folder": "up to date", "machine": "from the machine's synth cache"}[res.Cached]
			fmt.Fprintf(os.Stderr, "synth: %s: %s\n", args[i], how)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
