package cloudwatch

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// EMF puts the metrics of one log line in embedded metric format into the
// store, as CloudWatch Logs extracts them: for each directive of
// _aws.CloudWatchMetrics, each metric named, once per dimension set, with
// the dimensions' values and the metric's value taken from the line's
// members (a line that is not EMF, or a directive whose members are
// missing, adds nothing).
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
func (s *Store) EMF(line string) int { return s.EMFAt(line, s.Now()) }

// EMFAt is EMF with the line's metrics stamped at: the start of the
// invocation that wrote it (localcloud's rule for everything an
// invocation causes, so that on the manual clock an invocation's metrics
// fall in the minute it began, however long it ran).
func (s *Store) EMFAt(line string, at time.Time) int {
	if !strings.Contains(line, `"_aws"`) {
		return 0
	}
	var doc map[string]any
	if json.Unmarshal([]byte(line), &doc) != nil {
		return 0
	}
	meta, _ := doc["_aws"].(map[string]any)
	directives, _ := meta["CloudWatchMetrics"].([]any)
	n := 0
	for _, d := range directives {
		dm, _ := d.(map[string]any)
		ns, _ := dm["Namespace"].(string)
		sets, _ := dm["Dimensions"].([]any)
		metrics, _ := dm["Metrics"].([]any)
		for _, set := range sets {
			names, _ := set.([]any)
			dims := map[string]string{}
			ok := true
			for _, name := range names {
				v, found := doc[fmt.Sprint(name)].(string)
				ok = ok && found
				dims[fmt.Sprint(name)] = v
			}
			if !ok {
				continue
			}
			for _, m := range metrics {
				name, _ := m.(map[string]any)["Name"].(string)
				if v, found := doc[name].(float64); found {
					s.PutAt(Metric{Namespace: ns, Name: name, Dims: dims}, v, at)
					n++
				}
			}
		}
	}
	return n
}

// Filter is a metric filter of a log group (AWS::Logs::MetricFilter), of
// the JSON pattern subset localcloud reads: `{ $.a = "x" }` and
// conjunctions of such terms (`&&`), with = and != on strings.
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html
type Filter struct {
	terms []filterTerm
	// Namespace and Name are the metric's; Dims its dimensions, each a
	// field of the event ("$.apiId") whose value it takes.
	Namespace, Name string
	Dims            map[string]string
	Value           float64
}

// Count puts the filter's metric for an event that matches.
func (f *Filter) Count(s *Store, event map[string]string) bool {
	if !f.Match(event) {
		return false
	}
	dims := map[string]string{}
	for k, v := range f.Dims {
		field, ok := strings.CutPrefix(v, "$.")
		if !ok {
			return false // CloudWatch Logs takes dimension values from the event's fields only
		}
		if dims[k], ok = event[field]; !ok {
			return false // a dimension whose field the event lacks: not published
		}
	}
	s.Put(Metric{Namespace: f.Namespace, Name: f.Name, Dims: dims}, f.Value)
	return true
}

type filterTerm struct {
	field, value string
	negate       bool
}

var filterTermRE = regexp.MustCompile(`^\(?\s*\$\.([A-Za-z0-9_]+)\s*(=|!=)\s*"([^"]*)"\s*\)?$`)

// ParseFilter reads a metric filter's pattern; another pattern is an
// error (localcloud stops rather than count nothing).
func ParseFilter(pattern string) (*Filter, error) {
	p := strings.TrimSpace(pattern)
	if !strings.HasPrefix(p, "{") || !strings.HasSuffix(p, "}") {
		return nil, fmt.Errorf("metric filter %q: only JSON patterns ({ $.field = \"value\" }) are read by localcloud", pattern)
	}
	f := &Filter{}
	for _, part := range strings.Split(strings.TrimSpace(p[1:len(p)-1]), "&&") {
		m := filterTermRE.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return nil, fmt.Errorf("metric filter %q: the term %q is not read by localcloud", pattern, part)
		}
		f.terms = append(f.terms, filterTerm{field: m[1], value: m[3], negate: m[2] == "!="})
	}
	return f, nil
}

// Match reports whether a JSON log event (its fields as strings) matches.
func (f *Filter) Match(event map[string]string) bool {
	for _, t := range f.terms {
		v, ok := event[t.field]
		if !ok || (v == t.value) == t.negate {
			return false
		}
	}
	return true
}
