package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/metrics"
	"github.com/practice-api/practice-api/shared/netguard"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhook/signature"
)

// DefaultEndpointConcurrency bounds one endpoint's deliveries in flight
// (WEBHOOK_ENDPOINT_CONCURRENCY).
const DefaultEndpointConcurrency = 10

// DefaultReplaysPerHour bounds the events one organisation replays in a
// clock hour (WEBHOOK_REPLAYS_PER_HOUR).
const DefaultReplaysPerHour = 10000

// DefaultSchedule is the spec's pauses between the five attempts.
var DefaultSchedule = []time.Duration{30 * time.Second, 2 * time.Minute, 8 * time.Minute, 30 * time.Minute}

// Job is one delivery of one event to one endpoint. It names what to send
// and carries nothing of it: the worker reads the event as stored (by its
// organisation and sequence, its key in the feed, and checks its id) and
// the endpoint, and signs what it read; a job that names an event or an
// endpoint that does not exist is dropped, never signed. So a message
// that anyone able to send to the queue made up can at most resend a real
// event to one of its own organisation's endpoints, which deduplicates.
type Job struct {
	OrgID      string `json:"organization_id"`
	EventID    string `json:"event_id"`
	Sequence   int64  `json:"sequence"`
	EndpointID string `json:"endpoint_id"`
	Attempt    int    `json:"attempt"`
	// NotBefore (unix seconds) carries a pause longer than a queue delay
	// (15 minutes): the job hops through the queue until then.
	NotBefore int64 `json:"not_before,omitempty"`
	// Manual is the id of the failed attempt a manual retry resends: one
	// attempt of its own, outside the automatic series.
	Manual string `json:"manual,omitempty"`
	// Replay is the id of the replay that queued this event again: a
	// series of its own, sent even if the event was delivered before.
	Replay string `json:"replay,omitempty"`
}

// group is the delivery queue's group (its tenant) of the job: its
// organisation, or, for a replayed job, the organisation's replays (a
// tenant of their own: a replay does not delay its organisation's live
// events).
func (j Job) group() string {
	if j.Replay != "" {
		return ReplayGroup(j.OrgID)
	}
	return j.OrgID
}

// jobOf is the first attempt of ev's delivery to an endpoint.
func jobOf(ev outbox.Message, endpoint string) Job {
	return Job{OrgID: ev.OrgID, EventID: ev.ID, Sequence: ev.Sequence, EndpointID: endpoint, Attempt: 1}
}

// Fanout turns an outbox event into one delivery job per active endpoint of
// the organisation subscribed to its type. It is the dispatcher's sink for
// webhook event types.
type Fanout struct {
	Store *Store
	Queue queue.Queue
}

// Send fans one dispatched event out: its jobs go to the delivery queue in
// the organisation's group (the queue's tenant).
func (f *Fanout) Send(ctx context.Context, _ string, body []byte, _ time.Duration) error {
	var ev outbox.Message
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil // not an event: nothing to deliver
	}
	// The organisation's endpoints, read once per dispatch round for all
	// its events in it.
	v, err := outbox.RoundOf(ctx).Once("webhook endpoints "+ev.OrgID, func() (any, error) { return f.Store.All(ctx, ev.OrgID) })
	if err != nil {
		return err
	}
	eps := v.([]Endpoint)
	var jobs [][]byte
	for _, e := range eps {
		if !e.IsActive || !slices.Contains(e.EventTypes, ev.Type) {
			continue
		}
		job, _ := json.Marshal(jobOf(ev, e.ID))
		jobs = append(jobs, job)
	}
	// One call per ten jobs. If some are refused, the event stays pending
	// and the next dispatch fans it out again; the jobs that did go out
	// then arrive twice, and send nothing the second time (each attempt is
	// claimed before it is sent).
	return f.Queue.SendBatch(ctx, ev.OrgID, jobs)
}

// Attempt is the record of one delivery attempt, kept 30 days.
type Attempt struct {
	store.Keys  `json:"-"`
	ID          string      `dynamodbav:"id" json:"id"`
	EndpointID  string      `dynamodbav:"endpoint_id" json:"endpoint_id"`
	EventID     string      `dynamodbav:"event_id" json:"event_id"`
	EventType   outbox.Type `dynamodbav:"event_type" json:"event_type"`
	Attempt     int         `dynamodbav:"attempt" json:"attempt"`
	Succeeded   bool        `dynamodbav:"succeeded" json:"succeeded"`
	StatusCode  int         `dynamodbav:"status_code,omitempty" json:"status_code,omitempty"`
	Error       string      `dynamodbav:"error,omitempty" json:"error,omitempty"`
	DurationMS  int64       `dynamodbav:"duration_ms" json:"duration_ms"`
	AttemptedAt string      `dynamodbav:"attempted_at" json:"attempted_at"`
	// Manual marks an attempt a manual retry made (POST …/retry).
	Manual bool `dynamodbav:"manual,omitempty" json:"manual,omitempty"`
	// ReplayID marks an attempt of a replay (POST …/replay, or PATCH with
	// replay_since).
	ReplayID string `dynamodbav:"replay_id,omitempty" json:"replay_id,omitempty"`
	Envelope string `dynamodbav:"envelope" json:"-"`
	TTL      int64  `dynamodbav:"ttl" json:"-"`
}

// Deliverer sends jobs: signed, bounded in time, never following redirects,
// never reaching private addresses (unless allowed), retried on Schedule.
type Deliverer struct {
	Store    *Store
	Queue    queue.Queue
	Schedule []time.Duration
	Client   *http.Client
	// Clock is the deliverer's time: signatures, claim leases, retry
	// waits, budgets, sweeps (the wall clock when nil).
	Clock clock.Clock
	// ReplayLimit bounds the events one replay queues (ReplayMax when 0);
	// ReplaysPerHour those one organisation replays in a clock hour
	// (DefaultReplaysPerHour when 0).
	ReplayLimit, ReplaysPerHour int
	// ClaimLease is how long an attempt's claim holds (the const
	// ClaimLease when 0): WEBHOOK_CLAIM_LEASE, shortened only by tests.
	ClaimLease time.Duration
	// Log takes the worker's warnings and metrics (slog's default when nil).
	Log *slog.Logger
	// Stage is the Stage dimension of its metrics (STAGE; "local" when
	// empty).
	Stage string
	// EndpointConcurrency bounds one endpoint's deliveries in flight
	// (DefaultEndpointConcurrency when 0); replays use its lower half only.
	EndpointConcurrency int

	tallyMu sync.Mutex
	warned  map[string]time.Time // endpoint -> its last budget WARN
	pacedN  int
	pacedAt time.Time
}

func (d *Deliverer) claimLease() time.Duration {
	if d.ClaimLease > 0 {
		return d.ClaimLease
	}
	return ClaimLease
}

func (d *Deliverer) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

// NewHTTPClient is the delivery client: 5 s to connect (and for TLS), 10 s
// for the response headers, redirects returned rather than followed,
// proxies ignored, the SSRF guard at connect time, and caFile's roots
// trusted besides the system's.
func NewHTTPClient(caFile string, allowPrivate bool) (*http.Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("WEBHOOK_CA_FILE: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("WEBHOOK_CA_FILE %s holds no PEM certificate", caFile)
		}
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy: nil, DialContext: netguard.Dialer(5*time.Second, allowPrivate).DialContext, TLSHandshakeTimeout: 5 * time.Second,
			ResponseHeaderTimeout: 10 * time.Second, TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 4, IdleConnTimeout: 60 * time.Second,
		},
		Timeout:       15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

func (d *Deliverer) clock() clock.Clock { return clock.Or(d.Clock) }

func (d *Deliverer) now() time.Time { return d.clock().Now() }

func (d *Deliverer) schedule() []time.Duration {
	if d.Schedule != nil {
		return d.Schedule
	}
	return DefaultSchedule
}

// maxResponse is how much of a receiver's answer is read (then dropped).
const maxResponse = 4 << 10

// Handle runs one job. An error (the store failed) leaves the job to the
// queue's redelivery; a failed delivery is recorded and rescheduled
// instead. Each attempt is claimed before it is sent (attempts.go), so a
// job received twice is sent once.
func (d *Deliverer) Handle(ctx context.Context, m queue.Message) error {
	var job Job
	if err := json.Unmarshal(m.Body, &job); err != nil || !job.valid() {
		d.drop(ctx, job, "the message is not a delivery job")
		return nil
	}
	now := d.now()
	if wait := time.Unix(job.NotBefore, 0).Sub(now); job.NotBefore != 0 && wait > 0 {
		return d.enqueue(ctx, job, wait) // another hop
	}
	e, end, err := d.endpointOf(ctx, job)
	if end {
		return err
	}
	owner := uuid.NewString()
	slot, end, err := d.slotOf(ctx, job, owner, now)
	if end {
		return err
	}
	var took time.Duration
	defer func() {
		bctx, cancel := bookkeeping(ctx)
		defer cancel()
		d.release(bctx, slot, took)
	}()
	ev, end, err := d.eventOf(ctx, job, &e)
	if end {
		return err
	}
	c, end, err := d.claimOf(ctx, job, m.ID, owner, now)
	if end {
		return err
	}
	// A claim taken over (outcome takenOver) is an attempt whose worker
	// stopped before recording it: whether the receiver got it is unknown.
	// An unknown outcome is not a failure: it is not counted towards the
	// endpoint's consecutive failures, and it does not use up one of the
	// event's attempts. The same attempt is sent again, now (its lease has
	// delayed it already), and its real outcome is recorded; a receiver
	// that did get the first send sees the event twice, as at-least-once
	// delivery allows, and deduplicates it on the event id.
	a, err := d.attempt(ctx, &e, ev, job, now)
	if err != nil {
		return err
	}
	took = time.Duration(max(a.DurationMS, 1)) * time.Millisecond
	// What follows the attempt is bookkeeping that must finish even when the
	// receiver used up the caller's time: recording and counting it, and
	// queueing the retry.
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	return d.settle(ctx, c, a, &e, job, now)
}

// endpointOf reads the job's endpoint. end says the job ends here, with
// err: its endpoint is gone or off (deliveries to it stop), or the store
// failed.
func (d *Deliverer) endpointOf(ctx context.Context, job Job) (e Endpoint, end bool, err error) {
	e, err = d.Store.Get(ctx, job.OrgID, job.EndpointID)
	if errors.Is(err, store.ErrNotFound) {
		d.drop(ctx, job, "its endpoint does not exist (deleted)")
		return e, true, d.replayed(ctx, job) // deliveries to it stop
	}
	if err != nil {
		return e, true, err
	}
	if !e.IsActive {
		return e, true, d.replayed(ctx, job) // disabled: deliveries stop
	}
	return e, false, nil
}

// slotOf takes a slot of the endpoint's budget, first: a job over the
// endpoint's budget goes back to the queue having read no more than the
// endpoint. end says the job ends here, with err.
func (d *Deliverer) slotOf(ctx context.Context, job Job, owner string, now time.Time) (slot *budget, end bool, err error) {
	slot, err = d.takeSlot(ctx, job, owner, now)
	var over *errOverBudget
	if errors.As(err, &over) {
		// Over the endpoint's budget: back to the queue until its turn,
		// the same attempt (none used up).
		d.paced(ctx, job, over.wait, now)
		return slot, true, d.wait(ctx, job, over.wait, now)
	}
	return slot, err != nil, err
}

// eventOf reads the job's event. end says the job ends here, with err:
// the event is gone, or e no longer subscribes to its type (deliveries
// stop), or the store failed.
func (d *Deliverer) eventOf(ctx context.Context, job Job, e *Endpoint) (ev outbox.Message, end bool, err error) {
	ev, err = d.Store.event(ctx, job)
	if errors.Is(err, store.ErrNotFound) {
		d.drop(ctx, job, "its event does not exist (never, or no longer in the feed)")
		return ev, true, d.replayed(ctx, job)
	}
	if err != nil {
		return ev, true, err
	}
	if !slices.Contains(e.EventTypes, ev.Type) {
		return ev, true, d.replayed(ctx, job) // unsubscribed: deliveries stop
	}
	return ev, false, nil
}

// claimOf claims the job's attempt before it is sent (attempts.go). end
// says the job ends here, with err: there is nothing to send, or the
// attempt is being sent by this same message's other receive, or the store
// failed.
func (d *Deliverer) claimOf(ctx context.Context, job Job, msgID, owner string, now time.Time) (c *claim, end bool, err error) {
	c, err = d.Store.claimAttempt(ctx, job, msgID, owner, now, d.claimLease())
	if err != nil {
		return nil, true, err
	}
	switch c.outcome {
	case eventDelivered, inFlight:
		return c, true, nil // nothing to send: delivered already, or a duplicate of a job being sent
	case inFlightHere:
		return c, true, errAttemptInFlight // the same message, still being handled: let it come back later
	case alreadyDone:
		// Sent and recorded; queue the next attempt if a worker stopped
		// before it could.
		if c.succeeded || c.nextQueued || job.Manual != "" {
			return c, true, nil
		}
		return c, true, d.scheduleNext(ctx, c, job, now)
	}
	return c, false, nil
}

// settle does an attempt's bookkeeping: records it, disables its endpoint
// when its failures are due to, and queues the next attempt of a failed
// one.
func (d *Deliverer) settle(ctx context.Context, c *claim, a Attempt, e *Endpoint, job Job, now time.Time) error {
	// The record counts a replay's first attempt towards its progress, in
	// the same transaction.
	// A failed delivery is an event whose attempts are exhausted: the last
	// of its series failed (a manual retry is one attempt outside it).
	exhausted := !a.Succeeded && job.Manual == "" && job.Attempt > len(d.schedule())
	switch err := d.Store.record(ctx, c, a, now, e.ConsecutiveFailures, exhausted); {
	case errors.Is(err, errLostClaim):
		return nil // another worker took the attempt over and records it
	case err != nil:
		return err
	}
	if a.Succeeded {
		return nil
	}
	disabled := false
	if exhausted {
		var err error
		if disabled, err = d.Store.disableIfDue(ctx, job.OrgID, e.ID, now); err != nil {
			return err
		}
	}
	if disabled {
		// The metric the disabled-endpoints alarm watches.
		metrics.EmitTo(ctx, d.log(), d.Stage, slog.LevelWarn, "webhook endpoint disabled", map[string]int{"WebhookEndpointsDisabled": 1},
			"endpoint_id", e.ID, "organization_id", job.OrgID)
	}
	if job.Manual != "" {
		return nil // a manual retry is one attempt: the automatic series goes on by itself
	}
	return d.scheduleNext(ctx, c, job, now)
}

// valid reports whether a job names everything a delivery needs.
func (j Job) valid() bool {
	return j.OrgID != "" && j.EventID != "" && j.Sequence > 0 && j.EndpointID != "" && j.Attempt >= 1
}

// drop gives up on a job that names something that does not exist: a
// WARN (the job's names, never anything it carries) and the
// WebhookJobsDropped metric; nothing is signed or sent.
func (d *Deliverer) drop(ctx context.Context, job Job, why string) {
	metrics.EmitTo(ctx, d.log(), d.Stage, slog.LevelWarn, "webhook job dropped", map[string]int{"WebhookJobsDropped": 1}, "why", why,
		"organization_id", job.OrgID, "event_id", job.EventID, "endpoint_id", job.EndpointID, "attempt", job.Attempt)
}

// event reads the event a job names, as stored: by its key in the
// organisation's feed (the sequence), and only if it is the event the job
// names (its id); ErrNotFound otherwise.
func (s *Store) event(ctx context.Context, job Job) (outbox.Message, error) {
	ev, err := store.ReadInto[outbox.Event](ctx, s.db, store.OrgPK(job.OrgID), outbox.SeqSK(job.Sequence), "dispatch_attempts", "parked_reason", "parked_at")
	if err != nil {
		return outbox.Message{}, err
	}
	if ev.ID != job.EventID || ev.OrgID != job.OrgID {
		return outbox.Message{}, store.ErrNotFound
	}
	return ev.Message(), nil
}

// replayed counts a replayed event whose first attempt will never be made
// (its endpoint off, gone or unsubscribed, its event gone) towards its
// replay's end, as a recorded first attempt counts (the URL is free for
// another replay when all have).
func (d *Deliverer) replayed(ctx context.Context, job Job) error {
	if job.Replay == "" || job.Attempt != 1 {
		return nil
	}
	return d.Store.replayEnded(ctx, job, d.now())
}

// errAttemptInFlight sends a message back to its queue: its attempt is
// being sent by another receive of the same message.
var errAttemptInFlight = errors.New("webhook: this attempt is being sent by another worker")

// scheduleNext queues the attempt after job's, after its pause, unless job
// was the last; and notes that it did.
func (d *Deliverer) scheduleNext(ctx context.Context, c *claim, job Job, now time.Time) error {
	if job.Attempt > len(d.schedule()) {
		return nil
	}
	pause := d.schedule()[job.Attempt-1]
	job.Attempt++
	job.NotBefore = 0
	if pause > queue.MaxDelay {
		job.NotBefore = now.Add(pause).Unix()
	}
	if err := d.enqueue(ctx, job, pause); err != nil {
		return err
	}
	return d.Store.markQueued(ctx, c)
}

// wait sends job back to the queue to come again after wait (hopping, as
// a long retry pause does, past the queue's longest delay).
func (d *Deliverer) wait(ctx context.Context, job Job, wait time.Duration, now time.Time) error {
	job.NotBefore = 0
	if wait > queue.MaxDelay {
		job.NotBefore = now.Add(wait).Unix()
	}
	return d.enqueue(ctx, job, wait)
}

func (d *Deliverer) enqueue(ctx context.Context, job Job, wait time.Duration) error {
	body, err := json.Marshal(job)
	if err != nil {
		return err
	}
	return d.Queue.Send(ctx, job.group(), body, min(wait, queue.MaxDelay))
}

// post sends the signed envelope of ev and reads at most maxResponse of the answer.
func (d *Deliverer) post(ctx context.Context, e *Endpoint, ev outbox.Message, body []byte, job Job) (int, time.Duration, error) {
	// The receiver's latency (duration_ms, the budget's spacing of turns)
	// is real time taken, whatever the deliverer's clock says.
	wall := clock.Real{}
	start := wall.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Service-Webhook/1.0")
	now := d.now()
	secrets := e.SigningSecrets(now)
	req.Header.Set(signature.Header, signature.SignAll(secrets, now, body))
	req.Header.Set("Service-Event-Id", ev.ID)
	req.Header.Set("Service-Event-Type", string(ev.Type))
	req.Header.Set("Service-Delivery-Attempt", strconv.Itoa(job.Attempt))
	if ev.Sequence != 0 {
		req.Header.Set("Service-Event-Sequence", strconv.FormatInt(ev.Sequence, 10))
	}
	if job.Replay != "" {
		req.Header.Set("Service-Replay-Id", job.Replay)
	}
	// Standard Webhooks' headers, for its libraries: the same instant and
	// secrets; webhook-id is the event's id, the same on every delivery of
	// it (retries and replays), for receivers to deduplicate on.
	req.Header.Set(signature.HeaderWebhookID, ev.ID)
	req.Header.Set(signature.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(signature.HeaderWebhookSignature, signature.StandardSign(secrets, ev.ID, now, body))
	resp, err := d.Client.Do(req)
	if err != nil {
		return 0, clock.Since(wall, start), err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	resp.Body.Close()
	return resp.StatusCode, clock.Since(wall, start), nil
}

// attempt posts ev, the event job names, to e and returns the attempt,
// for the delivery log; recording and counting it are the caller's.
func (d *Deliverer) attempt(ctx context.Context, e *Endpoint, ev outbox.Message, job Job, now time.Time) (Attempt, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return Attempt{}, err
	}
	status, took, derr := d.post(ctx, e, ev, body, job)
	return d.newAttempt(e, ev, job, now, status, derr, took, body), nil
}

// newAttempt is the delivery-log entry of one attempt: status and err are
// the receiver's answer (or the failure to get one).
func (d *Deliverer) newAttempt(e *Endpoint, ev outbox.Message, job Job, now time.Time, status int, derr error, took time.Duration, body []byte) Attempt {
	if body == nil {
		body, _ = json.Marshal(ev)
	}
	ok := derr == nil && status >= 200 && status < 300
	derr = d.explain(derr)
	a := Attempt{EndpointID: e.ID, EventID: ev.ID, EventType: ev.Type, Attempt: job.Attempt, Succeeded: ok,
		StatusCode: status, DurationMS: took.Milliseconds(), AttemptedAt: store.FormatTime(now), Envelope: string(body),
		TTL: now.Add(30 * 24 * time.Hour).Unix(), Manual: job.Manual != "", ReplayID: job.Replay}
	if derr != nil {
		a.Error = httpapi.Clip(derr.Error(), MaxAttemptError)
	} else if !ok {
		a.Error = fmt.Sprintf("receiver answered %d", status)
	}
	a.ID = timeOrderedID(now)
	a.Keys = store.Keys{PK: DeliveriesPK(ev.OrgID, e.ID), SK: attemptSK(a.ID), Kind: "webhook_attempt"}
	if job.Replay != "" && job.Attempt == 1 && job.Manual == "" {
		// A replay's first attempt of this event: its progress.
		a.GSI6PK, a.GSI6SK = replayedKeys(job.Replay, ev.ID)
	}
	return a
}

// explain turns a delivery error into what the integrator can act on: a
// certificate the service does not trust says what to do about it (on
// AWS: a public certificate; locally: WEBHOOK_CA_FILE, or http:// on
// loopback).
func (d *Deliverer) explain(err error) error {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unknown) && d.Store.AllowPrivate:
		return fmt.Errorf("the receiver's TLS certificate is signed by an authority this server does not trust: for a self-signed local receiver, "+
			"start the server with WEBHOOK_CA_FILE naming its CA's PEM file, or register an http:// URL on loopback (%v)", err)
	case errors.As(err, &unknown):
		return fmt.Errorf("the receiver's TLS certificate is signed by an authority that is not publicly trusted: use a certificate from a public CA (%v)", err)
	case errors.As(err, &invalid), errors.As(err, &host):
		return fmt.Errorf("the receiver's TLS certificate is not valid for it (expired, or for another name): %v", err)
	}
	return withoutAddresses(err)
}

// withoutAddresses is a failure to reach a receiver as the delivery log
// shows it to the endpoint's owner: what went wrong, never an address (a
// name that resolves inside our network, our resolver's): the connect
// guard's refusal, a name that did not resolve, and a network error by
// its operation and cause. Other errors (a timeout, a body cut short)
// name no address and are kept.
func withoutAddresses(err error) error {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, netguard.ErrBlocked):
		return errors.New("the receiver's host resolves to an address that is not on the public internet (loopback, private, link-local or " +
			"another special-purpose range); deliveries go only to public addresses")
	case errors.As(err, &dns):
		return fmt.Errorf("the receiver's host %s did not resolve (%s)", dns.Name, dns.Err)
	case errors.As(err, &op) && op.Err != nil:
		if errors.Is(err, context.DeadlineExceeded) || op.Timeout() {
			return fmt.Errorf("%s %s: timed out", op.Op, op.Net)
		}
		var sys *os.SyscallError
		if errors.As(op.Err, &sys) {
			return fmt.Errorf("%s %s: %s: %v", op.Op, op.Net, sys.Syscall, sys.Err)
		}
		return fmt.Errorf("%s %s failed", op.Op, op.Net)
	}
	return err
}

// BookkeepingTime bounds the store writes that follow a delivery attempt;
// worker invocations keep this much (and more) of their time for them.
const BookkeepingTime = 2 * time.Second

// bookkeeping is ctx without its cancellation, bounded by BookkeepingTime.
func bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), BookkeepingTime)
}

// TestTimeout bounds a test delivery, inside the API function's own time
// limit (10 s on AWS).
const TestTimeout = 8 * time.Second

// SendTest sends one signed webhook.test event to an endpoint right away,
// through the same path as real deliveries (signature, headers, envelope,
// limits, SSRF guard), and answers the attempt, which the delivery log
// keeps. It works on an inactive endpoint, so a receiver can be fixed
// before turning it back on, and never counts towards the 20 failures.
func (d *Deliverer) SendTest(ctx context.Context, org, endpointID string) (Attempt, error) {
	e, err := d.Store.Get(ctx, org, endpointID)
	if errors.Is(err, store.ErrNotFound) {
		return Attempt{}, apperr.Missing("webhook endpoint")
	}
	if err != nil {
		return Attempt{}, err
	}
	now := d.now()
	data, _ := json.Marshal(map[string]any{"test": map[string]string{"endpoint_id": e.ID,
		"message": "A test event, sent on request through POST /webhooks/{id}/test. Verify its signature as for any event."}})
	ev := outbox.Message{ID: store.NewID(), OrgID: org, Type: outbox.WebhookTest, CreatedAt: store.FormatTime(now), Data: data}
	ctx, cancel := context.WithTimeout(ctx, TestTimeout)
	defer cancel()
	a, err := d.attempt(ctx, &e, ev, Job{OrgID: org, EventID: ev.ID, EndpointID: e.ID, Attempt: 1}, now)
	if err != nil {
		return Attempt{}, err
	}
	item, err := store.Marshal(a)
	if err != nil {
		return Attempt{}, err
	}
	// The attempt is logged even when the receiver used up the caller's time.
	rctx, rcancel := bookkeeping(ctx)
	defer rcancel()
	return a, d.Store.db.PutNew(rctx, item)
}

// Retry resends the event of one failed attempt to its endpoint: one
// attempt, now, outside the automatic series (which goes on by itself, and
// stops once any attempt of the event succeeds).
func (d *Deliverer) Retry(ctx context.Context, org, endpointID, deliveryID string) (map[string]any, error) {
	e, err := d.Store.Get(ctx, org, endpointID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apperr.Missing("webhook endpoint")
	}
	if err != nil {
		return nil, err
	}
	var a Attempt
	deliveryID, ok := httpapi.PathID(deliveryID)
	if !ok {
		return nil, apperr.Missing("delivery")
	}
	if err := d.Store.db.Get(ctx, DeliveriesPK(org, e.ID), attemptSK(deliveryID), &a); errors.Is(err, store.ErrNotFound) {
		return nil, apperr.Missing("delivery")
	} else if err != nil {
		return nil, err
	}
	switch {
	case a.EventType == outbox.WebhookTest:
		return nil, &apperr.Error{Kind: apperr.Conflict, Message: "test deliveries are not retried: send a new one with POST /webhooks/{id}/test"}
	case a.Succeeded:
		return nil, &apperr.Error{Kind: apperr.Conflict, Message: "that delivery succeeded; there is nothing to retry"}
	case !e.IsActive:
		return nil, &apperr.Error{Kind: apperr.Conflict, Message: "the endpoint is disabled; PATCH it with is_active true first"}
	}
	done, before, err := d.Store.deliveries(ctx, org, e.ID, a.EventID)
	switch {
	case err != nil:
		return nil, err
	case done:
		return nil, &apperr.Error{Kind: apperr.Conflict, Message: "that event has been delivered to this endpoint since (a later attempt succeeded); there is nothing to retry"}
	}
	// The job names the event by its place in the feed (the attempt's
	// envelope holds its sequence); the worker reads it as stored.
	var logged outbox.Message
	if err := json.Unmarshal([]byte(a.Envelope), &logged); err != nil || logged.Sequence == 0 {
		return nil, &apperr.Error{Kind: apperr.Conflict, Message: "that delivery's event is not in the event feed any more; there is nothing to resend"}
	}
	// Numbered after every attempt of the event before it (at least
	// after the one it resends), so a receiver's log reads in order.
	n := max(before, a.Attempt) + 1
	if err := d.enqueue(ctx, Job{OrgID: org, EventID: a.EventID, Sequence: logged.Sequence, EndpointID: e.ID, Attempt: n, Manual: a.ID}, 0); err != nil {
		return nil, err
	}
	return map[string]any{"event_id": a.EventID, "endpoint_id": e.ID, "status": "queued", "attempt": n}, nil
}

// timeOrderedID is store.TimeID (a UUIDv7 with microsecond order): its
// text sorts by time, so attempts list newest first by their sort key alone.
var timeOrderedID = store.TimeID
