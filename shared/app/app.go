// Package app builds, from a process's typed configuration (package
// config), what every process of the service needs: the store, the HTTP
// edge and the workers. Lambdas, the local runtimes and the admin tool call
// it once at start.
package app

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/logs"
	"github.com/practice-api/practice-api/shared/metrics"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// Env is the process-wide wiring.
type Env struct {
	DB   *store.DB
	Edge httpapi.Config
}

// StoreConfig is the store's part of cfg.
func StoreConfig(cfg config.Config) store.Config {
	return store.Config{TableName: cfg.TableName, Endpoint: cfg.DynamoDBEndpoint}
}

// Load builds the Env for an API process on db: the cursor key (read from
// the table once) and cfg's edge settings.
func Load(ctx context.Context, db *store.DB, cfg config.Config) (*Env, error) {
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
	Apply(cfg)
	keys := auth.NewStore(db)
	keys.DefaultLimit = cfg.RateLimitPerMinute
	// The stage's default rate limit is stored in the table by the deploy
	// (configseed: no API role may write CONFIG) and by the devserver at
	// start (PublishStageLimit), for the admin tool's count of keys.
	return &Env{DB: db, Edge: httpapi.Config{
		Auth: keys, Sealer: sealer, RateLimit: cfg.RateLimitPerMinute, AcceptedModes: cfg.APIKeyModes,
		AccessLog: metrics.RequestLog(slog.Default()), Idempotency: idempotency.NewStore(db, key), Deprecation: deprecation(cfg),
		PublicBaseURL: cfg.PublicBaseURL, BaseURLOf: apiGatewayBaseURL,
	}}, nil
}

// Apply sets the process-wide values cfg holds: the log level, the outbox's shard count
// (OUTBOX_SHARDS, which every process that writes or sweeps events must
// agree on) and the dimensions of the service's metrics (its stage, and
// the function and version a Lambda runs).
func Apply(cfg config.Config) {
	LogLevel.Set(cfg.LogLevel)
	outbox.Shards = cfg.OutboxShards
	metrics.Stage = cfg.Stage
	metrics.Function, metrics.Version = cfg.FunctionName, cfg.FunctionVersion
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

// deprecation is cfg's announcement of this version's retirement; nil
// while the version is current.
func deprecation(cfg config.Config) *httpapi.Deprecation {
	if cfg.DeprecatedSince.IsZero() {
		return nil
	}
	return &httpapi.Deprecation{Since: cfg.DeprecatedSince, Sunset: cfg.Sunset, Link: cfg.DeprecationLink}
}

// Open opens the store cfg names and loads an API process's Env on it.
func Open(ctx context.Context, cfg config.Config) (*Env, error) {
	db, err := store.New(ctx, StoreConfig(cfg))
	if err != nil {
		return nil, err
	}
	return Load(ctx, db, cfg)
}

// JSONLogs makes slog's default logger write JSON lines to stderr, the form
// CloudWatch Logs Insights and operators' tools read: at LogLevel and
// above (INFO until Apply sets the configured one), and every line that
// carries metrics whatever the level (metrics.KeepMetrics), with every CPR
// redacted (package logs). The log package's default logger then writes
// through it too, so aws-lambda-go's own lines (a handler's error or
// panic) are redacted as well.
func JSONLogs() {
	slog.SetDefault(slog.New(logs.Redacting(metrics.KeepMetrics(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}), &LogLevel))))
}

// LogLevel is the least level of the process's own lines (LOG_LEVEL), set
// by Apply.
var LogLevel slog.LevelVar
