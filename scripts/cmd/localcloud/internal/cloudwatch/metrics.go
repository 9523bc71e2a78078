// Package cloudwatch keeps the metrics localcloud's services publish (the
// functions' embedded metric format lines, Lambda's invocation metrics, API
// Gateway's, the access log's metric filters, the queues') and evaluates
// the template's alarms on them as CloudWatch does: period, statistic,
// M of N datapoints, the missing-data treatment, metric math; a state
// change notifies the alarm's topics.
//
// Time can run faster than the wall clock: with Scale 60, an alarm's
// one-minute period is one second and alarms are evaluated every second
// (LOCALCLOUD_TIME_SCALE), so a test sees a canary fail in seconds.
package cloudwatch

import (
	"github.com/practice-api/practice-api/shared/clock"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Metric names one metric: its namespace, name and dimensions.
type Metric struct {
	Namespace, Name string
	Dims            map[string]string
}

func (m Metric) key() string {
	names := make([]string, 0, len(m.Dims))
	for k := range m.Dims {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(m.Namespace + "|" + m.Name)
	for _, k := range names {
		b.WriteString("|" + k + "=" + m.Dims[k])
	}
	return b.String()
}

type point struct {
	at time.Time
	v  float64
}

// Store holds the data points of every metric, as CloudWatch keeps them
// (a dimension set is a metric of its own: no aggregation across
// dimensions).
type Store struct {
	mu     sync.Mutex
	points map[string][]point
	// Clock stamps the data points put without a time (nil: the wall
	// clock; localcloud's manual clock with LOCALCLOUD_CLOCK=manual).
	Clock clock.Clock
}

// NewStore is an empty store on the wall clock.
func NewStore() *Store { return &Store{points: map[string][]point{}} }

// Now is the store's time: its Clock's.
func (s *Store) Now() time.Time { return clock.Or(s.Clock).Now() }

// Put adds one data point at the current time.
func (s *Store) Put(m Metric, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := m.key()
	s.points[k] = append(s.points[k], point{s.Now(), v})
}

// PutAt adds one data point at a time of the past, as a service that
// publishes a metric late with the time it happened (Lambda stamps an
// invocation's metrics with its start).
func (s *Store) PutAt(m Metric, v float64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := m.key()
	pts := s.points[k]
	i := sort.Search(len(pts), func(i int) bool { return pts[i].at.After(at) })
	pts = append(pts, point{})
	copy(pts[i+1:], pts[i:])
	pts[i] = point{at, v}
	s.points[k] = pts
}

// Stat is statistic stat (Sum, Average, Maximum, Minimum, SampleCount,
// pNN) of m's points in [from, to); ok is false when there are none (a
// missing data point).
func (s *Store) Stat(m Metric, stat string, from, to time.Time) (float64, bool) {
	s.mu.Lock()
	// Points are kept in time order (Put reads the clock under the
	// lock; PutAt inserts): the range is found by binary search, not a scan of every
	// point a long run has put.
	pts := s.points[m.key()]
	lo := sort.Search(len(pts), func(i int) bool { return !pts[i].at.Before(from) })
	hi := sort.Search(len(pts), func(i int) bool { return !pts[i].at.Before(to) })
	var vs []float64
	for _, p := range pts[lo:max(lo, hi)] {
		vs = append(vs, p.v)
	}
	s.mu.Unlock()
	if len(vs) == 0 {
		return 0, false
	}
	switch {
	case stat == "Sum":
		t := 0.0
		for _, v := range vs {
			t += v
		}
		return t, true
	case stat == "Average":
		t := 0.0
		for _, v := range vs {
			t += v
		}
		return t / float64(len(vs)), true
	case stat == "Maximum":
		mx := math.Inf(-1)
		for _, v := range vs {
			mx = math.Max(mx, v)
		}
		return mx, true
	case stat == "Minimum":
		mn := math.Inf(1)
		for _, v := range vs {
			mn = math.Min(mn, v)
		}
		return mn, true
	case stat == "SampleCount":
		return float64(len(vs)), true
	case strings.HasPrefix(stat, "p"):
		q, err := strconv.ParseFloat(stat[1:], 64)
		if err != nil {
			return 0, false
		}
		sort.Float64s(vs)
		i := int(math.Ceil(q/100*float64(len(vs)))) - 1
		return vs[max(0, min(i, len(vs)-1))], true
	}
	return 0, false
}
