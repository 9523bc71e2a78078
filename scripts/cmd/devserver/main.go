// Command devserver serves every endpoint family of /api/v1 through the same
// handlers as the Lambdas, on AWS DynamoDB Local, which it starts as its
// child and stops with itself (or on the engine DYNAMODB_ENDPOINT names).
// Its surface is fixed by LOCAL-CONTRACT.md.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/practice-api/practice-api/scripts/internal/localrun"
	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/families"
	"github.com/practice-api/practice-api/shared/lambdahttp"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/seed"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		os.Exit(1)
	}
}

func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s for the API (is the port taken? set LISTEN_ADDR): %w", addr, err)
	}
	return ln, nil
}

func run() error {
	var level slog.LevelVar
	log := app.JSONLogs(&level)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The environment, read once; the contract's devserver default admits
	// loopback and private webhook targets unless told otherwise.
	conf, err := config.Load(config.With(os.LookupEnv, map[string]string{"WEBHOOK_ALLOW_PRIVATE_TARGETS": "1"}))
	if err != nil {
		return err
	}
	level.Set(conf.LogLevel)
	apiLn, err := listen(conf.ListenAddr)
	if err != nil {
		return err
	}
	db, cfg, engine, err := localrun.Store(ctx, conf)
	if err != nil {
		return err
	}
	defer engine.Stop()
	// Without a stream, the dispatcher learns of this process's pending
	// events from its client's writes, and sweeps their shards at once.
	written := outbox.NewWritten()
	db.Client = dynamodb.New(db.Client.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, written.Watch) })
	if err := db.EnsureTable(ctx); err != nil {
		return err
	}
	env, err := apiapp.Load(ctx, db, conf, log)
	if err != nil {
		return err
	}
	// What configseed does at a deploy: the stage's default rate limit in
	// the table, where scripts/admin counts keys against ceilings at it.
	if err := app.PublishStageLimit(ctx, db, conf.RateLimitPerMinute); err != nil {
		return err
	}
	// Background workers in-process, on the same store: the outbox
	// dispatcher polls for pending events (the stream's stand-in) and the
	// workers consume queues kept in the table (SQS's stand-in: what is
	// queued survives a kill -9 of this process, with LOCAL_DYNAMODB_DIR).
	// Visibility outlasts a delivery's claim (60 s), so a job a killed
	// process held comes back to a claim it may take over; five receives,
	// then dead, as the AWS queues' redrive policy.
	enrichQ, deliveryQ := queue.NewTable(db, "enrichment", 90*time.Second, 5), queue.NewTable(db, "delivery", 90*time.Second, 5)
	workers, err := app.NewWorkers(ctx, db, enrichQ, deliveryQ, conf, log)
	if err != nil {
		return err
	}
	workers.Dispatcher.Written = written
	kick := make(chan struct{}, 1)
	go workers.Dispatcher.Poll(ctx, kick, time.Second, func(err error) { log.Error("outbox sweep", "err", err) })
	go app.SweepClaimsEvery(ctx, workers.Deliverer, db.Clock, time.Minute, workers.Metrics) // as the schedule's sweep on AWS
	go queue.Run(ctx, log, enrichQ, "enrichment", 1, workers.Enricher.Handle)
	// Deliveries: each as soon as a worker is free (a slow receiver holds
	// its own worker only), quiet organisations' first (the table queue is
	// a fair queue), at most WEBHOOK_ENDPOINT_CONCURRENCY to one endpoint.
	go queue.Run(ctx, log, deliveryQ, "webhook-delivery", conf.DeliveryWorkers, workers.Deliverer.Handle)
	go func() { // the fair queue's metrics, as SQS publishes them, while an organisation is a noisy neighbour
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if m := deliveryQ.Fairness(); m.NoisyGroups > 0 {
					log.Info("fair queue", "queue", "delivery", "metrics", m, "noisy_groups", deliveryQ.Noisy())
				}
			}
		}
	}()
	if env.Edge.PublicBaseURL == "" { // links and Location name the address served, whatever Host a client sends
		env.Edge.PublicBaseURL = "http://" + apiLn.Addr().String()
	}
	// Where AWS starts a company's enrichment from the table's stream, the
	// devserver starts it after the create; a company whose create was
	// answered but whose job a kill lost is found at the next start.
	handler, err := families.Handler(env.Edge, db, workers.Deliverer, families.AfterCompanyCreate(func(ctx context.Context, org string, c party.Company) {
		if err := workers.Dispatcher.DispatchCompany(context.WithoutCancel(ctx), org, c.ID, c.CVR, c.CreatedAt); err != nil {
			log.Error("start enrichment", "company_id", c.ID, "err", err)
		}
	}))
	if err != nil {
		return err
	}

	resumed := 0
	err = party.PendingCompanies(ctx, db, "", func(org string, c party.Company) error {
		resumed++
		return workers.Dispatcher.DispatchCompany(ctx, org, c.ID, c.CVR, c.CreatedAt)
	})
	if err != nil {
		return fmt.Errorf("resume pending enrichments: %w", err)
	}
	if resumed > 0 {
		log.Info("resumed pending company enrichments", "companies", resumed)
	}
	if err := seed.DemoLine(ctx, db, os.Stdout, conf.SeedDemo); err != nil {
		return err
	}
	// Each request gets its family's function's deadline, as on AWS: a
	// store that stops answering is a 503 with Retry-After in 9.5 s.
	apiSrv := apiServer(kickAfterWrites(lambdahttp.RequestDeadlines(handler), kick), conf.RequestReadTimeout)
	base := "http://" + apiLn.Addr().String() + "/api/v1"
	return localrun.Serve(ctx, apiSrv, apiLn, engine, base, func() {
		log.Info("devserver ready", "base_url", base, "dynamodb_endpoint", cfg.Endpoint, "table", cfg.TableName)
	})
}

// apiServer is the HTTP server with the limits API Gateway would apply in
// front of a Lambda: a whole request (headers and body) must arrive within
// read (REQUEST_READ_TIMEOUT, default 30 s, API Gateway's integration
// timeout), so a client that trickles a body cannot hold a connection;
// headers within 10 s; idle keep-alive connections close after 2 minutes.
func apiServer(h http.Handler, read time.Duration) *http.Server {
	return &http.Server{Handler: h, ReadTimeout: read, ReadHeaderTimeout: min(read, 10*time.Second),
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

// kickAfterWrites wakes the outbox dispatcher after every request that may
// have written an event (any method but GET and HEAD): where AWS has the
// table's stream, the devserver knows its own writes.
func kickAfterWrites(next http.Handler, kick chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			select {
			case kick <- struct{}{}:
			default: // a sweep is already due
			}
		}
	})
}
