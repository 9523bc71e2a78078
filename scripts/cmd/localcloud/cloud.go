package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/clock"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/codedeploy"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sns"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/tablefaults"
	sharedclock "github.com/practice-api/practice-api/shared/clock"
)

// timeScale is LOCALCLOUD_TIME_SCALE: how many times faster than the wall
// clock CloudWatch's periods and evaluations, CodeDeploy's intervals and
// EventBridge's rate() schedules run (1 by default; 60 makes a minute a
// second). Functions' timeouts, queues' visibility and everything the
// functions do run in real time.
func timeScale() (float64, error) {
	v := os.Getenv("LOCALCLOUD_TIME_SCALE")
	if v == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 || f > 3600 {
		return 0, fmt.Errorf("LOCALCLOUD_TIME_SCALE=%q: a number from 1 to 3600", v)
	}
	return f, nil
}

// manualClock is LOCALCLOUD_CLOCK: "manual" gives CloudWatch and
// CodeDeploy a clock that moves only when the control API says so (POST
// /localcloud/clock), starting at the current minute; "" or "wall" keeps
// the wall clock (LOCALCLOUD_TIME_SCALE times faster). The manual clock
// drives the metrics' timestamps, the queues' depth samples, the alarms'
// evaluation (at each minute's end), CodeDeploy's intervals, alarm polls
// and hook timeout, and the hook's asynchronous retries; EventBridge's
// schedules, the stream's iterator age and everything the functions do
// keep the wall clock.
func manualClock() (*clock.Manual, error) {
	switch v := os.Getenv("LOCALCLOUD_CLOCK"); v {
	case "", "wall":
		return nil, nil
	case "manual":
		return clock.NewManual(time.Now().UTC().Truncate(time.Minute), time.Minute), nil
	default:
		return nil, fmt.Errorf("LOCALCLOUD_CLOCK=%q: manual, or wall (the default)", v)
	}
}

// capVisibility is LOCALCLOUD_QUEUE_VISIBILITY (v, a duration; "" for
// none): every queue's visibility timeout at most v. It is localcloud's
// only, for tests that want a message whose handling failed back sooner
// than the template's timeout (the local template's queues keep the 180 s
// AWS runs them with, six times their functions' 30 s, as Lambda
// advises); a cap below the timeout of a function that a queue's event
// source mapping invokes is refused, as Lambda refuses such a mapping
// (the message would come back while its invocation still runs).
// https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html
func capVisibility(st *stack.Stack, v string) error {
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return fmt.Errorf("LOCALCLOUD_QUEUE_VISIBILITY=%q: a duration of a second or more", v)
	}
	for _, m := range st.QueueMappings {
		if f := st.Functions[m.Function]; f != nil && f.Timeout > d {
			return fmt.Errorf("LOCALCLOUD_QUEUE_VISIBILITY=%s is below the %v timeout of %s, which queue %s invokes", v, f.Timeout, f.Name, m.Queue)
		}
	}
	for _, q := range st.Queues {
		q.Visibility = min(q.Visibility, d)
	}
	return nil
}

// observability is the stack's CloudWatch, SNS and CodeDeploy: the metrics
// every service puts, the template's alarms on them, the topics they
// notify, and the functions' releases.
type observability struct {
	store     *cloudwatch.Store
	evaluator *cloudwatch.Evaluator
	alarms    map[string]*cloudwatch.Alarm
	topics    map[string]*sns.Topic
	filters   []*cloudwatch.Filter
	deploy    *codedeploy.Service
	groups    map[string]*codedeploy.Group // by function logical id
	aliases   map[string]*lambda.Alias     // by function logical id
	queues    map[string]*sqsserver.Queue  // by logical id
	table     *tablefaults.Faults          // the table's faults, per calling function
	manual    *clock.Manual                // LOCALCLOUD_CLOCK=manual's clock (nil: the wall clock)
	ageScale  float64                      // the queues' message ages' scale (LOCALCLOUD_TIME_SCALE; 1 with the manual clock)

	mu          sync.Mutex
	targets     map[string]string // function logical id → the version its running release targets
	deployments map[string]*codedeploy.Deployment
}

// newObservability reads the template's alarms, topics, metric filters
// and deployment groups; what it cannot evaluate stops localcloud.
// With a manual clock (manual), the metrics are stamped with its time and
// the alarms evaluated at each of its minutes' end, unscaled.
func newObservability(st *stack.Stack, res *stack.Resolver, scale float64, manual *clock.Manual, aliases map[string]*lambda.Alias) (*observability, error) {
	o := &observability{store: cloudwatch.NewStore(), alarms: map[string]*cloudwatch.Alarm{}, groups: map[string]*codedeploy.Group{},
		aliases: aliases, targets: map[string]string{}, deployments: map[string]*codedeploy.Deployment{}, manual: manual, ageScale: scale}
	res.VersionOf = func(fn string) string {
		o.mu.Lock()
		t := o.targets[fn]
		o.mu.Unlock()
		if t != "" {
			return t
		}
		if a := aliases[fn]; a != nil {
			p, _, _ := a.Routing()
			return p
		}
		return "1"
	}
	topicARN := func(id string) string { return "arn:aws:sns:" + stack.Region + ":" + stack.Account + ":" + id }
	res.TopicARN = func(id string) (string, bool) {
		if r := st.Resources[id]; r != nil && r["Type"] == "AWS::SNS::Topic" {
			return topicARN(id), true
		}
		return "", false
	}
	var err error
	if o.topics, err = sns.Load(st.Resources, topicARN, res.Resolve); err != nil {
		return nil, err
	}
	var alarms []*cloudwatch.Alarm
	for id, r := range st.Resources {
		p, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::CloudWatch::Alarm":
			a, err := cloudwatch.ParseAlarm(id, p)
			if err != nil {
				return nil, err
			}
			o.alarms[id] = a
			alarms = append(alarms, a)
		case "AWS::Logs::MetricFilter":
			f, err := cloudwatch.ParseFilter(fmt.Sprint(p["FilterPattern"]))
			if err != nil {
				return nil, fmt.Errorf("metric filter %s: %w", id, err)
			}
			for _, tr := range p["MetricTransformations"].([]any) {
				tm := tr.(map[string]any)
				g := *f
				g.Namespace, g.Name, g.Dims = fmt.Sprint(tm["MetricNamespace"]), fmt.Sprint(tm["MetricName"]), map[string]string{}
				g.Value, _ = strconv.ParseFloat(fmt.Sprint(tm["MetricValue"]), 64)
				dims, _ := tm["Dimensions"].([]any)
				for _, d := range dims {
					dm := d.(map[string]any)
					g.Dims[fmt.Sprint(dm["Key"])] = fmt.Sprint(dm["Value"])
				}
				o.filters = append(o.filters, &g)
			}
		case "AWS::Lambda::Alias":
			up, _ := r["UpdatePolicy"].(map[string]any)["CodeDeployLambdaAliasUpdate"].(map[string]any)
			gid := stack.RefID(up["DeploymentGroupName"])
			if gid == "" {
				continue
			}
			gp, _ := st.Resources[gid]["Properties"].(map[string]any)
			g := &codedeploy.Group{ID: gid, Config: fmt.Sprint(gp["DeploymentConfigName"]), Hook: stack.RefID(up["BeforeAllowTrafficHook"])}
			if ac, ok := gp["AlarmConfiguration"].(map[string]any); ok && ac["Enabled"] != false {
				for _, al := range ac["Alarms"].([]any) {
					g.Alarms = append(g.Alarms, stack.RefID(al.(map[string]any)["Name"]))
				}
			}
			if ar, ok := gp["AutoRollbackConfiguration"].(map[string]any); ok {
				g.AutoRollback = ar["Enabled"] == true
			}
			if _, err := codedeploy.ParseConfig(g.Config); err != nil {
				return nil, fmt.Errorf("deployment group %s: %w", gid, err)
			}
			o.groups[stack.RefID(p["FunctionName"])] = g
		}
	}
	sort.Slice(alarms, func(i, j int) bool { return alarms[i].ID < alarms[j].ID })
	o.evaluator = &cloudwatch.Evaluator{Store: o.store, Alarms: alarms, Scale: scale, Resolve: res.Resolve, Notify: o.notify}
	o.deploy = &codedeploy.Service{Scale: scale, AlarmState: func(id string) string {
		if a := o.alarms[id]; a != nil {
			s, _ := a.State()
			return s
		}
		return ""
	}, Target: func(fn, v string) {
		o.mu.Lock()
		o.targets[fn] = v
		o.mu.Unlock()
	}, Invoke: func(ctx context.Context, fn string, event []byte) { go o.invokeAsync(ctx, fn, event, scale) }}
	if manual != nil {
		// CloudWatch on the manual clock: each minute's end samples the
		// queues' depth (SQS publishes it every minute) and then evaluates
		// every alarm on the minute just ended, as CloudWatch evaluates
		// them every minute; CodeDeploy's deployments act after that.
		// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html
		o.store.Clock, o.evaluator.Scale, o.deploy.Clock, o.ageScale = manual, 1, manual, 1
		manual.OnTick(func(time.Time) { o.sampleQueuesOnce() })
		manual.OnTick(o.evaluator.Evaluate)
	}
	return o, nil
}

// invokeAsync invokes a function (its logical id) asynchronously, as
// CodeDeploy invokes a lifecycle hook: an invocation that fails or is
// throttled is retried twice, a minute and then two minutes later (on the
// scaled clock), as Lambda retries an asynchronous invocation.
// https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html
func (o *observability) invokeAsync(ctx context.Context, fn string, event []byte, scale float64) {
	a := o.aliases[fn]
	if a == nil {
		slog.Error("codedeploy: no hook function", "function", fn)
		return
	}
	for attempt := 0; ; attempt++ {
		out, _, err := a.Invoke(ctx, event, lambda.NoWait)
		if err == nil && out.Status == "ok" || attempt == 2 {
			return
		}
		var lambdaClock sharedclock.Clock = clock.NewScaled(scale)
		if o.manual != nil {
			lambdaClock = o.manual
		}
		if sharedclock.SleepOn(ctx, lambdaClock, time.Duration(attempt+1)*time.Minute) != nil {
			return
		}
	}
}

// withAPIs adds to a function's environment the SDK's endpoints of Lambda
// and CodeDeploy: localcloud's (serveAPIs), where the release check
// invokes versions and reports to CodeDeploy.
func withAPIs(env []string, apis string) []string {
	return append(env, "AWS_ENDPOINT_URL_LAMBDA="+apis, "AWS_ENDPOINT_URL_CODEDEPLOY="+apis)
}

// serveAPIs serves, on ln, Lambda's Invoke and CodeDeploy's hook calls
// for the functions (the release check: AWS_ENDPOINT_URL_LAMBDA and
// AWS_ENDPOINT_URL_CODEDEPLOY); the caller's role is not checked on
// these (the iam package checks the table's and the queues' calls).
func (o *observability) serveAPIs(ln net.Listener, st *stack.Stack) func() {
	byName := map[string]*lambda.Alias{}
	for id, a := range o.aliases {
		byName[st.Functions[id].Name] = a
	}
	app := ""
	for id, r := range st.Resources {
		if r["Type"] == "AWS::CodeDeploy::Application" {
			app = id
		}
	}
	invoke := lambda.InvokeAPI{Functions: byName}
	deploy := codedeploy.API{Application: app, Deployment: o.deploy.Deployment}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "CodeDeploy_20141006.") {
			deploy.ServeHTTP(w, r)
			return
		}
		invoke.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }
}

// notify logs an alarm's change of state and publishes it to the
// topics of its actions, as CloudWatch does: only where the topic's
// policy lets CloudWatch publish.
func (o *observability) notify(a *cloudwatch.Alarm, from, to, reason string) {
	slog.Info("cloudwatch alarm", "alarm", a.ID, "from", from, "to", to, "reason", reason)
	var actions []string
	switch to {
	case cloudwatch.InAlarm:
		actions = a.AlarmActions
	case cloudwatch.OK:
		actions = a.OKActions
	case cloudwatch.InsufficientData:
		actions = a.InsufficientDataActions
	}
	arn := "arn:aws:cloudwatch:" + stack.Region + ":" + stack.Account + ":alarm:" + a.ID
	for _, id := range actions {
		t := o.topics[id]
		if t == nil {
			continue
		}
		if ok, why := t.AllowsService("cloudwatch.amazonaws.com", stack.Account, arn); !ok {
			slog.Error("cloudwatch alarm action failed", "alarm", a.ID, "topic", id, "err", why)
			continue
		}
		msg, _ := json.Marshal(map[string]string{"AlarmName": a.ID, "AlarmDescription": a.Description, "NewStateValue": to,
			"OldStateValue": from, "NewStateReason": reason, "AlarmArn": arn})
		t.Notify(fmt.Sprintf("%s: %q in %s", to, a.ID, stack.Region), string(msg))
	}
}

// accessLog applies the template's metric filters to an access log line.
func (o *observability) accessLog(fields map[string]string) {
	for _, f := range o.filters {
		f.Count(o.store, fields)
	}
}

// sampleQueues puts each queue's depth and the age of its oldest message
// every (scaled) minute (sampleQueuesOnce).
func (o *observability) sampleQueues(ctx context.Context, scale float64) {
	t := time.NewTicker(time.Duration(float64(time.Minute) / scale))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		o.sampleQueuesOnce()
	}
}

// sampleQueuesOnce puts each queue's depth and the age of its oldest
// message now, as SQS publishes ApproximateNumberOfMessagesVisible and
// ApproximateAgeOfOldestMessage (seconds; none while the queue holds no
// message). The age is on the alarms' clock (LOCALCLOUD_TIME_SCALE), as
// the stream's IteratorAge is: a message that has waited 15 s at scale 60
// has waited the 15 minutes a queue-age alarm watches for (with the
// manual clock, unscaled: the messages keep the wall clock).
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html
func (o *observability) sampleQueuesOnce() {
	for _, q := range o.queues {
		v, _, _ := q.Counts()
		o.store.Put(cloudwatch.Metric{Namespace: "AWS/SQS", Name: "ApproximateNumberOfMessagesVisible", Dims: map[string]string{"QueueName": q.Name}}, float64(v))
		if age, ok := q.OldestAge(time.Now()); ok {
			if o.manual != nil { // the message's wait on the manual clock
				age = o.manual.Now().Sub(o.manual.At(time.Now().Add(-age)))
			}
			o.store.Put(cloudwatch.Metric{Namespace: "AWS/SQS", Name: "ApproximateAgeOfOldestMessage", Dims: map[string]string{"QueueName": q.Name}},
				math.Floor(age.Seconds()*o.ageScale))
		}
	}
}

// deploymentConfig is CodeDeploy's name of a deployment setting of infra
// (canary10Percent10Minutes), or the name itself.
func deploymentConfig(name string) string {
	if name == "" || strings.HasPrefix(name, "CodeDeployDefault.") {
		return name
	}
	return "CodeDeployDefault.Lambda" + strings.ToUpper(name[:1]) + name[1:]
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// serveControl starts the control API on a loopback port.
func serveControl(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// serveTableFaults serves the table's faults (package tablefaults) on a
// loopback port, in front of the engine: the guard passes the calls it
// allows there, so a fault acts after IAM's check, as DynamoDB throttles
// only calls it has authorized.
func serveTableFaults(engine string, ids *iam.Identities) (*tablefaults.Faults, string, func(), error) {
	f, err := tablefaults.New(engine, func(r *http.Request) string {
		who, _, _ := ids.Of(r)
		return who
	})
	if err != nil {
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return f, "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}
