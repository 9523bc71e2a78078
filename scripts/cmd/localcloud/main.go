// Command localcloud runs the stack we deploy, locally, with no Docker and
// no AWS account: the synthesized template of the local stage and its own
// bootstrap binaries, each Lambda a process (or several) under an in-repo
// Lambda Runtime API, behind HTTP API routing read from the template, with
// the table's stream, the queues and the schedule wired as the template
// wires them. Its command-line surface is scripts/devserver's, word for
// word (LOCAL-CONTRACT.md); the difference is what serves.
//
// Unless LOCALCLOUD_TEMPLATE names a template (with its assets beside it),
// it builds the bootstraps for this machine's architecture and synthesizes
// the local stage into .bin/localcloud-stack first (again only when the
// functions, infra/ or cdk.json changed).
//
// Each AWS service is a package of its own under internal/, behind small
// interfaces: stack (the template reader), lambda (processes, the Runtime
// API, limits), apigw (the HTTP API), sqsserver (queues), iam (roles and
// the table's guard), eventsource (stream and queue mappings, filters) and
// schedule (rules). This command wires them from the template (main.go),
// with the stage's settings (settings.go), the synth (synth.go), the
// table (table.go) and the checks AWS makes when it creates the stack
// (checks.go).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/apigw"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/clock"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/eventsource"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/schedule"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/practice-api/practice-api/scripts/internal/localrun"
	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/seed"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localcloud:", err)
		os.Exit(1)
	}
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run() error {
	app.JSONLogs(slog.LevelInfo) // its own lines; each function logs at its own LOG_LEVEL
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The settings, read and checked once (the functions get theirs from
	// the template and the contract's pass-through below).
	conf, err := config.FromEnv()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", conf.ListenAddr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s for the API (is the port taken? set LISTEN_ADDR): %w", conf.ListenAddr, err)
	}
	tplPath := os.Getenv("LOCALCLOUD_TEMPLATE")
	if tplPath == "" {
		if tplPath, err = synthesize(ctx); err != nil {
			return err
		}
	}
	st, err := stack.Load(tplPath)
	if err != nil {
		return err
	}
	if err := checkArch(st); err != nil {
		return err
	}
	if err := checkSettings(st); err != nil {
		return err
	}

	// The engine, as the devserver starts it, and the table the template defines.
	db, cfg, engine, err := localrun.Store(ctx, conf)
	if err != nil {
		return err
	}
	defer engine.Stop()
	streamArn, err := createTable(ctx, db, st.Table)
	if err != nil {
		return err
	}

	// The queues, on the in-repo SQS server.
	sqsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ids := iam.NewIdentities() // each caller's own access key id, for the queues and the table
	sqs := sqsserver.New("http://"+sqsLn.Addr().String(), ids)
	sqsSrv := &http.Server{Handler: sqs, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = sqsSrv.Serve(sqsLn) }()
	defer sqsSrv.Close()
	if err := capVisibility(st, os.Getenv("LOCALCLOUD_QUEUE_VISIBILITY")); err != nil {
		return err
	}
	queues := map[string]*sqsserver.Queue{}
	var create func(id string) *sqsserver.Queue
	create = func(id string) *sqsserver.Queue {
		if q, ok := queues[id]; ok {
			return q
		}
		spec := st.Queues[id]
		var dlq *sqsserver.Queue
		if spec.DeadLetter != "" {
			dlq = create(spec.DeadLetter)
		}
		queues[id] = sqs.Create(spec, dlq)
		return queues[id]
	}
	for id := range st.Queues {
		create(id)
	}
	// SQS publishes a fair queue's metrics to CloudWatch; localcloud logs
	// them every 10 s while a queue has a noisy group.
	go reportFairness(ctx, queues, 10*time.Second)
	// Kept beside the table's data: a restart on the same folder finds its
	// queued messages, as SQS keeps them (in memory with the engine's data
	// otherwise, both gone at exit).
	if conf.LocalDynamoDBDir != "" {
		if err := sqs.OpenJournal(filepath.Join(conf.LocalDynamoDBDir, "localcloud-queues.jsonl")); err != nil {
			return err
		}
		defer sqs.Journal.Close()
		stopCompact := make(chan struct{})
		defer close(stopCompact)
		go sqs.CompactEvery(time.Minute, stopCompact)
	}

	// The functions, each with the environment the template gives it, the
	// contract's settings, and where the local services are.
	base := "http://" + ln.Addr().String()
	settings := passedThrough()
	res := &stack.Resolver{Stack: st, Table: cfg.TableName, StreamArn: streamArn, Queues: addrsOf(queues), APIEndpoint: base}
	// Each function's calls are checked against its role (package iam): the
	// queue server checks its own; the functions reach the table through a
	// guard in front of the engine.
	pol, err := iam.LoadPolicies(st, res)
	if err != nil {
		return err
	}
	if err := checkSourcePermissions(st, res, pol); err != nil {
		return err
	}
	sqs.Policy = pol
	guardLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	tableFaults, tableURL, stopFaults, err := serveTableFaults(cfg.Endpoint, ids) // the campaign's store faults, behind the guard
	if err != nil {
		return err
	}
	defer stopFaults()
	guard, err := iam.NewDynamoGuard(tableURL, ids, pol, cfg.TableName, iam.TableKeys(st.Table.Props))
	if err != nil {
		return err
	}
	guardSrv := &http.Server{Handler: guard, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = guardSrv.Serve(guardLn) }()
	defer guardSrv.Close()
	scale, err := timeScale()
	if err != nil {
		return err
	}
	logs := &lambda.LogWriter{W: os.Stderr}
	maxConc := 10
	// Each function serves through its live alias, on version 1 (the
	// template's bootstrap) until a release publishes another.
	fns := map[string]*lambda.Alias{}
	var obs *observability
	apisLn, err := net.Listen("tcp", "127.0.0.1:0") // Lambda's Invoke and CodeDeploy's hook calls (the release check's)
	if err != nil {
		return err
	}
	for id, spec := range st.Functions {
		env, err := functionEnv(spec, res, settings, "http://"+guardLn.Addr().String(), sqs.Base, sqs.Credential(spec.Name))
		if err != nil {
			return err
		}
		env = withAPIs(env, "http://"+apisLn.Addr().String())
		fns[id] = lambda.NewAlias("live", lambda.New(spec, env, res.FunctionArn(id), maxConc, &lambda.Logger{Name: spec.Name, W: logs}))
	}
	defer func() {
		var wg sync.WaitGroup
		for _, f := range fns {
			wg.Go(f.Stop)
		}
		wg.Wait()
	}()
	// CloudWatch (metrics and the template's alarms), SNS (the alarms'
	// topics) and CodeDeploy (releases), on LOCALCLOUD_TIME_SCALE's clock.
	manual, err := manualClock()
	if err != nil {
		return err
	}
	if obs, err = newObservability(st, res, scale, manual, fns); err != nil {
		return err
	}
	logs.Metrics, obs.queues, obs.table, tableFaults.Metrics = obs.store, queues, tableFaults, obs.store
	defer obs.serveAPIs(apisLn, st)()
	for _, a := range fns {
		a.Version("1").Metrics = obs.store
	}

	// The custom resources (the stage's secrets), as CloudFormation makes
	// them before the functions that read them serve.
	if err := createCustomResources(ctx, st, fns); err != nil {
		return err
	}

	// The demo organisation, as the devserver makes it.
	if err := seed.DemoLine(ctx, db, os.Stdout, conf.SeedDemo); err != nil {
		return err
	}

	// The event sources, and the routes.
	srcCtx, stopSources := context.WithCancel(ctx)
	var sources sync.WaitGroup
	defer func() { stopSources(); sources.Wait() }()
	if err := startSources(srcCtx, &sources, st, cfg.Endpoint, streamArn, fns, queues, scale, manual); err != nil {
		return err
	}
	routes := map[string]apigw.Function{}
	for id, f := range fns {
		routes[id] = f
	}
	gw, err := apigw.New(st, routes)
	if err != nil {
		return err
	}
	gw.Metrics, gw.AccessLog = obs.store, obs.accessLog
	res.APIID = gw.APIID()
	if manual == nil { // the manual clock's minutes sample and evaluate (newObservability)
		sources.Go(func() { obs.evaluator.Run(srcCtx) })
		sources.Go(func() { obs.sampleQueues(srcCtx, scale) })
	}
	operator := sqs.Credential("operator") // for the runbook's rehearsals (aws --endpoint-url)
	control, stopControl, err := serveControl(obs.control(srcCtx, operator, st))
	if err != nil {
		return err
	}
	defer stopControl()
	apiSrv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: apigw.IntegrationTimeout, IdleTimeout: 2 * time.Minute}
	return localrun.Serve(ctx, apiSrv, ln, engine, base+"/api/v1", func() {
		slog.Info("localcloud ready", "base_url", base+"/api/v1", "template", tplPath, "functions", len(fns), "routes", len(st.Routes),
			"queues", len(st.Queues), "sqs_endpoint", sqs.Base, "sqs_access_key_id", operator, "dynamodb_endpoint", cfg.Endpoint, "table", cfg.TableName,
			"control_endpoint", control, "api_id", gw.APIID(), "alarms", len(obs.alarms), "time_scale", scale, "manual_clock", manual != nil)
	})
}

// startSources starts the template's event source mappings (the table's
// stream, the queues) and schedule rules, each a goroutine of sources
// until ctx ends. With the manual clock (manual), the rules fire at its
// ticks instead, each invocation a participant of the clock until it has
// its answer (the clock moves on once the minute's check and sweep are
// done, as it does once a deployment has acted; a hang holds only the
// invocation's end), their retries wait on it, and the stream's iterator
// age is measured on it.
func startSources(ctx context.Context, sources *sync.WaitGroup, st *stack.Stack, engine, streamArn string, fns map[string]*lambda.Alias,
	queues map[string]*sqsserver.Queue, scale float64, manual *clock.Manual) error {
	streams := dynamodbstreams.New(dynamodbstreams.Options{Region: stack.Region, BaseEndpoint: aws.String(engine),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	for _, m := range st.StreamMappings {
		consumer := lambda.StreamConsumer{Alias: fns[m.Function], Scale: scale}
		if manual != nil {
			consumer.Age = func(created time.Time) time.Duration { return manual.Now().Sub(manual.At(created)) }
		}
		s := &eventsource.Stream{Spec: m, Fn: consumer, Client: streams, StreamArn: streamArn}
		if m.OnFailure != "" {
			s.OnFailure = queues[m.OnFailure]
		}
		var err error
		if s.Filters, err = eventsource.ParseFilters(m.Filters); err != nil {
			return err
		}
		sources.Go(func() { s.Run(ctx) })
	}
	for _, m := range st.QueueMappings {
		q := &eventsource.Queue{Spec: m, Fn: fns[m.Function], Queue: queues[m.Queue]}
		var err error
		if q.Filters, err = eventsource.ParseFilters(m.Filters); err != nil {
			return err
		}
		sources.Go(func() { q.Run(ctx) })
	}
	for _, sp := range st.Schedules {
		every := sp.Every
		sp.Every = time.Duration(float64(sp.Every) / scale) // EventBridge's clock runs at LOCALCLOUD_TIME_SCALE
		sch := &schedule.Rule{Spec: sp}
		for _, t := range sp.Targets {
			at := &schedule.Target{Fn: fns[t.Function], Retries: t.Retries}
			if c, ok := st.AsyncConfigs[t.Function]; ok {
				at.Retries = c.Retries
				if c.OnFailure != "" {
					at.OnFailure = queues[c.OnFailure]
				}
			}
			if t.DeadLetter != "" {
				at.DeadLetter = queues[t.DeadLetter]
			}
			if manual != nil {
				at.Sleep = manual.Sleep
			}
			sch.Targets = append(sch.Targets, at)
		}
		if manual != nil {
			manual.OnTick(func(now time.Time) {
				if now.Truncate(every).Equal(now) {
					sch.Fire(ctx, now, func() func() { return manual.Join().Leave })
				}
			})
			continue
		}
		sources.Go(func() { sch.Run(ctx) })
	}

	return nil
}

// addrsOf is where each queue is served, for the resolver.
func addrsOf(queues map[string]*sqsserver.Queue) map[string]stack.QueueAddr {
	addrs := map[string]stack.QueueAddr{}
	for id, q := range queues {
		addrs[id] = q.Addr()
	}
	return addrs
}

// reportFairness logs, every d until ctx ends, the fair-queue metrics of
// each queue with a noisy group (ApproximateNumberOfNoisyGroups and the
// InQuietGroups family, as SQS publishes them), and its noisy groups.
func reportFairness(ctx context.Context, queues map[string]*sqsserver.Queue, d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, q := range queues {
			if m := q.Fairness(); m.NoisyGroups > 0 {
				slog.Info("sqs fair queue", "queue", q.Name, "metrics", m, "noisy_groups", q.Noisy())
			}
		}
	}
}
