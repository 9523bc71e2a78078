// Package localrun is what the two local runtimes (scripts/devserver,
// scripts/localcloud) do alike under LOCAL-CONTRACT.md: open the store on
// their own DynamoDB Local (or DYNAMODB_ENDPOINT's), announce ready, and
// stop cleanly on a signal, or when the engine dies.
package localrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/ddblocal"
)

// Store opens the store c names: on the engine at DYNAMODB_ENDPOINT, or on
// a DynamoDB Local it starts (engine is then non-nil; the caller stops it,
// and engine.Stop is safe on nil).
func Store(ctx context.Context, c config.Config) (*store.DB, store.Config, *ddblocal.Engine, error) {
	cfg := app.StoreConfig(c)
	engine, err := startEngine(ctx, c)
	if err != nil {
		return nil, cfg, nil, err
	}
	if engine != nil {
		cfg.Endpoint = engine.Endpoint
	}
	db, err := store.New(ctx, cfg)
	if err != nil {
		_ = engine.Stop()
		return nil, cfg, nil, err
	}
	return db, cfg, engine, nil
}

// Serve serves srv on ln and prints the contract's ready line for base
// (…/api/v1) and where the reference page is, then calls logReady; it
// returns when ctx ends (a signal), after a graceful shutdown of up to
// 10 s, or with an error when the server fails or the engine dies.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, engine *ddblocal.Engine, base string, logReady func()) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintln(os.Stderr, "ready", base)
	fmt.Fprintf(os.Stderr, "docs %s/docs (the API reference, with a console: Authorize with the demo key)\n", base)
	logReady()
	select {
	case <-ctx.Done():
	case <-engine.Done():
		_ = srv.Close()
		return fmt.Errorf("the local DynamoDB engine stopped unexpectedly; see %s", engine.LogPath)
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return nil
}

// startEngine starts the engine as LOCAL-CONTRACT.md asks: none when c
// names an engine already running (DYNAMODB_ENDPOINT; it returns nil),
// else on LOCAL_DYNAMODB_ADDR with LOCAL_DYNAMODB_DIR, LOCAL_DYNAMODB_LOG,
// LOCAL_DYNAMODB_JAR and LOCAL_DYNAMODB_JAVA_OPTS, logging where it runs.
func startEngine(ctx context.Context, c config.Config) (*ddblocal.Engine, error) {
	if c.DynamoDBEndpoint != "" {
		return nil, nil
	}
	engine, err := ddblocal.Start(ctx, ddblocal.Options{Addr: c.LocalDynamoDBAddr, Dir: c.LocalDynamoDBDir, LogPath: c.LocalDynamoDBLog,
		Jar: c.LocalDynamoDBJar, JavaOpts: c.LocalDynamoDBJava})
	if err != nil {
		return nil, err
	}
	slog.Info("dynamodb local started", "endpoint", engine.Endpoint, "pid", engine.Pid(), "log", engine.LogPath,
		"data_dir", cmp.Or(c.LocalDynamoDBDir, "(in memory)"))
	return engine, nil
}
