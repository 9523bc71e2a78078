// Package app builds, from environment variables, what every process of the
// service needs: the store and the HTTP edge's configuration. Lambdas, the
// devserver and the admin tool call it once at start.
package app

import (
	"net/http"
	"net/url"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/practice-api/practice-api/shared/httpapi/routes"

	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// Env is the process-wide wiring.
type Env struct {
	DB   *store.DB
	Edge httpapi.Config
}

// StoreConfigFromEnv reads TABLE_NAME (default practice-api) and
// DYNAMODB_ENDPOINT (unset or "aws": the SDK's own endpoint resolution).
func StoreConfigFromEnv() store.Config {
	cfg := store.Config{TableName: getenv("TABLE_NAME", "practice-api"), Endpoint: os.Getenv("DYNAMODB_ENDPOINT")}
	if cfg.Endpoint == "aws" {
		cfg.Endpoint = ""
	}
	return cfg
}

// Load builds the Env for an API process on db: the cursor key (read from
// the table once), RATE_LIMIT_PER_MINUTE and API_KEY_MODES.
func Load(ctx context.Context, db *store.DB) (*Env, error) {
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
	limit := 120
	if v := os.Getenv("RATE_LIMIT_PER_MINUTE"); v != "" {
		limit, err = strconv.Atoi(v)
		if err != nil || limit < 1 {
			return nil, fmt.Errorf("RATE_LIMIT_PER_MINUTE must be a positive integer, got %q", v)
		}
	}
	var modes []string
	for _, m := range strings.Split(os.Getenv("API_KEY_MODES"), ",") {
		switch m = strings.TrimSpace(m); m {
		case "":
		case auth.ModeLive, auth.ModeTest:
			modes = append(modes, m)
		default:
			return nil, fmt.Errorf("API_KEY_MODES: unknown mode %q (live, test)", m)
		}
	}
	dep, err := deprecationFromEnv()
	if err != nil {
		return nil, err
	}
	if err := OutboxFromEnv(); err != nil {
		return nil, err
	}
	keys := auth.NewStore(db)
	keys.DefaultLimit = limit
	base, err := PublicBaseURL(os.Getenv("PUBLIC_BASE_URL"))
	if err != nil {
		return nil, err
	}
	return &Env{DB: db, Edge: httpapi.Config{
		Auth: keys, Sealer: sealer, RateLimit: limit, AcceptedModes: modes,
		AccessLog: slog.Default(), Idempotency: idempotency.NewStore(db, key), Deprecation: dep,
		PublicBaseURL: base, BaseURLOf: apiGatewayBaseURL,
	}}, nil
}

// OutboxFromEnv reads OUTBOX_SHARDS (default 32; it may only grow) into
// outbox.Shards, for every process that writes or sweeps events, and
// returns OUTBOX_RETENTION (a Go duration, default 168h: how long a
// dispatched event is kept).
func OutboxFromEnv() error {
	outbox.Shards = outbox.DefaultShards
	if v := os.Getenv("OUTBOX_SHARDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("OUTBOX_SHARDS must be an integer from 1 to 1000, got %q", v)
		}
		outbox.Shards = n
	}
	return nil
}

// OutboxRetentionFromEnv reads OUTBOX_RETENTION (a Go duration, at least
// an hour; default 168h).
func OutboxRetentionFromEnv() (time.Duration, error) {
	v := os.Getenv("OUTBOX_RETENTION")
	if v == "" {
		return outbox.DefaultRetention, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Hour {
		return 0, fmt.Errorf("OUTBOX_RETENTION must be a Go duration of at least 1h, such as 168h, got %q", v)
	}
	return d, nil
}

// PublicBaseURL checks PUBLIC_BASE_URL: an http(s) origin, with no path
// but an optional /api/v1 (dropped) and no query; "" is allowed.
func PublicBaseURL(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSuffix(v, "/"), routes.Prefix))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("PUBLIC_BASE_URL must be an origin such as https://api.example.dk, got %q", v)
	}
	return u.Scheme + "://" + u.Host, nil
}

// apiGatewayBaseURL is the origin API Gateway says it was called on (its
// request context's domain name: the stage's own or a custom domain), not
// the client's Host header.
func apiGatewayBaseURL(r *http.Request) (string, bool) {
	gw, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || gw.DomainName == "" {
		return "", false
	}
	return "https://" + gw.DomainName, true
}

// deprecationFromEnv reads API_DEPRECATED_SINCE and API_SUNSET (RFC 3339)
// and API_DEPRECATION_LINK; unset means the version is current.
func deprecationFromEnv() (*httpapi.Deprecation, error) {
	since := os.Getenv("API_DEPRECATED_SINCE")
	if since == "" {
		return nil, nil
	}
	d := &httpapi.Deprecation{Link: os.Getenv("API_DEPRECATION_LINK")}
	var err error
	if d.Since, err = time.Parse(time.RFC3339, since); err != nil {
		return nil, fmt.Errorf("API_DEPRECATED_SINCE must be RFC 3339: %w", err)
	}
	if v := os.Getenv("API_SUNSET"); v != "" {
		if d.Sunset, err = time.Parse(time.RFC3339, v); err != nil {
			return nil, fmt.Errorf("API_SUNSET must be RFC 3339: %w", err)
		}
		if d.Sunset.Before(d.Since.AddDate(0, 6, 0)) {
			return nil, fmt.Errorf("API_SUNSET must be at least six months after API_DEPRECATED_SINCE (spec: versioning 4)")
		}
	}
	return d, nil
}

// LoadFromEnv is Load on the store named by the environment.
func LoadFromEnv(ctx context.Context) (*Env, error) {
	db, err := store.New(ctx, StoreConfigFromEnv())
	if err != nil {
		return nil, err
	}
	return Load(ctx, db)
}

// JSONLogs makes slog's default logger write JSON lines to stderr, the form
// CloudWatch Logs Insights and operators' tools read.
func JSONLogs() {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
