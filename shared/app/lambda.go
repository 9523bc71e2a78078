package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/smithy-go"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/metrics"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
)

// Build makes a family's handlers on the store, under the start-up
// deadline of ctx; an error fails the cold start.
type Build func(ctx context.Context, db *store.DB, cfg config.Config) (httpapi.Handlers, error)

// On is the Build of a family that needs only the store.
func On(h func(db *store.DB) httpapi.Handlers) Build {
	return func(_ context.Context, db *store.DB, _ config.Config) (httpapi.Handlers, error) { return h(db), nil }
}

// FamilyHandler builds, from cfg, the HTTP handler of one family: exactly
// what its Lambda serves.
func FamilyHandler(ctx context.Context, cfg config.Config, family string, build Build) (http.Handler, error) {
	env, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	h, err := build(ctx, env.DB, cfg)
	if err != nil {
		return nil, err
	}
	return httpapi.NewHandler(env.Edge, map[string]httpapi.Handlers{family: h})
}

// StartLambda serves one family as an API Gateway HTTP API (payload v2)
// Lambda. The environment is read once, into a Config, and everything is
// built once, at cold start, within StartupTimeout.
func StartLambda(family string, build Build) {
	serveV2(family, func(ctx context.Context, cfg config.Config) (http.Handler, error) {
		return FamilyHandler(ctx, cfg, family, build)
	})
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
// no store): the edge's request ids, access log and deprecation headers
// only.
func PublicHandler(cfg config.Config, family string, h httpapi.Handlers) (http.Handler, error) {
	Apply(cfg)
	return httpapi.NewHandler(httpapi.Config{AccessLog: metrics.RequestLog(slog.Default()), Deprecation: deprecation(cfg)}, map[string]httpapi.Handlers{family: h})
}

// StartPublicLambda serves PublicHandler as an HTTP API (payload v2) Lambda.
func StartPublicLambda(family string, h httpapi.Handlers) {
	serveV2(family, func(_ context.Context, cfg config.Config) (http.Handler, error) { return PublicHandler(cfg, family, h) })
}

// serveV2 reads the environment into a Config, builds a family's handler
// once, at cold start, under StartupTimeout, and serves it to API Gateway
// HTTP API (payload v2) events; a bad setting or a failed build ends the
// process (Lambda reports the failed init).
func serveV2(family string, build func(context.Context, config.Config) (http.Handler, error)) {
	JSONLogs()
	cfg, err := config.FromEnv()
	var h http.Handler
	if err == nil {
		h, err = buildWithin(build, context.Background(), cfg)
	}
	if err != nil && StoreUnavailable(err) {
		// A store that does not answer at a cold start (an outage, a
		// throttle) is not a broken function: it starts, and answers each
		// request 503 with Retry-After until a build succeeds, rather than
		// fail its init into API Gateway's bare 500.
		slog.Error("cold start: the store did not answer; requests get 503 until it does", "family", family, "err", err)
		h, err = &coldStart{build: build, cfg: cfg}, nil
	}
	if err != nil {
		slog.Error("cold start failed", "family", family, "err", err)
		os.Exit(1)
	}
	lambda.Start(httpadapter.NewV2(WithRequestDeadline(h, RequestMargin)).ProxyWithContext)
}

func buildWithin(build func(context.Context, config.Config) (http.Handler, error), ctx context.Context, cfg config.Config) (http.Handler, error) {
	ctx, cancel := context.WithTimeout(ctx, StartupTimeout)
	defer cancel()
	return build(ctx, cfg)
}

// StoreUnavailable reports whether err is the store's failure to answer
// (a call's error, a deadline), not a mistake a retry cannot mend.
func StoreUnavailable(err error) bool {
	var op *smithy.OperationError
	return errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded)
}

// coldStart is a function whose build met an unavailable store: each
// request tries the build again (one at a time), and is answered 503 with
// Retry-After (httpapi.WriteError) while the store still does not answer.
type coldStart struct {
	build func(context.Context, config.Config) (http.Handler, error)
	cfg   config.Config
	mu    sync.Mutex
	h     http.Handler
}

func (c *coldStart) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	h, err := c.h, error(nil)
	if h == nil {
		if h, err = buildWithin(c.build, r.Context(), c.cfg); err == nil {
			c.h = h
		}
	}
	c.mu.Unlock()
	switch {
	case err != nil && StoreUnavailable(err):
		slog.ErrorContext(r.Context(), "store unavailable", "err", err, "method", r.Method, "path", r.URL.Path, "cold_start", true)
		httpapi.WriteError(w, r, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: httpapi.CodeServiceUnavailable, RetryAfter: 1,
			Message: "the data store is temporarily unavailable; retry the request (with the same Idempotency-Key for a create)"})
	case err != nil:
		httpapi.WriteError(w, r, fmt.Errorf("cold start: %w", err))
	default:
		h.ServeHTTP(w, r)
	}
}

// RecordMargin is the part of a worker invocation's time kept back from
// its records: for their bookkeeping after a cut-off call, and for the
// answer to Lambda.
const RecordMargin = 3 * time.Second

// errNoTime is a record the invocation had no time left to start.
var errNoTime = errors.New("no time left in the invocation to start it")

// SQSHandler adapts a queue handler to an SQS-triggered Lambda with partial
// batch responses. The batch's records run concurrently, each under a
// deadline RecordMargin before the invocation's, so one slow receiver or
// register cannot time the batch out (which would send the finished records
// again and count their failures twice). Records that failed, and any the
// time left no room to start, are reported as batch item failures and come
// back; the others are deleted.
func SQSHandler(h queue.Handler) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		rctx := ctx
		if d, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			rctx, cancel = context.WithDeadline(ctx, d.Add(-RecordMargin))
			defer cancel()
		}
		failed := make([]error, len(ev.Records))
		var wg sync.WaitGroup
		for i, r := range ev.Records {
			if rctx.Err() != nil {
				failed[i] = errNoTime // no time to start it: it comes back
				continue
			}
			n, _ := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
			m := queue.Message{ID: r.MessageId, Body: []byte(r.Body), Receipt: r.ReceiptHandle, ReceiveCount: n, Group: r.Attributes["MessageGroupId"]}
			wg.Go(func() {
				// A panic in a record's goroutine would end the process
				// with the runtime's own report (not through the logger,
				// so not redacted) and lose the batch's other records: it
				// fails this record, which comes back.
				defer func() {
					if p := recover(); p != nil {
						slog.ErrorContext(ctx, "message panicked", "message", r.MessageId, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
						failed[i] = fmt.Errorf("panic: %v", p)
					}
				}()
				if err := h(rctx, m); err != nil {
					failed[i] = err
				}
			})
		}
		wg.Wait()
		var resp events.SQSEventResponse
		var first error
		for i, r := range ev.Records {
			if failed[i] != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
				if first == nil {
					first = fmt.Errorf("message %s: %w", r.MessageId, failed[i])
				}
			}
		}
		if n := len(resp.BatchItemFailures); n > 0 {
			// One line per invocation, not one per message: the messages
			// come back by themselves (a busy store, a receiver past the
			// invocation's time); the queue's age and dead-letter alarms
			// watch what does not.
			slog.WarnContext(ctx, "messages failed and come back", "messages", n, "of", len(ev.Records), "first", first)
		}
		return resp, nil
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
