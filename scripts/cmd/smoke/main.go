// Command smoke checks a deployed stage from outside, read-only, with a
// live key: the public document and page, authentication, a list with its
// rate-limit and caching headers, and the error shapes an integrator
// relies on. It writes nothing and leaves nothing behind (the e2e suite
// mints keys and writes test data, so it is not for production).
//
//	SMOKE_BASE_URL=https://api.example.dk/api/v1 SMOKE_KEY=pa_live_… go run ./scripts/cmd/smoke
//
// make smoke STAGE=prod reads the base URL from the stack's ApiUrl output.
// The key needs matters:read and nothing else. It prints one line per
// check and exits 1 when any fails.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/practice-api/practice-api/shared/smoke"
)

func main() {
	base, key := strings.TrimRight(os.Getenv("SMOKE_BASE_URL"), "/"), os.Getenv("SMOKE_KEY")
	if base == "" || key == "" {
		fmt.Fprintln(os.Stderr, "smoke: set SMOKE_BASE_URL (the stage's ApiUrl, …/api/v1) and SMOKE_KEY (a key with matters:read)")
		os.Exit(2)
	}
	failed, err := smoke.Run(context.Background(), base, key, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "smoke:", err)
		os.Exit(2)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stdout, "%d check(s) failed\n", failed)
		os.Exit(1)
	}
}
