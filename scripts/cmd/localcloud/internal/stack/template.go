// Package stack reads a synthesized CloudFormation template into what
// localcloud runs: the functions and their roles, the HTTP API's routes and
// throttles, the queues, the table, the event source mappings, the
// schedule rules and the asynchronous invocation settings; and it resolves
// the template's intrinsic functions (Ref, Fn::GetAtt, Fn::Join) to local
// values. What it does not emulate stops it, by name.
package stack

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

// Stack is what localcloud runs, read from the template: every part the
// deployed stack has that decides behaviour, and nothing else (alarms,
// logs and permissions are AWS's business).
type Stack struct {
	Functions      map[string]*Function // by logical id
	Routes         []Route
	Queues         map[string]*Queue // by logical id
	Table          Table
	StreamMappings []StreamMapping
	QueueMappings  []QueueMapping
	Schedules      []Schedule
	AsyncConfigs   map[string]AsyncConfig // by function logical id
	Throttles      Throttles
	// AccessLogFormat is the stage's access log format
	// (AccessLogSettings.Format, a JSON object): each field of a line by
	// the $context variable it renders ("$context.integration.requestId");
	// nil when the stage logs no access.
	AccessLogFormat map[string]string
	// API is the logical id of the HTTP API (its endpoint attribute is
	// the local gateway's address).
	API string
	// Versions maps each AWS::Lambda::Version to its function's logical id.
	Versions map[string]string
	// Resources are the template's resources as written, by logical id,
	// for the services that read more than the above (alarms, topics,
	// deployment groups).
	Resources map[string]map[string]any
	// RoleStatements are the policy statements of each role (by logical
	// id), as the template writes them: its AWS::IAM::Policy resources and
	// the role's inline policies.
	RoleStatements map[string][]any
	// ManagedPolicies are the roles' managed policy ARNs, unresolved.
	ManagedPolicies map[string][]any
	// CustomResources are the template's custom resources backed by one
	// of its functions, in logical id order: CloudFormation invokes each
	// at create, before what depends on it.
	CustomResources []CustomResource
}

// CustomResource is a custom resource whose ServiceToken is a function of
// the template.
type CustomResource struct {
	ID, Type   string
	Function   string         // logical id
	Properties map[string]any // as the template says, ServiceToken and ServiceTimeout included
	Timeout    time.Duration  // ServiceTimeout (CloudFormation's default: an hour)
}

type Function struct {
	ID, Name  string
	Bootstrap string         // the asset's bootstrap, in the cloud assembly
	Env       map[string]any // as the template says (intrinsics unresolved)
	MemoryMB  int
	Timeout   time.Duration
	Reserved  int // 0: none
	Arch      string
	AppLevel  string // LoggingConfig.ApplicationLogLevel ("" = everything)
	Role      string // its execution role's logical id
}

type Route struct {
	Key      string // "GET /api/v1/matters/{matter}" or "$default"
	Function string // logical id
}

type Queue struct {
	ID, Name          string
	Visibility, Delay time.Duration
	Retention         time.Duration
	DeadLetter        string // logical id of the redrive target
	MaxReceives       int
}

type Table struct {
	ID    string
	Props map[string]any
}

type StreamMapping struct {
	Function  string
	BatchSize int
	Window    time.Duration
	Filters   []string
	Retries   int // -1: until the record expires
	Bisect    bool
	MaxAge    time.Duration
	OnFailure string // queue logical id
	Start     string
}

type QueueMapping struct {
	Function, Queue string
	BatchSize       int
	Window          time.Duration
	ReportFailures  bool
	MaxConcurrency  int
	Filters         []string
}

type Schedule struct {
	Rule       string
	expression string
	Every      time.Duration
	Targets    []ScheduleTarget
}

type ScheduleTarget struct {
	Function   string
	Retries    int
	maxAge     time.Duration
	DeadLetter string // queue logical id
}

type AsyncConfig struct {
	Retries   int
	maxAge    time.Duration
	OnFailure string // queue logical id
}

type Throttles struct {
	Rate, Burst float64               // the stage's default (0: none)
	Routes      map[string][2]float64 // route key -> rate, burst
}

// loader reads a template's resources into a Stack.
type loader struct {
	s   *Stack
	dir string // the cloud assembly's
	// integrations maps an integration's id to its function's (or
	// alias's); aliases an alias's id to its function's: what invokes an
	// alias runs its function.
	integrations, aliases map[string]string
}

// parsers read the resources localcloud runs, one per resource type; a
// type not here decides no behaviour locally (alarms, log groups,
// permissions: AWS's business) and is kept in Stack.Resources only.
// Custom resources are read by customResource, whatever their type.
var parsers = map[string]func(l *loader, id string, p map[string]any) error{
	"AWS::Lambda::Function":           (*loader).function,
	"AWS::IAM::Role":                  (*loader).role,
	"AWS::IAM::Policy":                (*loader).policy,
	"AWS::Lambda::Alias":              (*loader).alias,
	"AWS::ApiGatewayV2::Api":          (*loader).api,
	"AWS::Lambda::Version":            (*loader).version,
	"AWS::ApiGatewayV2::Integration":  (*loader).integration,
	"AWS::ApiGatewayV2::Route":        (*loader).route,
	"AWS::SQS::Queue":                 (*loader).queue,
	"AWS::DynamoDB::Table":            (*loader).table,
	"AWS::Lambda::EventSourceMapping": (*loader).mapping,
	"AWS::Events::Rule":               (*loader).rule,
	"AWS::Lambda::EventInvokeConfig":  (*loader).invokeConfig,
	"AWS::ApiGatewayV2::Stage":        (*loader).stage,
}

// Load reads the template at path; assets are in the same folder
// (the cloud assembly), one asset.<hash> folder per function. Each
// resource is read by its type's parser, in logical id order.
func Load(path string) (*Stack, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	var t template
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	l := &loader{dir: filepath.Dir(path), integrations: map[string]string{}, aliases: map[string]string{},
		s: &Stack{Functions: map[string]*Function{}, Queues: map[string]*Queue{}, AsyncConfigs: map[string]AsyncConfig{}, RoleStatements: map[string][]any{},
			ManagedPolicies: map[string][]any{}, Versions: map[string]string{}, Resources: map[string]map[string]any{}}}
	var rawRes struct {
		Resources map[string]map[string]any `json:"Resources"`
	}
	if err := json.Unmarshal(raw, &rawRes); err == nil {
		l.s.Resources = rawRes.Resources
	}
	for _, id := range slices.Sorted(maps.Keys(t.Resources)) {
		r := t.Resources[id]
		parse := parsers[r.Type]
		if strings.HasPrefix(r.Type, "Custom::") || r.Type == "AWS::CloudFormation::CustomResource" {
			parse = func(l *loader, id string, p map[string]any) error { return l.customResource(id, r.Type, p) }
		}
		if parse == nil {
			continue
		}
		if err := parse(l, id, r.Properties); err != nil {
			return nil, err
		}
	}
	if err := l.resolve(); err != nil {
		return nil, err
	}
	if err := l.s.check(); err != nil {
		return nil, err
	}
	return l.s, nil
}

// resolve points what names an alias (routes' integrations, mappings,
// schedules, invoke configs) at its function, and each route at its
// integration's function.
func (l *loader) resolve() error {
	s := l.s
	behind := func(id string) string {
		if fn, ok := l.aliases[id]; ok {
			return fn
		}
		return id
	}
	for id, fn := range l.integrations {
		l.integrations[id] = behind(fn)
	}
	for i := range s.StreamMappings {
		s.StreamMappings[i].Function = behind(s.StreamMappings[i].Function)
	}
	for i := range s.QueueMappings {
		s.QueueMappings[i].Function = behind(s.QueueMappings[i].Function)
	}
	for i := range s.Schedules {
		for j := range s.Schedules[i].Targets {
			s.Schedules[i].Targets[j].Function = behind(s.Schedules[i].Targets[j].Function)
		}
	}
	for id, c := range s.AsyncConfigs {
		if fn := behind(id); fn != id {
			delete(s.AsyncConfigs, id)
			s.AsyncConfigs[fn] = c
		}
	}
	for i, r := range s.Routes {
		fn, ok := l.integrations[r.Function]
		if !ok {
			return fmt.Errorf("route %q: its target is not a Lambda integration of the template", r.Key)
		}
		s.Routes[i].Function = fn
	}
	return nil
}

// customResource reads a custom resource: only one backed by a function
// of the template is emulated.
func (l *loader) customResource(id, typ string, p map[string]any) error {
	fn := RefID(p["ServiceToken"])
	if fn == "" || GetAttName(p["ServiceToken"]) != "Arn" {
		return fmt.Errorf("custom resource %s: only a function of the template (Fn::GetAtt <function>.Arn) is emulated as its ServiceToken", id)
	}
	l.s.CustomResources = append(l.s.CustomResources, CustomResource{ID: id, Type: typ, Function: fn, Properties: p, Timeout: secondsOf(p["ServiceTimeout"], 3600)})
	return nil
}

// function reads an AWS::Lambda::Function.
func (l *loader) function(id string, p map[string]any) error {
	f := &Function{ID: id, Name: id, MemoryMB: intOf(p["MemorySize"], 128), Timeout: secondsOf(p["Timeout"], 3),
		Reserved: intOf(p["ReservedConcurrentExecutions"], 0), Arch: "x86_64"}
	if d, ok := p["Description"].(string); ok && d != "" {
		f.Name = d[strings.LastIndexByte(d, ' ')+1:]
	}
	f.Role = RefID(p["Role"])
	if a, ok := p["Architectures"].([]any); ok && len(a) == 1 {
		f.Arch, _ = a[0].(string)
	}
	if env, ok := p["Environment"].(map[string]any); ok {
		f.Env, _ = env["Variables"].(map[string]any)
	}
	if lc, ok := p["LoggingConfig"].(map[string]any); ok {
		f.AppLevel, _ = lc["ApplicationLogLevel"].(string)
	}
	code, _ := p["Code"].(map[string]any)
	key, _ := code["S3Key"].(string)
	if key == "" {
		return fmt.Errorf("function %s: no code asset (Code.S3Key)", id)
	}
	f.Bootstrap = filepath.Join(l.dir, "asset."+strings.TrimSuffix(key, ".zip"), "bootstrap")
	l.s.Functions[id] = f
	return nil
}

// role reads an AWS::IAM::Role.
func (l *loader) role(id string, p map[string]any) error {
	if m, ok := p["ManagedPolicyArns"].([]any); ok && len(m) > 0 {
		l.s.ManagedPolicies[id] = m // a function's role may not have any (loadPolicies)
	}
	if inline, ok := p["Policies"].([]any); ok {
		for _, pol := range inline {
			doc, _ := pol.(map[string]any)["PolicyDocument"].(map[string]any)
			st, _ := doc["Statement"].([]any)
			l.s.RoleStatements[id] = append(l.s.RoleStatements[id], st...)
		}
	}
	return nil
}

// policy reads an AWS::IAM::Policy.
func (l *loader) policy(id string, p map[string]any) error {
	doc, _ := p["PolicyDocument"].(map[string]any)
	st, _ := doc["Statement"].([]any)
	roles, _ := p["Roles"].([]any)
	for _, r := range roles {
		l.s.RoleStatements[RefID(r)] = append(l.s.RoleStatements[RefID(r)], st...)
	}
	return nil
}

// alias reads an AWS::Lambda::Alias.
func (l *loader) alias(id string, p map[string]any) error {
	// One version serves locally, the one built: an alias (which
	// CodeDeploy shifts on AWS) runs its function.
	l.aliases[id] = RefID(p["FunctionName"])
	return nil
}

// api reads an AWS::ApiGatewayV2::Api.
func (l *loader) api(id string, p map[string]any) error {
	l.s.API = id
	return nil
}

// version reads an AWS::Lambda::Version.
func (l *loader) version(id string, p map[string]any) error {
	l.s.Versions[id] = RefID(p["FunctionName"])
	return nil
}

// integration reads an AWS::ApiGatewayV2::Integration.
func (l *loader) integration(id string, p map[string]any) error {
	fn := RefID(p["IntegrationUri"])
	if p["IntegrationType"] != "AWS_PROXY" || fn == "" {
		return fmt.Errorf("integration %s: only Lambda proxy integrations are served", id)
	}
	if v, _ := p["PayloadFormatVersion"].(string); v != "2.0" {
		return fmt.Errorf("integration %s: payload format %q; only 2.0 is served", id, v)
	}
	l.integrations[id] = fn
	return nil
}

// route reads an AWS::ApiGatewayV2::Route.
func (l *loader) route(id string, p map[string]any) error {
	key, _ := p["RouteKey"].(string)
	l.s.Routes = append(l.s.Routes, Route{Key: key, Function: joinTarget(p["Target"])}) // integration id for now
	return nil
}

// queue reads an AWS::SQS::Queue.
func (l *loader) queue(id string, p map[string]any) error {
	q := &Queue{ID: id, Name: id, Visibility: secondsOf(p["VisibilityTimeout"], 30), Delay: secondsOf(p["DelaySeconds"], 0),
		Retention: secondsOf(p["MessageRetentionPeriod"], 4*24*3600)}
	if n, ok := p["QueueName"].(string); ok && n != "" {
		q.Name = n
	}
	if fifo, _ := p["FifoQueue"].(bool); fifo {
		return fmt.Errorf("queue %s is FIFO: localcloud emulates standard queues only", id)
	}
	if rp, ok := p["RedrivePolicy"].(map[string]any); ok {
		q.DeadLetter, q.MaxReceives = RefID(rp["deadLetterTargetArn"]), intOf(rp["maxReceiveCount"], 0)
	}
	l.s.Queues[id] = q
	return nil
}

// table reads an AWS::DynamoDB::Table.
func (l *loader) table(id string, p map[string]any) error {
	if l.s.Table.ID != "" {
		return fmt.Errorf("two tables (%s, %s): the service has one", l.s.Table.ID, id)
	}
	l.s.Table = Table{ID: id, Props: p}
	return nil
}

// mapping reads an AWS::Lambda::EventSourceMapping.
func (l *loader) mapping(id string, p map[string]any) error {
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
	stream := GetAttName(src) == "StreamArn"
	if err := checkMappingProps(id, p, stream); err != nil {
		return err
	}
	if enabled, ok := p["Enabled"].(bool); ok && !enabled {
		return nil // a disabled mapping polls nothing
	}
	if stream {
		m := StreamMapping{Function: fn, BatchSize: intOf(p["BatchSize"], 100), Window: window, Filters: filters,
			Retries: intOf(p["MaximumRetryAttempts"], -1), MaxAge: secondsOf(p["MaximumRecordAgeInSeconds"], 0),
			Start: stringOf(p["StartingPosition"], "LATEST")}
		m.Bisect, _ = p["BisectBatchOnFunctionError"].(bool)
		if dc, ok := p["DestinationConfig"].(map[string]any); ok {
			m.OnFailure = RefID(dc["OnFailure"].(map[string]any)["Destination"])
		}
		l.s.StreamMappings = append(l.s.StreamMappings, m)
	} else {
		m := QueueMapping{Function: fn, Queue: RefID(src), BatchSize: intOf(p["BatchSize"], 10), Window: window, Filters: filters, MaxConcurrency: 1000}
		if types, ok := p["FunctionResponseTypes"].([]any); ok {
			for _, t := range types {
				m.ReportFailures = m.ReportFailures || t == "ReportBatchItemFailures"
			}
		}
		if sc, ok := p["ScalingConfig"].(map[string]any); ok {
			m.MaxConcurrency = intOf(sc["MaximumConcurrency"], 1000)
		}
		l.s.QueueMappings = append(l.s.QueueMappings, m)
	}
	return nil
}

// rule reads an AWS::Events::Rule.
func (l *loader) rule(id string, p map[string]any) error {
	expr, _ := p["ScheduleExpression"].(string)
	if expr == "" || p["State"] == "DISABLED" {
		return nil
	}
	every, err := parseRate(expr)
	if err != nil {
		return fmt.Errorf("rule %s: %w", id, err)
	}
	sch := Schedule{Rule: id, expression: expr, Every: every}
	targets, _ := p["Targets"].([]any)
	for _, tg := range targets {
		tm := tg.(map[string]any)
		st := ScheduleTarget{Function: RefID(tm["Arn"]), Retries: 185, maxAge: 24 * time.Hour}
		if rp, ok := tm["RetryPolicy"].(map[string]any); ok {
			st.Retries, st.maxAge = intOf(rp["MaximumRetryAttempts"], 185), secondsOf(rp["MaximumEventAgeInSeconds"], 24*3600)
		}
		if dl, ok := tm["DeadLetterConfig"].(map[string]any); ok {
			st.DeadLetter = RefID(dl["Arn"])
		}
		sch.Targets = append(sch.Targets, st)
	}
	l.s.Schedules = append(l.s.Schedules, sch)
	return nil
}

// invokeConfig reads an AWS::Lambda::EventInvokeConfig.
func (l *loader) invokeConfig(id string, p map[string]any) error {
	c := AsyncConfig{Retries: intOf(p["MaximumRetryAttempts"], 2), maxAge: secondsOf(p["MaximumEventAgeInSeconds"], 6*3600)}
	if dc, ok := p["DestinationConfig"].(map[string]any); ok {
		if of, ok := dc["OnFailure"].(map[string]any); ok {
			c.OnFailure = RefID(of["Destination"])
		}
	}
	l.s.AsyncConfigs[RefID(p["FunctionName"])] = c
	return nil
}

// stage reads an AWS::ApiGatewayV2::Stage.
func (l *loader) stage(id string, p map[string]any) error {
	l.s.Throttles.Routes = map[string][2]float64{}
	if d, ok := p["DefaultRouteSettings"].(map[string]any); ok {
		l.s.Throttles.Rate, l.s.Throttles.Burst = floatOf(d["ThrottlingRateLimit"]), floatOf(d["ThrottlingBurstLimit"])
	}
	if rs, ok := p["RouteSettings"].(map[string]any); ok {
		for key, v := range rs {
			m := v.(map[string]any)
			l.s.Throttles.Routes[key] = [2]float64{floatOf(m["ThrottlingRateLimit"]), floatOf(m["ThrottlingBurstLimit"])}
		}
	}
	if al, ok := p["AccessLogSettings"].(map[string]any); ok {
		if f, ok := al["Format"].(string); ok {
			if err := json.Unmarshal([]byte(f), &l.s.AccessLogFormat); err != nil {
				return fmt.Errorf("the stage's access log format is not a JSON object of strings: %w", err)
			}
		}
	}
	return nil
}

// check refuses a template that names what it does not define: a route or
// a mapping to a missing function, a mapping from a missing queue.
func (s *Stack) check() error {
	if s.Table.ID == "" {
		return fmt.Errorf("the template has no DynamoDB table")
	}
	for _, r := range s.Routes {
		if s.Functions[r.Function] == nil {
			return fmt.Errorf("route %q: no function %s", r.Key, r.Function)
		}
	}
	for _, m := range s.StreamMappings {
		if s.Functions[m.Function] == nil {
			return fmt.Errorf("stream mapping: no function %s", m.Function)
		}
	}
	for _, m := range s.QueueMappings {
		if s.Functions[m.Function] == nil || s.Queues[m.Queue] == nil {
			return fmt.Errorf("queue mapping %s → %s: the template lacks one of them", m.Queue, m.Function)
		}
	}
	for _, q := range s.Queues {
		if q.DeadLetter != "" && s.Queues[q.DeadLetter] == nil {
			return fmt.Errorf("queue %s: redrive to a queue the template lacks (%s)", q.ID, q.DeadLetter)
		}
	}
	return nil
}

// refWithin is the logical id the first {"Ref": id} or {"Fn::GetAtt":
// [id, attr]} inside v names (v itself, or within Fn::Join, Fn::Select,
// Fn::Split and the like).
func refWithin(v any) string {
	if id := RefID(v); id != "" {
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

// RefID is the logical id a {"Ref": id} or {"Fn::GetAtt": [id, attr]} names.
func RefID(v any) string {
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

func GetAttName(v any) string {
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
		if id := RefID(p); id != "" {
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
