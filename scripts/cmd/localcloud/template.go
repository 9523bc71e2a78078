package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// template is a CloudFormation template, as cdk synth writes it.
type template struct {
	Resources map[string]resource `json:"Resources"`
}

type resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// stack is what localcloud runs, read from the template: every part the
// deployed stack has that decides behaviour, and nothing else (alarms,
// logs and permissions are AWS's business).
type stack struct {
	functions      map[string]*functionSpec // by logical id
	routes         []routeSpec
	queues         map[string]*queueSpec // by logical id
	table          tableSpec
	streamMappings []streamMappingSpec
	queueMappings  []queueMappingSpec
	schedules      []scheduleSpec
	asyncConfigs   map[string]asyncConfig // by function logical id
	throttles      throttleSpec
	// roleStatements are the policy statements of each role (by logical
	// id), as the template writes them: its AWS::IAM::Policy resources and
	// the role's inline policies.
	roleStatements map[string][]any
	// managedPolicies are the roles' managed policy ARNs, unresolved.
	managedPolicies map[string][]any
}

type functionSpec struct {
	id, name  string
	bootstrap string         // the asset's bootstrap, in the cloud assembly
	env       map[string]any // as the template says (intrinsics unresolved)
	memoryMB  int
	timeout   time.Duration
	reserved  int // 0: none
	arch      string
	appLevel  string // LoggingConfig.ApplicationLogLevel ("" = everything)
	role      string // its execution role's logical id
}

type routeSpec struct {
	key      string // "GET /api/v1/matters/{matter}" or "$default"
	function string // logical id
}

type queueSpec struct {
	id, name          string
	visibility, delay time.Duration
	retention         time.Duration
	deadLetter        string // logical id of the redrive target
	maxReceives       int
}

type tableSpec struct {
	id    string
	props map[string]any
}

type streamMappingSpec struct {
	function  string
	batchSize int
	window    time.Duration
	filters   []string
	retries   int // -1: until the record expires
	bisect    bool
	maxAge    time.Duration
	onFailure string // queue logical id
	start     string
}

type queueMappingSpec struct {
	function, queue string
	batchSize       int
	window          time.Duration
	reportFailures  bool
	maxConcurrency  int
	filters         []string
}

type scheduleSpec struct {
	rule       string
	expression string
	every      time.Duration
	targets    []scheduleTarget
}

type scheduleTarget struct {
	function   string
	retries    int
	maxAge     time.Duration
	deadLetter string // queue logical id
}

type asyncConfig struct {
	retries   int
	maxAge    time.Duration
	onFailure string // queue logical id
}

type throttleSpec struct {
	rate, burst float64               // the stage's default (0: none)
	routes      map[string][2]float64 // route key -> rate, burst
}

// loadStack reads the template at path; assets are in the same folder
// (the cloud assembly), one asset.<hash> folder per function.
func loadStack(path string) (*stack, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	var t template
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	s := &stack{functions: map[string]*functionSpec{}, queues: map[string]*queueSpec{}, asyncConfigs: map[string]asyncConfig{}, roleStatements: map[string][]any{},
		managedPolicies: map[string][]any{}}
	integrations := map[string]string{} // integration id -> function id
	aliases := map[string]string{}      // alias id -> function id: what invokes an alias runs its function
	ids := make([]string, 0, len(t.Resources))
	for id := range t.Resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := t.Resources[id]
		p := r.Properties
		switch r.Type {
		case "AWS::Lambda::Function":
			f := &functionSpec{id: id, name: id, memoryMB: intOf(p["MemorySize"], 128), timeout: secondsOf(p["Timeout"], 3),
				reserved: intOf(p["ReservedConcurrentExecutions"], 0), arch: "x86_64"}
			if d, ok := p["Description"].(string); ok && d != "" {
				f.name = d[strings.LastIndexByte(d, ' ')+1:]
			}
			f.role = refID(p["Role"])
			if a, ok := p["Architectures"].([]any); ok && len(a) == 1 {
				f.arch, _ = a[0].(string)
			}
			if env, ok := p["Environment"].(map[string]any); ok {
				f.env, _ = env["Variables"].(map[string]any)
			}
			if lc, ok := p["LoggingConfig"].(map[string]any); ok {
				f.appLevel, _ = lc["ApplicationLogLevel"].(string)
			}
			code, _ := p["Code"].(map[string]any)
			key, _ := code["S3Key"].(string)
			if key == "" {
				return nil, fmt.Errorf("function %s: no code asset (Code.S3Key)", id)
			}
			f.bootstrap = filepath.Join(dir, "asset."+strings.TrimSuffix(key, ".zip"), "bootstrap")
			s.functions[id] = f
		case "AWS::IAM::Role":
			if m, ok := p["ManagedPolicyArns"].([]any); ok && len(m) > 0 {
				s.managedPolicies[id] = m // a function's role may not have any (loadPolicies)
			}
			if inline, ok := p["Policies"].([]any); ok {
				for _, pol := range inline {
					doc, _ := pol.(map[string]any)["PolicyDocument"].(map[string]any)
					st, _ := doc["Statement"].([]any)
					s.roleStatements[id] = append(s.roleStatements[id], st...)
				}
			}
		case "AWS::IAM::Policy":
			doc, _ := p["PolicyDocument"].(map[string]any)
			st, _ := doc["Statement"].([]any)
			roles, _ := p["Roles"].([]any)
			for _, r := range roles {
				s.roleStatements[refID(r)] = append(s.roleStatements[refID(r)], st...)
			}
		case "AWS::Lambda::Alias":
			// One version serves locally, the one built: an alias (which
			// CodeDeploy shifts on AWS) runs its function.
			aliases[id] = refID(p["FunctionName"])
		case "AWS::ApiGatewayV2::Integration":
			fn := refID(p["IntegrationUri"])
			if p["IntegrationType"] != "AWS_PROXY" || fn == "" {
				return nil, fmt.Errorf("integration %s: only Lambda proxy integrations are served", id)
			}
			if v, _ := p["PayloadFormatVersion"].(string); v != "2.0" {
				return nil, fmt.Errorf("integration %s: payload format %q; only 2.0 is served", id, v)
			}
			integrations[id] = fn
		case "AWS::ApiGatewayV2::Route":
			key, _ := p["RouteKey"].(string)
			s.routes = append(s.routes, routeSpec{key: key, function: joinTarget(p["Target"])}) // integration id for now
		case "AWS::SQS::Queue":
			q := &queueSpec{id: id, name: id, visibility: secondsOf(p["VisibilityTimeout"], 30), delay: secondsOf(p["DelaySeconds"], 0),
				retention: secondsOf(p["MessageRetentionPeriod"], 4*24*3600)}
			if n, ok := p["QueueName"].(string); ok && n != "" {
				q.name = n
			}
			if fifo, _ := p["FifoQueue"].(bool); fifo {
				return nil, fmt.Errorf("queue %s is FIFO: localcloud emulates standard queues only", id)
			}
			if rp, ok := p["RedrivePolicy"].(map[string]any); ok {
				q.deadLetter, q.maxReceives = refID(rp["deadLetterTargetArn"]), intOf(rp["maxReceiveCount"], 0)
			}
			s.queues[id] = q
		case "AWS::DynamoDB::Table":
			if s.table.id != "" {
				return nil, fmt.Errorf("two tables (%s, %s): the service has one", s.table.id, id)
			}
			s.table = tableSpec{id: id, props: p}
		case "AWS::Lambda::EventSourceMapping":
			// An alias's mapping names it by "<function name>:live", built
			// from the alias's ARN: the reference is inside.
			fn, src := refWithin(p["FunctionName"]), p["EventSourceArn"]
			var filters []string
			if fc, ok := p["FilterCriteria"].(map[string]any); ok {
				for _, f := range fc["Filters"].([]any) {
					filters = append(filters, f.(map[string]any)["Pattern"].(string))
				}
			}
			window := secondsOf(p["MaximumBatchingWindowInSeconds"], 0)
			stream := getAttName(src) == "StreamArn"
			if err := checkMappingProps(id, p, stream); err != nil {
				return nil, err
			}
			if enabled, ok := p["Enabled"].(bool); ok && !enabled {
				continue // a disabled mapping polls nothing
			}
			if stream {
				m := streamMappingSpec{function: fn, batchSize: intOf(p["BatchSize"], 100), window: window, filters: filters,
					retries: intOf(p["MaximumRetryAttempts"], -1), maxAge: secondsOf(p["MaximumRecordAgeInSeconds"], 0),
					start: stringOf(p["StartingPosition"], "LATEST")}
				m.bisect, _ = p["BisectBatchOnFunctionError"].(bool)
				if dc, ok := p["DestinationConfig"].(map[string]any); ok {
					m.onFailure = refID(dc["OnFailure"].(map[string]any)["Destination"])
				}
				s.streamMappings = append(s.streamMappings, m)
			} else {
				m := queueMappingSpec{function: fn, queue: refID(src), batchSize: intOf(p["BatchSize"], 10), window: window, filters: filters, maxConcurrency: 1000}
				if types, ok := p["FunctionResponseTypes"].([]any); ok {
					for _, t := range types {
						m.reportFailures = m.reportFailures || t == "ReportBatchItemFailures"
					}
				}
				if sc, ok := p["ScalingConfig"].(map[string]any); ok {
					m.maxConcurrency = intOf(sc["MaximumConcurrency"], 1000)
				}
				s.queueMappings = append(s.queueMappings, m)
			}
		case "AWS::Events::Rule":
			expr, _ := p["ScheduleExpression"].(string)
			if expr == "" || p["State"] == "DISABLED" {
				continue
			}
			every, err := parseRate(expr)
			if err != nil {
				return nil, fmt.Errorf("rule %s: %w", id, err)
			}
			sch := scheduleSpec{rule: id, expression: expr, every: every}
			targets, _ := p["Targets"].([]any)
			for _, tg := range targets {
				tm := tg.(map[string]any)
				st := scheduleTarget{function: refID(tm["Arn"]), retries: 185, maxAge: 24 * time.Hour}
				if rp, ok := tm["RetryPolicy"].(map[string]any); ok {
					st.retries, st.maxAge = intOf(rp["MaximumRetryAttempts"], 185), secondsOf(rp["MaximumEventAgeInSeconds"], 24*3600)
				}
				if dl, ok := tm["DeadLetterConfig"].(map[string]any); ok {
					st.deadLetter = refID(dl["Arn"])
				}
				sch.targets = append(sch.targets, st)
			}
			s.schedules = append(s.schedules, sch)
		case "AWS::Lambda::EventInvokeConfig":
			c := asyncConfig{retries: intOf(p["MaximumRetryAttempts"], 2), maxAge: secondsOf(p["MaximumEventAgeInSeconds"], 6*3600)}
			if dc, ok := p["DestinationConfig"].(map[string]any); ok {
				if of, ok := dc["OnFailure"].(map[string]any); ok {
					c.onFailure = refID(of["Destination"])
				}
			}
			s.asyncConfigs[refID(p["FunctionName"])] = c
		case "AWS::ApiGatewayV2::Stage":
			s.throttles.routes = map[string][2]float64{}
			if d, ok := p["DefaultRouteSettings"].(map[string]any); ok {
				s.throttles.rate, s.throttles.burst = floatOf(d["ThrottlingRateLimit"]), floatOf(d["ThrottlingBurstLimit"])
			}
			if rs, ok := p["RouteSettings"].(map[string]any); ok {
				for key, v := range rs {
					m := v.(map[string]any)
					s.throttles.routes[key] = [2]float64{floatOf(m["ThrottlingRateLimit"]), floatOf(m["ThrottlingBurstLimit"])}
				}
			}
		}
	}
	behind := func(id string) string {
		if fn, ok := aliases[id]; ok {
			return fn
		}
		return id
	}
	for id, fn := range integrations {
		integrations[id] = behind(fn)
	}
	for i := range s.streamMappings {
		s.streamMappings[i].function = behind(s.streamMappings[i].function)
	}
	for i := range s.queueMappings {
		s.queueMappings[i].function = behind(s.queueMappings[i].function)
	}
	for i := range s.schedules {
		for j := range s.schedules[i].targets {
			s.schedules[i].targets[j].function = behind(s.schedules[i].targets[j].function)
		}
	}
	for id, c := range s.asyncConfigs {
		if fn := behind(id); fn != id {
			delete(s.asyncConfigs, id)
			s.asyncConfigs[fn] = c
		}
	}
	for i, r := range s.routes {
		fn, ok := integrations[r.function]
		if !ok {
			return nil, fmt.Errorf("route %q: its target is not a Lambda integration of the template", r.key)
		}
		s.routes[i].function = fn
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// check refuses a template that names what it does not define: a route or
// a mapping to a missing function, a mapping from a missing queue.
func (s *stack) check() error {
	if s.table.id == "" {
		return fmt.Errorf("the template has no DynamoDB table")
	}
	for _, r := range s.routes {
		if s.functions[r.function] == nil {
			return fmt.Errorf("route %q: no function %s", r.key, r.function)
		}
	}
	for _, m := range s.streamMappings {
		if s.functions[m.function] == nil {
			return fmt.Errorf("stream mapping: no function %s", m.function)
		}
	}
	for _, m := range s.queueMappings {
		if s.functions[m.function] == nil || s.queues[m.queue] == nil {
			return fmt.Errorf("queue mapping %s → %s: the template lacks one of them", m.queue, m.function)
		}
	}
	for _, q := range s.queues {
		if q.deadLetter != "" && s.queues[q.deadLetter] == nil {
			return fmt.Errorf("queue %s: redrive to a queue the template lacks (%s)", q.id, q.deadLetter)
		}
	}
	return nil
}

// refWithin is the logical id the first {"Ref": id} or {"Fn::GetAtt":
// [id, attr]} inside v names (v itself, or within Fn::Join, Fn::Select,
// Fn::Split and the like).
func refWithin(v any) string {
	if id := refID(v); id != "" {
		return id
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if id := refWithin(x[k]); id != "" {
				return id
			}
		}
	case []any:
		for _, e := range x {
			if id := refWithin(e); id != "" {
				return id
			}
		}
	}
	return ""
}

// refID is the logical id a {"Ref": id} or {"Fn::GetAtt": [id, attr]} names.
func refID(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if r, ok := m["Ref"].(string); ok {
		return r
	}
	if g, ok := m["Fn::GetAtt"].([]any); ok && len(g) == 2 {
		id, _ := g[0].(string)
		return id
	}
	return ""
}

func getAttName(v any) string {
	m, _ := v.(map[string]any)
	if g, ok := m["Fn::GetAtt"].([]any); ok && len(g) == 2 {
		a, _ := g[1].(string)
		return a
	}
	return ""
}

// joinTarget finds the integration id in a route's Target,
// {"Fn::Join": ["", ["integrations/", {"Ref": id}]]}.
func joinTarget(v any) string {
	m, _ := v.(map[string]any)
	j, ok := m["Fn::Join"].([]any)
	if !ok || len(j) != 2 {
		return ""
	}
	parts, _ := j[1].([]any)
	for _, p := range parts {
		if id := refID(p); id != "" {
			return id
		}
	}
	return ""
}

func intOf(v any, def int) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case string:
		if i, err := strconv.Atoi(n); err == nil {
			return i
		}
	}
	return def
}

func floatOf(v any) float64 {
	n, _ := v.(float64)
	return n
}

func secondsOf(v any, def int) time.Duration {
	return time.Duration(intOf(v, def)) * time.Second
}

func stringOf(v any, def string) string {
	if s, ok := v.(string); ok && s != "" {
		return s
	}
	return def
}

var rateExpr = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// parseRate reads an EventBridge rate() expression (cron() is not run
// locally: the service's one schedule is a rate).
func parseRate(expr string) (time.Duration, error) {
	m := rateExpr.FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("schedule %q: only rate(N minutes|hours|days) runs locally", expr)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour, "hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}[m[2]]
	return time.Duration(n) * unit, nil
}

// The event source mapping properties localcloud emulates (besides Tags
// and Enabled). Any other, or one of these with a value it does not
// emulate, stops it at start with the property named: a template that
// relies on, say, a tumbling window must not run here as if it had none.
var (
	commonMappingProps = []string{"FunctionName", "EventSourceArn", "BatchSize", "MaximumBatchingWindowInSeconds", "FilterCriteria", "Tags", "Enabled"}
	streamMappingProps = []string{"MaximumRetryAttempts", "MaximumRecordAgeInSeconds", "StartingPosition", "BisectBatchOnFunctionError", "DestinationConfig", "ParallelizationFactor"}
	queueMappingProps  = []string{"FunctionResponseTypes", "ScalingConfig"}
)

func checkMappingProps(id string, p map[string]any, stream bool) error {
	known := append(append([]string{}, commonMappingProps...), queueMappingProps...)
	kind := "queue"
	if stream {
		known, kind = append(append([]string{}, commonMappingProps...), streamMappingProps...), "stream"
	}
	var unknown []string
	for k := range p {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		return fmt.Errorf("event source mapping %s (%s): localcloud does not emulate %s; it stops rather than run the mapping without them",
			id, kind, strings.Join(unknown, ", "))
	}
	if stream {
		if n := intOf(p["ParallelizationFactor"], 1); n != 1 {
			return fmt.Errorf("event source mapping %s: ParallelizationFactor %d is not emulated (one batch per shard at a time)", id, n)
		}
		if sp := stringOf(p["StartingPosition"], "LATEST"); sp != "LATEST" && sp != "TRIM_HORIZON" {
			return fmt.Errorf("event source mapping %s: StartingPosition %s is not emulated", id, sp)
		}
		return nil
	}
	if types, ok := p["FunctionResponseTypes"].([]any); ok {
		for _, t := range types {
			if t != "ReportBatchItemFailures" {
				return fmt.Errorf("event source mapping %s: FunctionResponseTypes %v is not emulated", id, t)
			}
		}
	}
	if sc, ok := p["ScalingConfig"].(map[string]any); ok {
		for k := range sc {
			if k != "MaximumConcurrency" {
				return fmt.Errorf("event source mapping %s: ScalingConfig.%s is not emulated", id, k)
			}
		}
	}
	return nil
}
