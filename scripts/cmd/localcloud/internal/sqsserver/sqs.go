// Package sqsserver is an Amazon SQS server for the JSON protocol the
// current SDK speaks, with SQS's semantics (delays, visibility, receive
// counts, redrive, retention, message move tasks, fair queues), its
// callers' keys and permissions checked, and queues kept in a journal
// across restarts.
package sqsserver

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/queue"

	"github.com/google/uuid"
)

// sqsServer speaks the part of Amazon SQS's JSON protocol (AWS JSON 1.0,
// X-Amz-Target: AmazonSQS.<Action>) that the service and its event source
// mappings use, over queues with SQS's semantics: per-message delays,
// visibility timeouts, receive counts, redrive to the dead-letter queue
// after maxReceiveCount receives, retention, and fair queues (a standard
// queue's messages sent with a MessageGroupId: queue.Fair). No SQS server that the current
// SDK can talk to is available from the Go module proxy (goaws, the one
// Go server served here, speaks only the older XML protocol), so this one
// is in the repository; queues live in memory, for as long as localcloud.
type Server struct {
	Base    string // http://127.0.0.1:port
	mu      sync.Mutex
	queues  map[string]*Queue // by name
	moves   []moveTask        // StartMessageMoveTask's, newest last
	Callers Callers           // who holds which access key id
	Policy  Policy            // the callers' permissions (nil: not checked)
	Journal *journal          // openJournal's, when the queues are kept on disk
	// Clock is the time the queues run on: delays, visibility timeouts,
	// retention, receive and send times (nil: the wall clock; a long
	// poll's wait stays on the wall clock). Set it before Create: a queue
	// keeps the clock it was made with. A test moves a clock.Manual
	// instead of waiting out a timeout.
	Clock clock.Clock
}

// Credential issues a caller (a function, or the operator) its own access
// key id for this run. The server refuses a request signed with any other
// (as AWS refuses an unknown key), so only localcloud's own processes, and
// whoever reads its ready line, reach the queues; and each request's
// caller is known, for its role's permissions.
func (s *Server) Credential(caller string) string { return s.Callers.Issue(caller) }

// moveTask is a redrive from a dead-letter queue (StartMessageMoveTask):
// localcloud moves the messages at once, so a task is COMPLETED when its
// start answers, and ListMessageMoveTasks reports it as SQS does.
type moveTask struct {
	handle, source, destination string
	moved                       int
	started                     time.Time
}

type Queue struct {
	Name, URL, ARN string
	visibility     time.Duration
	delay          time.Duration
	retention      time.Duration
	deadLetter     *Queue
	maxReceives    int

	mu      sync.Mutex
	msgs    []*Message
	wake    chan struct{}
	journal *journal     // nil: the queue lives in memory only
	fair    *queue.Fair  // fair queues' rules, over the messages' groups
	refused *refusal     // a fault campaign's: sends refused (nil: none)
	clock   clock.Clock  // the server's, when the queue was made
	polls   atomic.Int32 // long polls waiting now
}

// refusal is a Deny of sqs:SendMessage in the queue's policy, for one
// caller (a function's role) or, caller "", for every one.
type refusal struct{ caller string }

// Message is one message of a queue. Group is its MessageGroupId (its
// tenant: "" makes it a tenant of its own).
type Message struct {
	ID, Body, MD5 string
	Group         string
	Sent, visible time.Time
	FirstReceive  time.Time
	Receipt       string
	Receives      int
}

// tenant is the message's tenant for the fair queue's rules.
func (m *Message) tenant() string { return queue.Tenant(m.Group, m.ID) }

// Callers knows who signed a request (iam.Identities): the server issues
// each caller its own access key id and refuses any other.
type Callers interface {
	Issue(caller string) string
	Of(r *http.Request) (caller, code, message string)
}

// Policy decides a caller's call (iam.Policies).
type Policy interface {
	Allows(caller, action, resource string, keys map[string][]string) bool
	Denial(caller, action, resource string) string
}

// New serves queues at base, to the callers it issues keys to.
func New(base string, callers Callers) *Server {
	return &Server{Base: base, queues: map[string]*Queue{}, Callers: callers}
}

// Create adds a queue (its dead-letter queue must exist already).
func (s *Server) Create(spec *stack.Queue, dlq *Queue) *Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &Queue{Name: spec.Name, URL: s.Base + "/" + stack.Account + "/" + spec.Name,
		ARN: "arn:aws:sqs:" + stack.Region + ":" + stack.Account + ":" + spec.Name, visibility: spec.Visibility,
		delay: spec.Delay, retention: spec.Retention, deadLetter: dlq, maxReceives: spec.MaxReceives, wake: make(chan struct{}, 1), fair: queue.NewFair(), clock: clock.Or(s.Clock)}
	s.queues[spec.Name] = q
	return q
}

func (s *Server) byURL(url string) *Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := url[strings.LastIndexByte(url, '/')+1:]
	return s.queues[name]
}

func (s *Server) byARN(arn string) *Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.queues {
		if q.ARN == arn {
			return q
		}
	}
	return nil
}

// startMove moves every message of the dead-letter queue at source to
// destination, or (no destination) back to the queue whose dead-letter
// queue it is, as SQS's redrive does: visible at once, receive count
// reset. As SQS, the source must be some queue's dead-letter queue.
func (s *Server) startMove(source, destination string) (moveTask, string, string) {
	src := s.byARN(source)
	if src == nil {
		return moveTask{}, "ResourceNotFoundException", "The resource that you specified for the SourceArn parameter doesn't exist."
	}
	var dst *Queue
	s.mu.Lock()
	for _, q := range s.queues {
		if q.deadLetter == src && (destination == "" || q.ARN == destination) {
			dst = q
		}
	}
	s.mu.Unlock()
	if dst == nil && destination != "" {
		dst = s.byARN(destination)
	}
	if dst == nil {
		return moveTask{}, "InvalidParameterValue", "Source queue must be configured as a Dead Letter Queue."
	}
	src.mu.Lock()
	msgs := src.msgs
	src.msgs = nil
	now := src.clock.Now()
	for _, m := range msgs {
		src.journal.record(src.Name, "del", m)
		src.fair.Ended(m.tenant(), m.ID, now)
	}
	src.mu.Unlock()
	for _, m := range msgs {
		dst.SendGroup(m.Body, m.Group, 0)
	}
	t := moveTask{handle: uuid.NewString(), source: src.ARN, destination: dst.ARN, moved: len(msgs), started: src.clock.Now()}
	s.mu.Lock()
	s.moves = append(s.moves, t)
	s.mu.Unlock()
	return t, "", ""
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Woken signals that a message may have become visible (a send, a
// message made visible at once), for a poller that waits.
func (q *Queue) Woken() <-chan struct{} { return q.wake }

// Addr is where the queue is served.
func (q *Queue) Addr() stack.QueueAddr { return stack.QueueAddr{URL: q.URL, ARN: q.ARN, Name: q.Name} }

// Send enqueues a body without a group; delay < 0 takes the queue's.
func (q *Queue) Send(body string, delay time.Duration) *Message { return q.SendGroup(body, "", delay) }

// SendGroup enqueues a body in group (its MessageGroupId); delay < 0
// takes the queue's.
func (q *Queue) SendGroup(body, group string, delay time.Duration) *Message {
	if delay < 0 {
		delay = q.delay
	}
	now := q.clock.Now()
	m := &Message{ID: uuid.NewString(), Body: body, MD5: md5Hex(body), Group: group, Sent: now, visible: now.Add(delay)}
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.journal.record(q.Name, "set", m)
	q.fair.Sent(m.tenant(), now)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return m
}

// Receive takes up to max visible messages and hides them for visibility
// (< 0: the queue's), quiet tenants' first (queue.Fair.Pick). A message
// already received maxReceives times moves to the dead-letter queue
// instead, as SQS's redrive does.
func (q *Queue) Receive(max int, visibility time.Duration) []Message {
	if visibility < 0 {
		visibility = q.visibility
	}
	now := q.clock.Now()
	var out []Message
	var dead []*Message
	q.mu.Lock()
	kept := q.msgs[:0]
	var visible []*Message
	for _, m := range q.msgs {
		if now.Sub(m.Sent) > q.retention {
			q.journal.record(q.Name, "del", m)
			q.fair.Ended(m.tenant(), m.ID, now)
			continue // expired
		}
		if !m.visible.After(now) {
			visible = append(visible, m)
		}
		kept = append(kept, m)
	}
	q.msgs = kept
	gone := map[*Message]bool{}
	for len(out) < max && len(visible) > 0 {
		tenants := make([]string, len(visible))
		for i, m := range visible {
			tenants[i] = m.tenant()
		}
		picked := q.fair.Pick(now, tenants, max-len(out))
		taken := map[int]bool{}
		for _, i := range picked {
			m := visible[i]
			taken[i] = true
			if q.deadLetter != nil && q.maxReceives > 0 && m.Receives >= q.maxReceives {
				// In the journal it reaches the dead-letter queue before it leaves
				// this one: a kill between the two keeps it in both, not in none.
				moved := *m
				moved.Receives, moved.Receipt, moved.visible = 0, "", now
				q.deadLetter.journal.record(q.deadLetter.Name, "set", &moved)
				q.journal.record(q.Name, "del", m)
				dead = append(dead, m)
				gone[m] = true
				continue
			}
			m.Receives++
			if m.Receives == 1 {
				m.FirstReceive = now
			}
			m.Receipt = uuid.NewString()
			m.visible = now.Add(visibility)
			q.journal.record(q.Name, "set", m)
			q.fair.Received(m.tenant(), m.ID, now, m.visible)
			out = append(out, *m)
		}
		rest := visible[:0]
		for i, m := range visible {
			if !taken[i] {
				rest = append(rest, m)
			}
		}
		visible = rest
		if len(picked) == 0 {
			break
		}
	}
	if len(gone) > 0 {
		kept := q.msgs[:0]
		for _, m := range q.msgs {
			if !gone[m] {
				kept = append(kept, m)
			}
		}
		q.msgs = kept
	}
	q.mu.Unlock()
	for _, m := range dead {
		q.deadLetter.mu.Lock()
		m.Receives, m.Receipt, m.visible = 0, "", now
		q.deadLetter.msgs = append(q.deadLetter.msgs, m)
		q.deadLetter.journal.record(q.deadLetter.Name, "set", m)
		q.deadLetter.fair.Sent(m.tenant(), now)
		q.deadLetter.mu.Unlock()
	}
	return out
}

// Delete removes a message if the receipt is its latest.
func (q *Queue) Delete(receipt string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, m := range q.msgs {
		if m.Receipt == receipt && receipt != "" {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			q.journal.record(q.Name, "del", m)
			q.fair.Ended(m.tenant(), m.ID, q.clock.Now())
			return true
		}
	}
	return false
}

// changeVisibility sets when a received message comes back.
func (q *Queue) changeVisibility(receipt string, d time.Duration) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.msgs {
		if m.Receipt == receipt && receipt != "" {
			now := q.clock.Now()
			m.visible = now.Add(d)
			q.journal.record(q.Name, "set", m)
			q.fair.Hidden(m.tenant(), m.ID, now, m.visible)
			if d == 0 {
				select {
				case q.wake <- struct{}{}:
				default:
				}
			}
			return true
		}
	}
	return false
}

// recheck is how often a long poll looks at its queue again for a
// message whose delay or visibility timeout has ended on the queue's
// clock (a send wakes it at once).
const recheck = 100 * time.Millisecond

// longPoll is ReceiveMessage's wait: it receives up to max messages
// (Receive), waiting up to wait for one to be visible, as a long poll
// (WaitTimeSeconds) does; false when ctx ended first (the caller left).
// The wait is on the wall clock, as every queue receive's long poll in
// the service is (DEVELOPERS.md: a manual clock nobody moves hangs none);
// the delays and visibility timeouts it waits out are on the queue's.
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-short-and-long-polling.html
func (q *Queue) longPoll(ctx context.Context, max int, visibility, wait time.Duration) ([]Message, bool) {
	if msgs := q.Receive(max, visibility); len(msgs) > 0 || wait <= 0 {
		return msgs, true
	}
	q.polls.Add(1)
	defer q.polls.Add(-1)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	tick := time.NewTicker(recheck)
	defer tick.Stop()
	for {
		select {
		case <-q.wake:
		case <-tick.C:
		case <-timer.C:
			return q.Receive(max, visibility), true
		case <-ctx.Done():
			return nil, false
		}
		if msgs := q.Receive(max, visibility); len(msgs) > 0 {
			return msgs, true
		}
	}
}

// Contains reports whether the message id is still in the queue (sent, not
// deleted, expired or moved).
func (q *Queue) Contains(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.msgs {
		if m.ID == id {
			return true
		}
	}
	return false
}

// RefuseSends makes the queue refuse caller's sends (every caller's when
// caller is ""; refuse false lifts it), as a Deny of sqs:SendMessage in
// the queue's policy does: SendMessage and SendMessageBatch answer
// AccessDenied, which the SDK does not retry. An explicit Deny in a
// resource policy wins over any Allow.
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
func (q *Queue) RefuseSends(caller string, refuse bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refused = nil
	if refuse {
		q.refused = &refusal{caller: caller}
	}
}

func (q *Queue) refuses(caller string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.refused != nil && (q.refused.caller == "" || q.refused.caller == caller)
}

// PoisonReceives is how many receives make a message a poison pill that
// ApproximateAgeOfOldestMessage leaves out: SQS moves a message received
// three times or more, and not deleted, to the back of the queue for the
// metric, which then shows the oldest message received fewer times.
const PoisonReceives = 3

// OldestAge is the queue's ApproximateAgeOfOldestMessage at now: the age of
// its oldest message not deleted (visible, in flight or delayed), leaving
// out poison pills (PoisonReceives); ok is false when it has none (SQS
// then publishes no value for an idle queue).
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html
func (q *Queue) OldestAge(now time.Time) (age time.Duration, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.msgs {
		if m.Receives >= PoisonReceives || now.Sub(m.Sent) > q.retention {
			continue
		}
		if a := now.Sub(m.Sent); !ok || a > age {
			age, ok = a, true
		}
	}
	return max(age, 0), ok
}

// Counts are the visible, in-flight and delayed messages.
func (q *Queue) Counts() (visible, inFlight, delayed int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for _, m := range q.msgs {
		switch {
		case !m.visible.After(now):
			visible++
		case m.Receives > 0:
			inFlight++
		default:
			delayed++
		}
	}
	return
}

// Fairness is the queue's fair-queue metrics now (the ones SQS publishes
// to CloudWatch for a queue whose messages carry groups).
func (q *Queue) Fairness() queue.FairMetrics {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	states := make([]queue.MessageState, 0, len(q.msgs))
	for _, m := range q.msgs {
		hidden := m.visible.After(now)
		states = append(states, queue.MessageState{Tenant: m.tenant(), Sent: m.Sent, InFlight: hidden && m.Receives > 0, Delayed: hidden && m.Receives == 0})
	}
	return q.fair.Metrics(now, states)
}

// Noisy lists the groups the queue treats as noisy neighbours now.
func (q *Queue) Noisy() []string { return q.fair.NoisyTenants() }

// maxGroupID is the longest MessageGroupId SQS takes.
const maxGroupID = 128

// validGroupID reports whether id is a MessageGroupId SQS takes: 1 to 128
// characters, alphanumeric or punctuation.
func validGroupID(id string) bool {
	if len(id) == 0 || len(id) > maxGroupID {
		return false
	}
	for _, r := range id {
		if r <= ' ' || r > '~' {
			return false
		}
	}
	return true
}

// call is one SQS API call being answered: its caller, its action and
// parameters (the JSON protocol's body), and the members of its answer.
type call struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	caller string
	action string
	in     map[string]any
	out    map[string]any
}

// str is the call's string parameter k ("" when absent).
func (c *call) str(k string) string { v, _ := c.in[k].(string); return v }

// num is the call's number parameter k, def when absent.
func (c *call) num(k string, def int) int {
	if v, ok := c.in[k].(float64); ok {
		return int(v)
	}
	return def
}

// queue is the queue QueueUrl names, or nil when there is none or its
// policy refuses the caller's send: the call is then answered with SQS's
// error.
func (c *call) queue() *Queue {
	q := c.s.byURL(c.str("QueueUrl"))
	if q == nil {
		sqsError(c.w, "QueueDoesNotExist", "The specified queue does not exist.")
		return nil
	}
	if (c.action == "SendMessage" || c.action == "SendMessageBatch") && q.refuses(c.caller) {
		accessDenied(c.w, "User: "+c.caller+" is not authorized to perform: sqs:SendMessage on resource: "+q.ARN+" with an explicit deny in a resource-based policy")
		return nil
	}
	return q
}

// actions are the SQS actions localcloud answers: each puts its answer's
// members into c.out and reports true, or answers the call with an error
// itself (or leaves it unanswered: a ReceiveMessage whose caller left) and
// reports false.
var actions = map[string]func(c *call) bool{
	"GetQueueUrl":             actionGetQueueURL,
	"ListQueues":              actionListQueues,
	"SendMessage":             actionSendMessage,
	"SendMessageBatch":        actionSendMessageBatch,
	"ReceiveMessage":          actionReceiveMessage,
	"DeleteMessage":           actionDeleteMessage,
	"DeleteMessageBatch":      actionDeleteMessageBatch,
	"ChangeMessageVisibility": actionChangeMessageVisibility,
	"GetQueueAttributes":      actionGetQueueAttributes,
	"StartMessageMoveTask":    actionStartMessageMoveTask,
	"ListMessageMoveTasks":    actionListMessageMoveTasks,
}

// ServeHTTP answers one SQS API call (the JSON protocol): the caller is
// authorized (its credentials, then the IAM policy for the action's
// single-message name on the queue's ARN), and the action's function in
// actions answers it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, code, msg := s.Callers.Of(r)
	if code != "" {
		sqsErrorStatus(w, http.StatusForbidden, code, msg)
		return
	}
	c := &call{s: s, w: w, r: r, caller: caller, action: strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS."), out: map[string]any{}}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(raw, &c.in); err != nil && len(raw) > 0 {
		sqsError(w, "InvalidParameterValue", "the body is not JSON")
		return
	}
	if !s.authorized(c) {
		return
	}
	act, ok := actions[c.action]
	if !ok {
		sqsError(w, "UnsupportedOperation", "localcloud's SQS does not implement "+c.action)
		return
	}
	if !act(c) {
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(c.out)
}

// authorized checks c against the IAM policy, when the server has one, and
// answers AccessDenied when it refuses. A batch call is authorized by its
// single-message action, as IAM has no actions of its own for batches.
func (s *Server) authorized(c *call) bool {
	if s.Policy == nil {
		return true
	}
	resource := "*"
	switch {
	case c.str("QueueUrl") != "":
		if q := s.byURL(c.str("QueueUrl")); q != nil {
			resource = q.ARN
		}
	case c.str("QueueName") != "":
		resource = "arn:aws:sqs:" + stack.Region + ":" + stack.Account + ":" + c.str("QueueName")
	case c.str("SourceArn") != "":
		resource = c.str("SourceArn")
	}
	if a := "sqs:" + strings.TrimSuffix(c.action, "Batch"); !s.Policy.Allows(c.caller, a, resource, nil) {
		accessDenied(c.w, s.Policy.Denial(c.caller, a, resource))
		return false
	}
	return true
}

// accessDenied answers SQS's AccessDenied with msg.
func accessDenied(w http.ResponseWriter, msg string) {
	w.Header().Set("x-amzn-query-error", "AccessDenied;Sender")
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazon.coral.service#AccessDeniedException", "message": msg})
}

// actionGetQueueURL answers GetQueueUrl.
func actionGetQueueURL(c *call) bool {
	c.s.mu.Lock()
	q := c.s.queues[c.str("QueueName")]
	c.s.mu.Unlock()
	if q == nil {
		sqsError(c.w, "QueueDoesNotExist", "The specified queue does not exist.")
		return false
	}
	c.out["QueueUrl"] = q.URL
	return true
}

// actionListQueues answers ListQueues.
func actionListQueues(c *call) bool {
	c.s.mu.Lock()
	var urls []string
	for _, q := range c.s.queues {
		urls = append(urls, q.URL)
	}
	c.s.mu.Unlock()
	c.out["QueueUrls"] = urls
	return true
}

// actionSendMessage answers SendMessage.
func actionSendMessage(c *call) bool {
	q := c.queue()
	if q == nil {
		return false
	}
	body := c.str("MessageBody")
	if body == "" {
		sqsError(c.w, "MissingParameter", "The request must contain the parameter MessageBody.")
		return false
	}
	group, hasGroup := c.in["MessageGroupId"].(string)
	if hasGroup && !validGroupID(group) {
		sqsError(c.w, "InvalidParameterValue", "Value for parameter MessageGroupId is invalid: 1 to 128 alphanumeric or punctuation characters.")
		return false
	}
	m := q.SendGroup(body, group, time.Duration(c.num("DelaySeconds", -1))*time.Second)
	c.out["MessageId"], c.out["MD5OfMessageBody"] = m.ID, m.MD5
	return true
}

// actionSendMessageBatch answers SendMessageBatch.
func actionSendMessageBatch(c *call) bool {
	q := c.queue()
	if q == nil {
		return false
	}
	entries, _ := c.in["Entries"].([]any)
	if len(entries) == 0 || len(entries) > 10 {
		sqsError(c.w, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "a batch holds 1 to 10 entries")
		return false
	}
	var ok, failed []map[string]any
	for _, e := range entries {
		em, _ := e.(map[string]any)
		id, _ := em["Id"].(string)
		body, _ := em["MessageBody"].(string)
		if body == "" {
			failed = append(failed, map[string]any{"Id": id, "Code": "MissingParameter", "Message": "MessageBody is required", "SenderFault": true})
			continue
		}
		group, hasGroup := em["MessageGroupId"].(string)
		if hasGroup && !validGroupID(group) {
			failed = append(failed, map[string]any{"Id": id, "Code": "InvalidParameterValue", "Message": "MessageGroupId is invalid", "SenderFault": true})
			continue
		}
		delay := -1
		if d, ok := em["DelaySeconds"].(float64); ok {
			delay = int(d)
		}
		m := q.SendGroup(body, group, time.Duration(delay)*time.Second)
		ok = append(ok, map[string]any{"Id": id, "MessageId": m.ID, "MD5OfMessageBody": m.MD5})
	}
	c.out["Successful"], c.out["Failed"] = ok, failed
	return true
}

// actionReceiveMessage answers ReceiveMessage.
func actionReceiveMessage(c *call) bool {
	q := c.queue()
	if q == nil {
		return false
	}
	max := min(max(c.num("MaxNumberOfMessages", 1), 1), 10)
	vis := time.Duration(c.num("VisibilityTimeout", -1)) * time.Second
	msgs, ok := q.longPoll(c.r.Context(), max, vis, time.Duration(min(c.num("WaitTimeSeconds", 0), 20))*time.Second)
	if !ok {
		return false
	}
	list := []map[string]any{}
	for _, m := range msgs {
		attrs := map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.Receives),
			"SentTimestamp": strconv.FormatInt(m.Sent.UnixMilli(), 10), "ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.FirstReceive.UnixMilli(), 10)}
		if m.Group != "" {
			attrs["MessageGroupId"] = m.Group
		}
		list = append(list, map[string]any{"MessageId": m.ID, "ReceiptHandle": m.Receipt, "MD5OfBody": m.MD5, "Body": m.Body, "Attributes": attrs})
	}
	c.out["Messages"] = list
	return true
}

// actionDeleteMessage answers DeleteMessage.
func actionDeleteMessage(c *call) bool {
	q := c.queue()
	if q == nil {
		return false
	}
	q.Delete(c.str("ReceiptHandle"))
	return true
}

// actionDeleteMessageBatch answers DeleteMessageBatch.
func actionDeleteMessageBatch(c *call) bool {
	q := c.queue()
	if q == nil {
		return false
	}
	entries, _ := c.in["Entries"].([]any)
	var ok []map[string]any
	for _, e := range entries {
		em, _ := e.(map[string]any)
		q.Delete(fmt.Sprint(em["ReceiptHandle"]))
		ok = append(ok, map[string]any{"Id": em["Id"]})
	}
	c.out["Successful"], c.out["Failed"] = ok, []any{}
	return true
}

// actionChangeMessageVisibility answers ChangeMessageVisibility.
func actionChangeMessageVisibility(c *call) bool {
	q := c.queue()
	if q == nil {
		return false
	}
	if !q.changeVisibility(c.str("ReceiptHandle"), time.Duration(c.num("VisibilityTimeout", 0))*time.Second) {
		sqsError(c.w, "ReceiptHandleIsInvalid", "The input receipt handle is invalid.")
		return false
	}
	return true
}

// actionGetQueueAttributes answers GetQueueAttributes.
func actionGetQueueAttributes(c *call) bool {
	q := c.queue()
	if q == nil {
		return false
	}
	v, f, d := q.Counts()
	attrs := map[string]string{"ApproximateNumberOfMessages": strconv.Itoa(v), "ApproximateNumberOfMessagesNotVisible": strconv.Itoa(f),
		"ApproximateNumberOfMessagesDelayed": strconv.Itoa(d), "QueueArn": q.ARN,
		"VisibilityTimeout": strconv.Itoa(int(q.visibility.Seconds())), "DelaySeconds": strconv.Itoa(int(q.delay.Seconds()))}
	if q.deadLetter != nil {
		rp, _ := json.Marshal(map[string]any{"deadLetterTargetArn": q.deadLetter.ARN, "maxReceiveCount": q.maxReceives})
		attrs["RedrivePolicy"] = string(rp)
	}
	c.out["Attributes"] = attrs
	return true
}

// actionStartMessageMoveTask answers StartMessageMoveTask.
func actionStartMessageMoveTask(c *call) bool {
	t, code, msg := c.s.startMove(c.str("SourceArn"), c.str("DestinationArn"))
	if code != "" {
		sqsError(c.w, code, msg)
		return false
	}
	c.out["TaskHandle"] = t.handle
	return true
}

// actionListMessageMoveTasks answers ListMessageMoveTasks.
func actionListMessageMoveTasks(c *call) bool {
	c.s.mu.Lock()
	results := []map[string]any{}
	for i := len(c.s.moves) - 1; i >= 0 && len(results) < min(max(c.num("MaxResults", 1), 1), 10); i-- {
		if t := c.s.moves[i]; t.source == c.str("SourceArn") {
			results = append(results, map[string]any{"Status": "COMPLETED", "SourceArn": t.source, "DestinationArn": t.destination,
				"ApproximateNumberOfMessagesMoved": t.moved, "ApproximateNumberOfMessagesToMove": t.moved,
				"StartedTimestamp": t.started.UnixMilli()})
		}
	}
	c.s.mu.Unlock()
	c.out["Results"] = results
	return true
}

func sqsError(w http.ResponseWriter, code, msg string) {
	sqsErrorStatus(w, http.StatusBadRequest, code, msg)
}

func sqsErrorStatus(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-query-error", "AWS.SimpleQueueService."+code+";Sender")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + code, "message": msg})
}
