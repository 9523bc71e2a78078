// Command withengine runs a command beside one AWS DynamoDB Local that
// every test of it shares: `make test` runs its tiers under it, so the
// whole run starts one engine (Java) instead of one per test binary and
// one per devserver or localcloud a test starts.
//
//	withengine [-log file] -- command args...
//
// The engine listens on a free loopback port, in memory; the command gets
// its URL in STORETEST_DYNAMODB_ENDPOINT, which storetest (a fresh table
// per test), localproc (a table per devserver or localcloud a test starts)
// and the e2e harness read. The engine is stopped when the command ends,
// whatever its result, and when withengine itself is stopped (a signal is
// passed on to the command first); if withengine dies, the kernel stops the
// engine (package ddblocal). The exit status is the command's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/practice-api/practice-api/shared/store/ddblocal"
)

// EndpointVar names the shared engine's URL in the command's environment.
const EndpointVar = "STORETEST_DYNAMODB_ENDPOINT"

func main() {
	logPath := flag.String("log", "", "the engine's log (default: a file in the temp folder, named after its port)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: withengine [-log file] -- command args...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(*logPath, flag.Args()))
}

func run(logPath string, argv []string) int {
	if ep := os.Getenv(EndpointVar); ep != "" { // already under one (make test inside make test, or an engine of yours)
		fmt.Fprintf(os.Stderr, "withengine: %s is set (%s): using that engine\n", EndpointVar, ep)
		return runCommand(argv, nil, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	began := time.Now()
	eng, err := ddblocal.Start(ctx, ddblocal.Options{Addr: "127.0.0.1:0", LogPath: logPath, JavaOpts: ddblocal.ShortRun})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "withengine:", err)
		return 1
	}
	defer eng.Stop()
	fmt.Fprintf(os.Stderr, "withengine: one DynamoDB Local for the run at %s (started in %s; log %s)\n",
		eng.Endpoint, time.Since(began).Round(100*time.Millisecond), eng.LogPath)
	code := runCommand(argv, []string{EndpointVar + "=" + eng.Endpoint}, eng)
	if cpu, ok := eng.CPU(); ok {
		fmt.Fprintf(os.Stderr, "withengine: the engine served the run with %s of CPU over %s\n", cpu.Round(100*time.Millisecond), time.Since(began).Round(time.Second))
	}
	return code
}

// runCommand runs argv with env added, passes SIGINT and SIGTERM on to
// it, and returns its exit status; when the engine stops before the
// command does, it says so (the command's tests then fail on their own).
func runCommand(argv, env []string, eng *ddblocal.Engine) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withengine:", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	engineDone := eng.Done()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case <-engineDone:
			engineDone = nil
			fmt.Fprintf(os.Stderr, "withengine: the shared DynamoDB Local stopped before the command ended; see %s\n", eng.LogPath)
		case err := <-done:
			var exit *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &exit) && exit.ExitCode() >= 0:
				return exit.ExitCode()
			default:
				fmt.Fprintln(os.Stderr, "withengine:", err)
				return 1
			}
		}
	}
}
