package queue

import (
	"sort"
	"sync"
	"time"
)

// Fair applies the rules of Amazon SQS fair queues to the messages of one
// queue, for the local queues that stand in for SQS (Memory, Table, and
// localcloud's queue server): every message with a group (SQS's
// MessageGroupId on a standard queue) belongs to that group's tenant; a
// tenant that uses a disproportionate share of the consumers is a noisy
// neighbour, and receives return quiet tenants' messages first. The rules,
// as AWS documents them:
//
//   - "Amazon SQS fair queues", https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-fair-queues.html
//   - "How Amazon SQS fair queues work", https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-fair-queues-detailed.html
//
// Each rule is a constant or a branch below with the sentence it emulates.
// Where the documentation gives no number (how recent "recent processing
// time" is), ours is named and documented (ProcessingWindow). SQS applies
// its thresholds approximately; these apply them exactly, so tests can
// hold them. A Fair changes the order of receives only: nothing is dropped,
// throttled or delayed, and visibility, receive counts and redrive are the
// queue's own.
type Fair struct {
	mu     sync.Mutex
	groups map[string]*tenant
}

const (
	// NoisyConcurrencyShare and NoisyMinInFlight: "Concurrency share: the
	// tenant has more than 10% of the queue's in-flight messages and at
	// least 30 of its own messages in flight."
	NoisyConcurrencyShare = 0.10
	NoisyMinInFlight      = 30
	// NoisyProcessingShare: "Processing time share: the tenant's share of
	// recent total consumer processing time is above 10%."
	NoisyProcessingShare = 0.10
	// QuietAfter: a tenant stops being a noisy neighbour when "the tenant
	// has not sent any messages for 5 consecutive minutes" (or its backlog
	// is drained).
	QuietAfter = 5 * time.Minute
	// ProcessingWindow is how far back "recent" consumer processing time
	// reaches. AWS gives no figure; a minute is ours: long enough that a
	// tenant whose receivers take seconds is seen at once, short enough
	// that one busy minute is forgotten soon after.
	ProcessingWindow = time.Minute
)

type tenant struct {
	flight   map[string]flight // message id -> its time in flight
	spans    []span            // processing that ended within the window
	lastSend time.Time
	noisy    bool
}

type flight struct{ since, until time.Time }
type span struct{ start, end time.Time }

// NewFair returns the bookkeeping of an empty queue.
func NewFair() *Fair { return &Fair{groups: map[string]*tenant{}} }

// Tenant is the tenant a message belongs to: its group, or, for a message
// sent without one, the message alone ("Each message without a
// MessageGroupId is treated as belonging to its own distinct tenant").
func Tenant(group, id string) string {
	if group == "" {
		return "\x00" + id
	}
	return group
}

func (f *Fair) tenant(name string) *tenant {
	t := f.groups[name]
	if t == nil {
		t = &tenant{flight: map[string]flight{}}
		f.groups[name] = t
	}
	return t
}

// Sent notes a message sent by tenant at (or, restored after a restart,
// sent at that time).
func (f *Fair) Sent(tenant string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.tenant(tenant); at.After(t.lastSend) {
		t.lastSend = at
	}
}

// Received notes message id of tenant received at now and hidden until.
func (f *Fair) Received(tenant, id string, now, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tenant(tenant)
	t.end(id, now) // received again before its timeout ran out (a restart): one flight at a time
	t.flight[id] = flight{since: now, until: until}
}

// Hidden notes a received message's new visibility timeout
// (ChangeMessageVisibility); an until not after now ends its processing:
// it is visible again.
func (f *Fair) Hidden(tenant, id string, now, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tenant(tenant)
	fl, ok := t.flight[id]
	if !ok {
		return
	}
	if !until.After(now) {
		t.end(id, now)
		return
	}
	fl.until = until
	t.flight[id] = fl
}

// Ended notes that a message left its flight at now: deleted (its
// processing is done), or moved away.
func (f *Fair) Ended(tenant, id string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.groups[tenant]; t != nil {
		t.end(id, now)
	}
}

func (t *tenant) end(id string, now time.Time) {
	fl, ok := t.flight[id]
	if !ok {
		return
	}
	delete(t.flight, id)
	end := now
	if fl.until.Before(end) {
		end = fl.until
	}
	if end.After(fl.since) {
		t.spans = append(t.spans, span{fl.since, end})
	}
}

// expire ends the flights whose visibility timeout has run out (the
// message is visible again: its consumer gave up or died) and forgets
// processing older than the window.
func (t *tenant) expire(now time.Time) {
	for id, fl := range t.flight {
		if !fl.until.After(now) {
			t.end(id, now)
		}
	}
	from := now.Add(-ProcessingWindow)
	kept := t.spans[:0]
	for _, s := range t.spans {
		if s.end.After(from) {
			kept = append(kept, s)
		}
	}
	t.spans = kept
}

// processing is the tenant's consumer time within the window, its
// messages still in flight included (a hanging receiver counts as it
// hangs).
func (t *tenant) processing(now time.Time) time.Duration {
	from := now.Add(-ProcessingWindow)
	var d time.Duration
	for _, s := range t.spans {
		d += s.end.Sub(later(s.start, from))
	}
	for _, fl := range t.flight {
		d += now.Sub(later(fl.since, from))
	}
	return d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// evaluate decides, at now, which tenants are noisy neighbours; backlog is
// each tenant's count of messages visible now.
func (f *Fair) evaluate(now time.Time, backlog map[string]int) {
	totalFlight := 0
	var totalBusy time.Duration
	busy := make(map[string]time.Duration, len(f.groups))
	for name, t := range f.groups {
		t.expire(now)
		totalFlight += len(t.flight)
		busy[name] = t.processing(now)
		totalBusy += busy[name]
	}
	for name, t := range f.groups {
		waiting := backlog[name]
		quiet := now.Sub(t.lastSend) >= QuietAfter
		if t.noisy && (waiting == 0 || quiet) {
			// "A tenant is no longer considered a noisy neighbor when: the
			// tenant's backlog is fully drained, or the tenant has not sent
			// any messages for 5 consecutive minutes."
			t.noisy = false
		}
		if !t.noisy && waiting > 0 && !quiet {
			n := len(t.flight)
			byConcurrency := n >= NoisyMinInFlight && float64(n) > NoisyConcurrencyShare*float64(totalFlight)
			byTime := totalBusy > 0 && float64(busy[name]) > NoisyProcessingShare*float64(totalBusy)
			t.noisy = byConcurrency || byTime
		}
		if !t.noisy && len(t.flight) == 0 && len(t.spans) == 0 && waiting == 0 && now.Sub(t.lastSend) >= QuietAfter {
			delete(f.groups, name) // nothing left to remember
		}
	}
}

// Pick chooses up to max of a receive's candidates, the messages visible
// now in the queue's own order (oldest first), each given by its tenant,
// and returns their indexes in the order a fair queue hands them out:
//
//   - "Once a tenant is detected as a noisy neighbor, Amazon SQS prioritizes
//     message delivery from quiet tenants. Consumer instances that poll for
//     messages receive messages from quiet tenants whenever quiet-tenant
//     messages are available." Quiet tenants' messages come first, in the
//     queue's order.
//   - "Noisy-neighbor messages are not dropped or throttled … When no
//     quiet-tenant messages are waiting, consumer instances receive
//     noisy-neighbor messages as usual." They fill what is left.
//   - "If multiple tenants are detected as noisy neighbors at the same time,
//     consumer instances receive messages from the noisy tenant with the
//     fewest in-flight messages first." Counting what this receive has
//     already taken.
//
// It does not mark them received: the queue calls Received for each one it
// hands out.
func (f *Fair) Pick(now time.Time, tenants []string, max int) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	backlog := map[string]int{}
	for _, t := range tenants {
		backlog[t]++
	}
	f.evaluate(now, backlog)
	out := make([]int, 0, min(max, len(tenants)))
	noisy := map[string][]int{}
	for i, name := range tenants {
		if t := f.groups[name]; t != nil && t.noisy {
			noisy[name] = append(noisy[name], i)
			continue
		}
		if len(out) < max {
			out = append(out, i)
		}
	}
	taken := map[string]int{}
	for len(out) < max && len(noisy) > 0 {
		best, bestN := "", 0
		for name := range noisy {
			n := len(f.groups[name].flight) + taken[name]
			if best == "" || n < bestN || (n == bestN && noisy[name][0] < noisy[best][0]) {
				best, bestN = name, n
			}
		}
		out = append(out, noisy[best][0])
		taken[best]++
		if noisy[best] = noisy[best][1:]; len(noisy[best]) == 0 {
			delete(noisy, best)
		}
	}
	return out
}

// Noisy reports whether tenant is a noisy neighbour (as of the last Pick
// or Metrics).
func (f *Fair) Noisy(tenant string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.groups[tenant]
	return t != nil && t.noisy
}

// FairMetrics are the metrics SQS publishes for fair queues
// (ApproximateNumberOfNoisyGroups and the …InQuietGroups family: "Amazon
// SQS fair queues", monitoring): quiet groups are every group but the
// noisy ones.
type FairMetrics struct {
	NoisyGroups                     int     `json:"ApproximateNumberOfNoisyGroups"`
	MessagesVisibleInQuietGroups    int     `json:"ApproximateNumberOfMessagesVisibleInQuietGroups"`
	MessagesNotVisibleInQuietGroups int     `json:"ApproximateNumberOfMessagesNotVisibleInQuietGroups"`
	MessagesDelayedInQuietGroups    int     `json:"ApproximateNumberOfMessagesDelayedInQuietGroups"`
	AgeOfOldestMessageInQuietGroups float64 `json:"ApproximateAgeOfOldestMessageInQuietGroups"` // seconds
}

// MessageState is one message as the metrics see it.
type MessageState struct {
	Tenant   string
	Sent     time.Time
	InFlight bool // received, not deleted, its visibility timeout running
	Delayed  bool // never received, not visible yet
}

// Metrics counts msgs (every message of the queue) by quiet and noisy
// groups, as of now.
func (f *Fair) Metrics(now time.Time, msgs []MessageState) FairMetrics {
	f.mu.Lock()
	defer f.mu.Unlock()
	backlog := map[string]int{}
	for _, s := range msgs {
		if !s.InFlight && !s.Delayed {
			backlog[s.Tenant]++
		}
	}
	f.evaluate(now, backlog)
	var m FairMetrics
	noisy := map[string]bool{}
	for name, t := range f.groups {
		if t.noisy {
			noisy[name] = true
		}
	}
	m.NoisyGroups = len(noisy)
	var oldest time.Time
	for _, s := range msgs {
		if noisy[s.Tenant] {
			continue
		}
		switch {
		case s.InFlight:
			m.MessagesNotVisibleInQuietGroups++
		case s.Delayed:
			m.MessagesDelayedInQuietGroups++
		default:
			m.MessagesVisibleInQuietGroups++
			if oldest.IsZero() || s.Sent.Before(oldest) {
				oldest = s.Sent
			}
		}
	}
	if !oldest.IsZero() {
		m.AgeOfOldestMessageInQuietGroups = now.Sub(oldest).Seconds()
	}
	return m
}

// NoisyTenants lists the noisy tenants, sorted (for logs and tests).
func (f *Fair) NoisyTenants() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for name, t := range f.groups {
		if t.noisy {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
