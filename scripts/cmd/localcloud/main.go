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
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/tablefaults"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/practice-api/practice-api/scripts/internal/localrun"
	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store"
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
	l := &launch{ctx: ctx}
	defer l.stop()
	for _, step := range []func() error{
		l.readTemplate,
		l.startEngine,
		l.startQueues,
		l.guardTable,
		l.startFunctions,
		l.startObservability,
		l.createResources,
		l.startEventSources,
		l.startGateway,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return l.serve()
}

// launch is localcloud as run starts it, one step after another (each
// step's doc says what it starts), and what stops it: stops, run in
// reverse order at the end.
type launch struct {
	ctx   context.Context
	stops []func()

	conf    config.Config
	ln      net.Listener // the API's
	tplPath string
	st      *stack.Stack

	db        *store.DB
	cfg       store.Config
	engine    *localrun.Engine
	streamArn string

	ids    *iam.Identities // each caller's own access key id, for the queues and the table
	sqs    *sqsserver.Server
	queues map[string]*sqsserver.Queue // by logical id

	res         *stack.Resolver
	guardLn     net.Listener
	tableFaults *tablefaults.Faults

	scale   float64
	logs    *lambda.LogWriter
	apisLn  net.Listener
	fns     map[string]*lambda.Alias // by logical id
	manual  *clock.Manual
	obs     *observability
	sources sync.WaitGroup
	srcCtx  context.Context
	bell    *eventsource.Bell // rung as each invocation ends: the stream pollers look at once

	gw       *apigw.Gateway
	operator string
	control  string
}

// onStop runs f when localcloud stops, before what was started earlier.
func (l *launch) onStop(f func()) { l.stops = append(l.stops, f) }

// stop stops what the steps started, last first.
func (l *launch) stop() {
	for i := len(l.stops) - 1; i >= 0; i-- {
		l.stops[i]()
	}
}

// base is the API's address.
func (l *launch) base() string { return "http://" + l.ln.Addr().String() }

// readTemplate reads the settings (checked once: the functions get theirs
// from the template and the contract's pass-through), takes the API's
// port, and reads the template (synthesized first unless
// LOCALCLOUD_TEMPLATE names one) with the checks AWS makes of it.
func (l *launch) readTemplate() error {
	var err error
	if l.conf, err = config.FromEnv(); err != nil {
		return err
	}
	if l.ln, err = net.Listen("tcp", l.conf.ListenAddr); err != nil {
		return fmt.Errorf("cannot listen on %s for the API (is the port taken? set LISTEN_ADDR): %w", l.conf.ListenAddr, err)
	}
	l.tplPath = os.Getenv("LOCALCLOUD_TEMPLATE")
	if l.tplPath == "" {
		if l.tplPath, err = synthesize(l.ctx); err != nil {
			return err
		}
	}
	if l.st, err = stack.Load(l.tplPath); err != nil {
		return err
	}
	if err := checkArch(l.st); err != nil {
		return err
	}
	return checkSettings(l.st)
}

// startEngine starts the engine, as the devserver starts it, and creates
// the table the template defines.
func (l *launch) startEngine() error {
	var err error
	if l.db, l.cfg, l.engine, err = localrun.Store(l.ctx, l.conf); err != nil {
		return err
	}
	l.onStop(func() { _ = l.engine.Stop() })
	l.streamArn, err = createTable(l.ctx, l.db, l.st.Table)
	return err
}

// startQueues starts the in-repo SQS server with the template's queues.
// Their messages are kept beside the table's data (a restart on the same
// folder finds its queued messages, as SQS keeps them; in memory with the
// engine's data otherwise, both gone at exit).
func (l *launch) startQueues() error {
	sqsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	l.ids = iam.NewIdentities()
	l.sqs = sqsserver.New("http://"+sqsLn.Addr().String(), l.ids)
	sqsSrv := &http.Server{Handler: l.sqs, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = sqsSrv.Serve(sqsLn) }()
	l.onStop(func() { _ = sqsSrv.Close() })
	if err := capVisibility(l.st, os.Getenv("LOCALCLOUD_QUEUE_VISIBILITY")); err != nil {
		return err
	}
	l.queues = createQueues(l.sqs, l.st)
	// SQS publishes a fair queue's metrics to CloudWatch; localcloud logs
	// them every 10 s while a queue has a noisy group.
	go reportFairness(l.ctx, l.queues, 10*time.Second)
	if l.conf.LocalDynamoDBDir == "" {
		return nil
	}
	if err := l.sqs.OpenJournal(filepath.Join(l.conf.LocalDynamoDBDir, "localcloud-queues.jsonl")); err != nil {
		return err
	}
	l.onStop(l.sqs.Journal.Close)
	stopCompact := make(chan struct{})
	l.onStop(func() { close(stopCompact) })
	go l.sqs.CompactEvery(time.Minute, stopCompact)
	return nil
}

// createQueues creates the template's queues on sqs, each after its
// dead-letter queue.
func createQueues(sqs *sqsserver.Server, st *stack.Stack) map[string]*sqsserver.Queue {
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
	return queues
}

// guardTable checks each function's calls against its role (package
// iam): the queue server checks its own; the functions reach the table
// through a guard in front of the engine, and behind the guard the
// campaign's store faults.
func (l *launch) guardTable() error {
	l.res = &stack.Resolver{Stack: l.st, Table: l.cfg.TableName, StreamArn: l.streamArn, Queues: addrsOf(l.queues), APIEndpoint: l.base()}
	pol, err := iam.LoadPolicies(l.st, l.res)
	if err != nil {
		return err
	}
	if err := checkSourcePermissions(l.st, l.res, pol); err != nil {
		return err
	}
	l.sqs.Policy = pol
	if l.guardLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	faults, tableURL, stopFaults, err := serveTableFaults(l.cfg.Endpoint, l.ids)
	if err != nil {
		return err
	}
	l.tableFaults = faults
	l.onStop(stopFaults)
	guard, err := iam.NewDynamoGuard(tableURL, l.ids, pol, l.cfg.TableName, iam.TableKeys(l.st.Table.Props))
	if err != nil {
		return err
	}
	guardSrv := &http.Server{Handler: guard, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = guardSrv.Serve(l.guardLn) }()
	l.onStop(func() { _ = guardSrv.Close() })
	return nil
}

// startFunctions makes the functions, each with the environment the
// template gives it, the contract's settings, and where the local
// services are; each serves through its live alias, on version 1 (the
// template's bootstrap) until a release publishes another.
func (l *launch) startFunctions() error {
	var err error
	if l.scale, err = timeScale(); err != nil {
		return err
	}
	l.logs = &lambda.LogWriter{W: os.Stderr}
	maxConc := 10
	l.fns = map[string]*lambda.Alias{}
	// Where the functions call Lambda's Invoke and CodeDeploy's hook
	// calls (the release check's).
	if l.apisLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	settings := passedThrough()
	l.bell = &eventsource.Bell{}
	for id, spec := range l.st.Functions {
		env, err := functionEnv(spec, l.res, settings, "http://"+l.guardLn.Addr().String(), l.sqs.Base, l.sqs.Credential(spec.Name))
		if err != nil {
			return err
		}
		env = withAPIs(env, "http://"+l.apisLn.Addr().String())
		fn := lambda.New(spec, env, l.res.FunctionArn(id), maxConc, &lambda.Logger{Name: spec.Name, W: l.logs})
		fn.Ended = l.bell.Ring // a function may have written to the table
		l.fns[id] = lambda.NewAlias("live", fn)
	}
	l.onStop(func() {
		var wg sync.WaitGroup
		for _, f := range l.fns {
			wg.Go(f.Stop)
		}
		wg.Wait()
	})
	return nil
}

// startObservability starts CloudWatch (metrics and the template's
// alarms), SNS (the alarms' topics) and CodeDeploy (releases), on
// LOCALCLOUD_TIME_SCALE's clock or the manual one.
func (l *launch) startObservability() error {
	var err error
	if l.manual, err = manualClock(); err != nil {
		return err
	}
	if l.obs, err = newObservability(l.st, l.res, l.scale, l.manual, l.fns); err != nil {
		return err
	}
	l.logs.Metrics, l.obs.queues, l.obs.table, l.tableFaults.Metrics = l.obs.store, l.queues, l.tableFaults, l.obs.store
	l.onStop(l.obs.serveAPIs(l.apisLn, l.st))
	for _, a := range l.fns {
		v := a.Version("1")
		v.Metrics = l.obs.store
		if l.manual != nil { // a hang holds on the manual clock (its delay, the timeout)
			v.Clock = l.manual
		}
	}
	return nil
}

// createResources makes the custom resources (the stage's secrets), as
// CloudFormation makes them before the functions that read them serve,
// and the demo organisation, as the devserver makes it.
func (l *launch) createResources() error {
	if err := createCustomResources(l.ctx, l.st, l.fns); err != nil {
		return err
	}
	return seed.DemoLine(l.ctx, l.db, os.Stdout, l.conf.SeedDemo)
}

// startEventSources starts the event sources (startSources), stopped
// before the functions they invoke.
func (l *launch) startEventSources() error {
	srcCtx, stopSources := context.WithCancel(l.ctx)
	l.srcCtx = srcCtx
	l.onStop(func() { stopSources(); l.sources.Wait() })
	return startSources(srcCtx, &l.sources, l.st, l.cfg.Endpoint, l.streamArn, l.fns, l.queues, l.scale, l.manual, l.bell)
}

// startGateway makes the HTTP API's routes, starts the alarms' evaluation
// on the wall clock (the manual clock's minutes sample and evaluate:
// newObservability), and serves the control API.
func (l *launch) startGateway() error {
	routes := map[string]apigw.Function{}
	for id, f := range l.fns {
		routes[id] = f
	}
	var err error
	if l.gw, err = apigw.New(l.st, routes); err != nil {
		return err
	}
	l.gw.Metrics, l.gw.AccessLog = l.obs.store, l.obs.accessLog
	l.res.APIID = l.gw.APIID()
	if l.manual == nil {
		l.sources.Go(func() { l.obs.evaluator.Run(l.srcCtx) })
		l.sources.Go(func() { l.obs.sampleQueues(l.srcCtx, l.scale) })
	}
	l.operator = l.sqs.Credential("operator") // for the runbook's rehearsals (aws --endpoint-url)
	control, stopControl, err := serveControl(l.obs.control(l.srcCtx, l.operator, l.st))
	if err != nil {
		return err
	}
	l.control = control
	l.onStop(stopControl)
	return nil
}

// serve serves the API until ctx ends, after the ready line.
func (l *launch) serve() error {
	base := l.base()
	apiSrv := &http.Server{Handler: l.gw, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: apigw.IntegrationTimeout, IdleTimeout: 2 * time.Minute}
	return localrun.Serve(l.ctx, apiSrv, l.ln, l.engine, base+"/api/v1", func() {
		slog.Info("localcloud ready", "base_url", base+"/api/v1", "template", l.tplPath, "functions", len(l.fns), "routes", len(l.st.Routes),
			"queues", len(l.st.Queues), "sqs_endpoint", l.sqs.Base, "sqs_access_key_id", l.operator, "dynamodb_endpoint", l.cfg.Endpoint, "table", l.cfg.TableName,
			"control_endpoint", l.control, "api_id", l.gw.APIID(), "alarms", len(l.obs.alarms), "time_scale", l.scale, "manual_clock", l.manual != nil)
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
	queues map[string]*sqsserver.Queue, scale float64, manual *clock.Manual, bell *eventsource.Bell) error {
	streams := dynamodbstreams.New(dynamodbstreams.Options{Region: stack.Region, BaseEndpoint: aws.String(engine),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	for _, m := range st.StreamMappings {
		consumer := lambda.StreamConsumer{Alias: fns[m.Function], Scale: scale}
		if manual != nil {
			consumer.Age = func(created time.Time) time.Duration { return manual.Now().Sub(manual.At(created)) }
		}
		s := &eventsource.Stream{Spec: m, Fn: consumer, Client: streams, StreamArn: streamArn, Bell: bell}
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
	eventBridge := clock.NewScaled(scale) // EventBridge's clock runs at LOCALCLOUD_TIME_SCALE
	for _, sp := range st.Schedules {
		every := sp.Every
		sch := &schedule.Rule{Spec: sp, Clock: eventBridge}
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
			if manual != nil { // retries wait on the manual clock (else a minute of real time)
				at.Clock = manual
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
