// Package localrun is what the two local runtimes (scripts/devserver,
// scripts/localcloud) do alike under LOCAL-CONTRACT.md: open the store on
// their own DynamoDB Local (or DYNAMODB_ENDPOINT's), announce ready, watch
// the engine (engine.go), and stop cleanly on a signal, or when the engine
// dies or hangs and cannot be restarted.
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
// a DynamoDB Local it starts. The Engine watches either (Serve starts the
// watch); the caller stops it (Stop is safe on an engine it did not start).
func Store(ctx context.Context, c config.Config) (*store.DB, store.Config, *Engine, error) {
	cfg := app.StoreConfig(c)
	engine, err := startEngine(ctx, c)
	if err != nil {
		return nil, cfg, nil, err
	}
	cfg.Endpoint = engine.Endpoint
	db, err := store.New(ctx, cfg)
	if err != nil {
		_ = engine.Stop()
		return nil, cfg, nil, err
	}
	engine.db = db
	return db, cfg, engine, nil
}

// Serve serves srv on ln and prints the contract's ready line for base
// (…/api/v1) and where the reference page is, then calls logReady; it
// returns when ctx ends (a signal), after a graceful shutdown of up to
// 10 s, or with an error when the server fails, or when the engine dies
// or hangs and cannot be restarted (Engine.watch).
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, engine *Engine, base string, logReady func()) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintln(os.Stderr, "ready", base)
	fmt.Fprintf(os.Stderr, "docs %s/docs (the API reference, with a console: Authorize with the demo key)\n", base)
	logReady()
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	fatal := engine.watch(watch)
	select {
	case <-ctx.Done():
	case err := <-fatal:
		_ = srv.Close()
		return err
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
// names an engine already running (DYNAMODB_ENDPOINT: the Engine only
// watches it), else on LOCAL_DYNAMODB_ADDR with LOCAL_DYNAMODB_DIR,
// LOCAL_DYNAMODB_LOG, LOCAL_DYNAMODB_JAR and LOCAL_DYNAMODB_JAVA_OPTS,
// logging where it runs.
func startEngine(ctx context.Context, c config.Config) (*Engine, error) {
	e := &Engine{Endpoint: c.DynamoDBEndpoint, table: c.TableName, dir: c.LocalDynamoDBDir, hangAfter: c.LocalDynamoDBHangAfter}
	if c.DynamoDBEndpoint != "" {
		return e, nil
	}
	e.opt = &ddblocal.Options{Addr: c.LocalDynamoDBAddr, Dir: c.LocalDynamoDBDir, LogPath: c.LocalDynamoDBLog,
		Jar: c.LocalDynamoDBJar, JavaOpts: c.LocalDynamoDBJava}
	engine, err := ddblocal.Start(ctx, *e.opt)
	if err != nil {
		return nil, err
	}
	e.cur, e.Endpoint = engine, engine.Endpoint
	e.opt.Addr, e.opt.LogPath = engine.Endpoint[len("http://"):], engine.LogPath // a restart comes back where clients look
	slog.Info("dynamodb local started", "endpoint", engine.Endpoint, "pid", engine.Pid(), "log", engine.LogPath,
		"data_dir", cmp.Or(c.LocalDynamoDBDir, "(in memory)"))
	return e, nil
}
