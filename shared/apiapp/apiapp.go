// Package apiapp wires the API's families: from a process's typed
// configuration (package config) it opens the store and builds the edge
// (keys, rate limits, idempotency, cursors) around a family's handlers.
// The families' Lambdas (functions/<family>) and the local runtimes call
// it once at start. It links neither the workers (package app: their
// queues, KMS, Secrets Manager) nor any family's domain package: each
// family's main hands it that family's handlers, so a function links its
// own domain package and no other (functions/deps_test.go).
package apiapp

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/lambdahttp"
	"github.com/practice-api/practice-api/shared/metrics"
	"github.com/practice-api/practice-api/shared/store"
)

// Env is the process-wide wiring.
type Env struct {
	DB   *store.DB
	Edge httpapi.Config
}

// StoreConfig is the store's part of cfg, the outbox's shard count
// (OUTBOX_SHARDS, which every process that writes or sweeps events must
// agree on) with it.
func StoreConfig(cfg config.Config) store.Config {
	return store.Config{TableName: cfg.TableName, Endpoint: cfg.DynamoDBEndpoint, LocalFaults: cfg.LocalFaults, OutboxShards: cfg.OutboxShards}
}

// Load builds the Env for an API process on db: the cursor key (read from
// the table once), cfg's edge settings and the access log on log.
func Load(ctx context.Context, db *store.DB, cfg config.Config, log *slog.Logger) (*Env, error) {
	key, err := db.LoadOrCreateSecret(ctx, "cursor")
	if err != nil {
		return nil, err
	}
	if err := db.LoadIDKey(ctx); err != nil {
		return nil, err
	}
	sealer, err := httpapi.NewSealer(key)
	if err != nil {
		return nil, err
	}
	keys := auth.NewStore(db, cfg.RateLimitPerMinute)
	// The stage's default rate limit is stored in the table by the deploy
	// (configseed: no API role may write CONFIG) and by the devserver at
	// start (PublishStageLimit), for the admin tool's count of keys.
	return &Env{DB: db, Edge: httpapi.Config{
		Auth: keys, Sealer: sealer, RateLimit: cfg.RateLimitPerMinute, AcceptedModes: cfg.APIKeyModes,
		AccessLog: metrics.RequestLog(log, lambdahttp.Dimensions(cfg)), Log: log, Idempotency: idempotency.NewStore(db, key), Deprecation: lambdahttp.Deprecation(cfg),
		PublicBaseURL: cfg.PublicBaseURL, BaseURLOf: apiGatewayBaseURL,
	}}, nil
}

// apiGatewayBaseURL is the origin API Gateway says it was called on: its
// request context's domain name (the stage's own or a custom domain), not
// the client's Host header, with the scheme and port of the headers API
// Gateway adds to every request (X-Forwarded-Proto, X-Forwarded-Port:
// https and 443 on AWS, so the origin is https://<domain>; localcloud's
// gateway says http and its port, so local links lead back to it).
func apiGatewayBaseURL(r *http.Request) (string, bool) {
	gw, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || gw.DomainName == "" {
		return "", false
	}
	scheme := "https"
	if r.Header.Get("X-Forwarded-Proto") == "http" {
		scheme = "http"
	}
	host := gw.DomainName
	if port := r.Header.Get("X-Forwarded-Port"); port != "" && port != map[string]string{"https": "443", "http": "80"}[scheme] {
		if n, err := strconv.Atoi(port); err == nil && n > 0 && n < 65536 {
			host = net.JoinHostPort(host, port)
		}
	}
	return scheme + "://" + host, true
}

// Open opens the store cfg names and loads an API process's Env on it.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Env, error) {
	db, err := store.New(ctx, StoreConfig(cfg))
	if err != nil {
		return nil, err
	}
	return Load(ctx, db, cfg, log)
}

// Build makes a family's handlers on the store, under the start-up
// deadline of ctx; an error fails the cold start.
type Build func(ctx context.Context, db *store.DB, cfg config.Config) (httpapi.Handlers, error)

// On is the Build of a family that needs only the store.
func On(h func(db *store.DB) httpapi.Handlers) Build {
	return func(_ context.Context, db *store.DB, _ config.Config) (httpapi.Handlers, error) { return h(db), nil }
}

// FamilyHandler builds, from cfg, the HTTP handler of one family: exactly
// what its Lambda serves, with its access log on log.
func FamilyHandler(ctx context.Context, cfg config.Config, log *slog.Logger, family string, build Build) (http.Handler, error) {
	env, err := Open(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	h, err := build(ctx, env.DB, cfg)
	if err != nil {
		return nil, err
	}
	return httpapi.NewHandler(env.Edge, map[string]httpapi.Handlers{family: h})
}

// Start serves one family as an API Gateway HTTP API (payload v2) Lambda.
// The environment is read once, into a Config, and everything is built
// once, at cold start, within lambdahttp.StartupTimeout.
func Start(family string, build Build) {
	lambdahttp.Serve(family, func(ctx context.Context, cfg config.Config, log *slog.Logger) (http.Handler, error) {
		return FamilyHandler(ctx, cfg, log, family, build)
	})
}
