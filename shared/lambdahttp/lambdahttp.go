// Package lambdahttp is what every HTTP API function of the service shares,
// whatever it serves: its JSON logs, its metrics' dimensions, its cold
// start under StartupTimeout (and the 503 a store that does not answer
// then gets), each request's deadline, and the API Gateway HTTP API
// (payload v2) adapter. It links no store wiring, no worker and no domain
// package: the meta function (public routes, no store) is this package,
// the edge (httpapi) and its handlers. The families' functions add their
// store through package apiapp; the workers are package app.
package lambdahttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/logs"
	"github.com/practice-api/practice-api/shared/metrics"
)

// JSONLogs is the process's logger, which its main builds once and hands
// to what it wires: JSON lines to stderr, the form CloudWatch Logs
// Insights and operators' tools read, at level and above (the process's
// LOG_LEVEL; a main that logs before it has read its settings passes a
// slog.LevelVar it sets then), and every line that carries metrics
// whatever the level (metrics.KeepMetrics), with every CPR redacted
// (package logs). It is made slog's default too, the one thing a process
// sets for all its code: the log package's default logger then writes
// through it, so aws-lambda-go's own lines (a handler's error or panic)
// are redacted as well.
func JSONLogs(level slog.Leveler) *slog.Logger {
	l := slog.New(logs.Redacting(metrics.KeepMetrics(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}), level)))
	slog.SetDefault(l)
	return l
}

// Dimensions are cfg's metric dimensions: its stage, and the function and
// version a Lambda runs.
func Dimensions(cfg config.Config) metrics.Dimensions {
	return metrics.Dimensions{Stage: cfg.Stage, Function: cfg.FunctionName, Version: cfg.FunctionVersion}
}

// Deprecation is cfg's announcement of this version's retirement; nil
// while the version is current.
func Deprecation(cfg config.Config) *httpapi.Deprecation {
	if cfg.DeprecatedSince.IsZero() {
		return nil
	}
	return &httpapi.Deprecation{Since: cfg.DeprecatedSince, Sunset: cfg.Sunset, Link: cfg.DeprecationLink}
}

// StartupTimeout bounds a cold start's I/O (loading the cursor key, wiring
// queues): a store that does not answer fails the start, which Lambda
// retries, instead of hanging until the function's timeout.
const StartupTimeout = 5 * time.Second

// RequestMargin is how long before the Lambda's deadline a request's own
// deadline falls: a slow store then answers the API's JSON 503 (with
// Retry-After) instead of the platform's timeout.
const RequestMargin = 500 * time.Millisecond

// WithRequestDeadline gives each request a deadline margin before its
// context's (the Lambda invocation's).
func WithRequestDeadline(next http.Handler, margin time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, ok := r.Context().Deadline(); ok {
			ctx, cancel := context.WithDeadline(r.Context(), d.Add(-margin))
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// PublicHandler builds the handler of a family of public routes (no key,
// no store): the edge's request ids, access log (on log, with cfg's
// request metrics) and deprecation headers only.
func PublicHandler(cfg config.Config, log *slog.Logger, family string, h httpapi.Handlers) (http.Handler, error) {
	return httpapi.NewHandler(httpapi.Config{AccessLog: metrics.RequestLog(log, Dimensions(cfg)), Log: log, Deprecation: Deprecation(cfg)}, map[string]httpapi.Handlers{family: h})
}

// StartPublic serves PublicHandler as an HTTP API (payload v2) Lambda.
func StartPublic(family string, h httpapi.Handlers) {
	Serve(family, func(_ context.Context, cfg config.Config, log *slog.Logger) (http.Handler, error) {
		return PublicHandler(cfg, log, family, h)
	})
}

// Build makes a function's handler from its settings and its logger.
type Build func(ctx context.Context, cfg config.Config, log *slog.Logger) (http.Handler, error)

// Serve reads the environment into a Config, builds a family's handler
// once, at cold start, under StartupTimeout, with the process's logger
// (JSONLogs, at cfg's level), and serves it to API Gateway HTTP API
// (payload v2) events; a bad setting or a failed build ends the process
// (Lambda reports the failed init).
func Serve(family string, build Build) {
	var level slog.LevelVar // INFO until the settings are read
	log := JSONLogs(&level)
	cfg, err := config.FromEnv()
	var h http.Handler
	if err == nil {
		level.Set(cfg.LogLevel)
		h, err = buildWithin(build, context.Background(), cfg, log)
	}
	if err != nil && StoreUnavailable(err) {
		// A store that does not answer at a cold start (an outage, a
		// throttle) is not a broken function: it starts, and answers each
		// request 503 with Retry-After until a build succeeds, rather than
		// fail its init into API Gateway's bare 500.
		log.Error("cold start: the store did not answer; requests get 503 until it does", "family", family, "err", err)
		h, err = &coldStart{build: build, cfg: cfg, log: log}, nil
	}
	if err != nil {
		log.Error("cold start failed", "family", family, "err", err)
		os.Exit(1)
	}
	lambda.Start(httpadapter.NewV2(WithRequestDeadline(h, RequestMargin)).ProxyWithContext)
}

func buildWithin(build Build, ctx context.Context, cfg config.Config, log *slog.Logger) (http.Handler, error) {
	ctx, cancel := context.WithTimeout(ctx, StartupTimeout)
	defer cancel()
	return build(ctx, cfg, log)
}

// StoreUnavailable reports whether err is the store's failure to answer
// (throttling, its own failure, a deadline: what the edge's error table
// answers 503), not a mistake a retry cannot mend (a denied call, a
// missing table: the init fails, as any broken build).
func StoreUnavailable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || httpapi.AnswerOf(err).Status == http.StatusServiceUnavailable
}

// coldStart is a function whose build met an unavailable store: each
// request tries the build again (one at a time), and is answered 503 with
// Retry-After (httpapi.WriteError) while the store still does not answer.
type coldStart struct {
	build Build
	cfg   config.Config
	log   *slog.Logger
	mu    sync.Mutex
	h     http.Handler
}

func (c *coldStart) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	h, err := c.h, error(nil)
	if h == nil {
		if h, err = buildWithin(c.build, r.Context(), c.cfg, c.log); err == nil {
			c.h = h
		}
	}
	c.mu.Unlock()
	switch {
	case err != nil && StoreUnavailable(err):
		c.log.ErrorContext(r.Context(), "store unavailable", "err", err, "method", r.Method, "path", r.URL.Path, "cold_start", true)
		httpapi.WriteError(w, r, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: httpapi.CodeServiceUnavailable, RetryAfter: 1,
			Message: "the data store is temporarily unavailable; retry the request (with the same Idempotency-Key for a create)"})
	case err != nil:
		httpapi.WriteError(w, r, fmt.Errorf("cold start: %w", err))
	default:
		h.ServeHTTP(w, r)
	}
}

// RequestDeadlines gives each request the deadline its family's function
// gives it on AWS: the function's timeout (routes.Timeouts) less
// RequestMargin, from when it arrives. The devserver serves every family
// in one process with no invocation deadline of its own; with this, a
// store that stops answering gets the documented 503 with Retry-After
// after the same 9.5 s as on AWS (or localcloud), not a request that
// hangs as long as the store does. A path of no route gets the meta
// function's, which answers those on AWS (the $default route).
func RequestDeadlines(next http.Handler) http.Handler {
	lookup := http.NewServeMux()
	family := map[string]string{}
	for _, rt := range routes.Table {
		lookup.Handle(rt.Pattern(), http.NotFoundHandler())
		family[rt.Pattern()] = rt.Family
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		timeout := routes.Timeouts[routes.Meta]
		if _, pattern := lookup.Handler(r); pattern != "" {
			if s, ok := routes.Timeouts[family[pattern]]; ok {
				timeout = s
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), time.Duration(timeout)*time.Second-RequestMargin)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
