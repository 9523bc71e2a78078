package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/codedeploy"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/tablefaults"
)

// control serves localcloud's release API, for make local-cloud-release
// and the tests: POST /localcloud/releases {"function", "bootstrap",
// "deployment"} publishes a version of the function from that bootstrap
// and runs its deployment group's deployment (the group's configuration,
// or the one named); GET /localcloud/releases/{id} is its status; GET
// /localcloud/alarms every alarm's state. A caller must send the operator
// key of the ready line (X-Localcloud-Key).
func (o *observability) control(ctx context.Context, key string, st *stack.Stack) http.Handler {
	c := &controlAPI{o: o, ctx: ctx, st: st}
	mux := http.NewServeMux()
	for _, r := range c.routes() {
		mux.HandleFunc(r.pattern, r.serve)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Localcloud-Key") != key {
			writeJSON(w, 403, map[string]string{"message": "send the operator key of the ready line in X-Localcloud-Key"})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// controlAPI is the control API's handlers over the stack's observability.
type controlAPI struct {
	o   *observability
	ctx context.Context // localcloud's: a release's deployment runs on after its request
	st  *stack.Stack
}

// controlRoute is one route of the control API.
type controlRoute struct {
	pattern string
	serve   http.HandlerFunc
}

// routes are the control API's routes.
func (c *controlAPI) routes() []controlRoute {
	return []controlRoute{
		{"POST /localcloud/releases", c.release},
		{"GET /localcloud/releases/{id}", c.releaseStatus},
		// The clock CloudWatch and CodeDeploy run on: GET its time; with
		// LOCALCLOUD_CLOCK=manual, POST {"advance":"1m"} moves it on and
		// answers once the alarms are evaluated at each minute's end passed
		// and every deployment has acted on them.
		{"GET /localcloud/clock", c.clock},
		{"POST /localcloud/clock", c.advanceClock},
		{"GET /localcloud/metrics", c.metric},
		{"POST /localcloud/faults", c.fault},
		{"GET /localcloud/functions", c.functions},
		{"GET /localcloud/alarms", c.alarms},
	}
}

// writeJSON answers code with v as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// refuse answers 400 with message.
func refuse(w http.ResponseWriter, message string) {
	writeJSON(w, 400, map[string]string{"message": message})
}

// fieldError is a request's mistake in one of its fields.
type fieldError struct{ field, message string }

func (e *fieldError) Error() string { return e.message }

// refuseField answers 400 with e's message and field.
func refuseField(w http.ResponseWriter, e *fieldError) {
	writeJSON(w, 400, map[string]string{"message": e.message, "field": e.field})
}

// functionID is the logical id of the template's function named name.
func (c *controlAPI) functionID(name string) (string, bool) {
	for id, f := range c.st.Functions {
		if f.Name == name {
			return id, true
		}
	}
	return "", false
}

// release publishes a version of a function from a bootstrap and runs its
// deployment group's deployment to it.
func (c *controlAPI) release(w http.ResponseWriter, r *http.Request) {
	var in struct{ Function, Bootstrap, Deployment string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		refuse(w, err.Error())
		return
	}
	fnID, _ := c.functionID(in.Function)
	alias, group := c.o.aliases[fnID], c.o.groups[fnID]
	if alias == nil || group == nil {
		writeJSON(w, 404, map[string]string{"message": "no function " + in.Function + " under a deployment group"})
		return
	}
	if !isExecutable(in.Bootstrap) {
		refuse(w, "bootstrap "+in.Bootstrap+" is not an executable file")
		return
	}
	shift, err := codedeploy.ParseConfig(deploymentConfig(cmpOr(in.Deployment, group.Config)))
	if err != nil {
		refuse(w, err.Error())
		return
	}
	v := alias.Publish(in.Bootstrap)
	d := c.o.deploy.Deploy(c.ctx, fnID, alias, group, shift, v)
	c.o.mu.Lock()
	c.o.deployments[d.ID] = d
	c.o.mu.Unlock()
	writeJSON(w, 201, map[string]string{"deployment_id": d.ID, "from": d.From, "to": v, "config": shift.Name})
}

// isExecutable reports whether path is a file someone may execute.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&0o111 != 0
}

// releaseStatus is a deployment's status and its traffic's shift.
func (c *controlAPI) releaseStatus(w http.ResponseWriter, r *http.Request) {
	c.o.mu.Lock()
	d := c.o.deployments[r.PathValue("id")]
	c.o.mu.Unlock()
	if d == nil {
		writeJSON(w, 404, map[string]string{"message": "no such deployment"})
		return
	}
	s, why := d.Status()
	pct, since := d.Traffic()
	writeJSON(w, 200, map[string]any{"status": s, "reason": why, "from": d.From, "to": d.To, "config": d.Config,
		"percent": pct, "shifted_at": since.UTC().Format(time.RFC3339)})
}

// clock is the time CloudWatch and CodeDeploy run on, and whether it is
// the manual clock.
func (c *controlAPI) clock(w http.ResponseWriter, r *http.Request) {
	if c.o.manual == nil {
		writeJSON(w, 200, map[string]any{"manual": false, "now": time.Now().UTC().Format(time.RFC3339Nano)})
		return
	}
	writeJSON(w, 200, map[string]any{"manual": true, "now": c.o.manual.Now().UTC().Format(time.RFC3339Nano)})
}

// advanceClock moves the manual clock on by {"advance"} (1s to 24h).
func (c *controlAPI) advanceClock(w http.ResponseWriter, r *http.Request) {
	var in struct{ Advance string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		refuse(w, err.Error())
		return
	}
	if c.o.manual == nil {
		writeJSON(w, 409, map[string]string{"message": "the clock is the wall clock: start localcloud with LOCALCLOUD_CLOCK=manual to move it"})
		return
	}
	d, err := time.ParseDuration(in.Advance)
	if err != nil || d <= 0 || d > 24*time.Hour {
		refuseField(w, &fieldError{"advance", fmt.Sprintf("advance %q: a duration from 1s to 24h (\"1m\")", in.Advance)})
		return
	}
	now, err := c.o.manual.Advance(d, 2*time.Minute)
	if err != nil {
		writeJSON(w, 500, map[string]string{"message": err.Error()})
		return
	}
	writeJSON(w, 200, map[string]any{"manual": true, "now": now.UTC().Format(time.RFC3339Nano)})
}

// metric is a metric's statistic, as GetMetricStatistics answers it:
// namespace, metric, stat (Sum, SampleCount, Maximum, p99, …), each
// dimension as dimension=Name=Value, from and to (RFC 3339; by default
// every point).
func (c *controlAPI) metric(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	dims, err := dimensions(q["dimension"])
	if err != nil {
		refuseField(w, err)
		return
	}
	from, to, err := timeRange(q)
	if err != nil {
		refuseField(w, err)
		return
	}
	m := cloudwatch.Metric{Namespace: q.Get("namespace"), Name: q.Get("metric"), Dims: dims}
	v, ok := c.o.store.Stat(m, cmpOr(q.Get("stat"), "Sum"), from, to)
	writeJSON(w, 200, map[string]any{"value": v, "present": ok})
}

// dimensions are a metric's dimensions from their Name=Value forms.
func dimensions(pairs []string) (map[string]string, *fieldError) {
	dims := map[string]string{}
	for _, d := range pairs {
		k, v, ok := strings.Cut(d, "=")
		if !ok {
			return nil, &fieldError{"dimension", "dimension " + d + ": Name=Value"}
		}
		dims[k] = v
	}
	return dims, nil
}

// timeRange is a statistic's from and to, every point's when unset.
func timeRange(q url.Values) (from, to time.Time, _ *fieldError) {
	from, to = time.Time{}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, b := range []struct {
		name string
		t    *time.Time
	}{{"from", &from}, {"to", &to}} {
		if v := q.Get(b.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return time.Time{}, time.Time{}, &fieldError{b.name, b.name + ": " + err.Error()}
			}
			*b.t = t
		}
	}
	return from, to, nil
}

// fault injects a fault, for the alarm campaign: a function crashing,
// throttled, slow or hanging; its calls to the table throttled, failing,
// slow or answered with a panic ("store"; a panic's "message" is its
// value); a message in a queue (a dead-letter queue that is not empty), or
// a queue that refuses sends ("fault": "refuse-sends", of one function's
// role when "function" names one; "none" lifts it).
func (c *controlAPI) fault(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Function, Queue, Fault, Store string
		DelayMS                       int    `json:"delay_ms"`
		Message                       string // Store "panic": the panic's value
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		refuse(w, err.Error())
		return
	}
	delay := time.Duration(in.DelayMS) * time.Millisecond
	id, found := c.functionID(in.Function)
	switch {
	case in.Queue != "":
		c.queueFault(w, in.Queue, in.Function, in.Fault)
	case found && in.Store != "" && c.o.table != nil:
		ft := tablefaults.Fault{Kind: in.Store, Delay: delay, Message: in.Message}
		if in.Store == "none" {
			ft = tablefaults.Fault{}
		}
		c.o.table.Set(in.Function, ft)
		writeJSON(w, 200, map[string]string{"function": in.Function, "store": in.Store})
	case found && c.o.aliases[id] != nil:
		var ft *lambda.Fault
		if in.Fault != "" && in.Fault != "none" {
			ft = &lambda.Fault{Kind: in.Fault, Delay: delay}
		}
		c.o.aliases[id].SetFault(ft)
		writeJSON(w, 200, map[string]string{"function": in.Function, "fault": in.Fault})
	default:
		writeJSON(w, 404, map[string]string{"message": "no function " + in.Function})
	}
}

// queueFault puts fault on the first queue whose logical id starts with
// queue: "" sends it a message, refuse-sends makes it refuse the sends of
// function's role (every role's when function is ""), none lifts that.
func (c *controlAPI) queueFault(w http.ResponseWriter, queue, function, fault string) {
	if _, ok := c.functionID(function); function != "" && !ok {
		writeJSON(w, 404, map[string]string{"message": "no function " + function})
		return
	}
	for id, q := range c.o.queues {
		if !strings.HasPrefix(id, queue) {
			continue
		}
		if !setQueueFault(q, fault, function) {
			refuse(w, "a queue's fault is refuse-sends or none")
			return
		}
		writeJSON(w, 200, map[string]string{"queue": id, "fault": fault})
		return
	}
	writeJSON(w, 404, map[string]string{"message": "no queue " + queue})
}

// setQueueFault puts fault on q for caller; false for a fault that is not
// a queue's.
func setQueueFault(q *sqsserver.Queue, fault, caller string) bool {
	switch fault {
	case "":
		q.Send(`{"fault":"a message left for the campaign"}`, 0)
	case "refuse-sends", "none":
		q.RefuseSends(caller, fault != "none")
	default:
		return false
	}
	return true
}

// functions are each function's invocations: how many began (started)
// and how many run now (running), every version's; for the alarm
// campaign, which moves the clock on once the invocations it caused have
// begun.
func (c *controlAPI) functions(w http.ResponseWriter, r *http.Request) {
	out := map[string]map[string]any{}
	for id, a := range c.o.aliases {
		out[c.st.Functions[id].Name] = map[string]any{"started": a.Started(), "running": a.Running()}
	}
	writeJSON(w, 200, out)
}

// alarms are every alarm's state.
func (c *controlAPI) alarms(w http.ResponseWriter, r *http.Request) {
	out := map[string]map[string]any{}
	for id, a := range c.o.alarms {
		s, fired := a.State()
		out[id] = map[string]any{"state": s, "fired": fired, "lapsed": a.Lapsed(), "notifies_lapse": len(a.InsufficientDataActions) > 0, "description": a.Description}
	}
	writeJSON(w, 200, out)
}
