package webhook

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// Every delivery of one event to one endpoint shares one item,
// DLVEV#<endpoint>#<event>, which makes the worker idempotent: each attempt
// is claimed in it with a conditional write before the POST, so a second
// receive of the same job (SQS delivers at least once, and a fan-out
// retried halfway sends some jobs twice) sends nothing; its outcome is
// recorded in the same item, in one transaction with the delivery log and
// the endpoint's failure count, so nothing is counted twice; and a success
// marks the event delivered, which cancels every attempt still scheduled,
// manual or automatic.
//
// An attempt's attributes are suffixed by its slot: a<n> for automatic
// attempt n, m<delivery id> for a manual retry. s_ is its state (sending,
// done), o_ the claim's owner, l_ the claim's lease (unix seconds), r_ the
// queue message that carried it, ok_ its outcome, q_ whether the next
// attempt was queued.

// ClaimLease, the default of Deliverer.ClaimLease (WEBHOOK_CLAIM_LEASE),
// bounds how long an attempt may take from claim to record
// (connect and answer are bounded at 15 s, a worker invocation at 30 s).
// A claim older than this belongs to a worker that stopped: the next
// receive of the job takes it over and sends the same attempt again (its
// outcome is unknown, so it neither counts as a failure nor uses up an
// attempt).
const ClaimLease = 60 * time.Second

// EventRetention is how long the per-event item is kept: longer than the
// whole retry schedule (about 41 minutes) and any redelivery of its jobs.
const EventRetention = 3 * 24 * time.Hour

// DeliveriesPK is the partition of one endpoint's deliveries (the
// per-event items and the delivery log): apart from the organisation's own
// partition, so that deliveries to busy endpoints do not share its write
// ceiling with the organisation's creates.
func DeliveriesPK(org, endpoint string) string { return store.Collection(org, "WH", endpoint) }

func eventSK(event string) string { return "DLVEV#" + event }

// attemptSK is the sort key of a delivery-log entry.
func attemptSK(id string) string { return "DLV#" + id }

// slot names the attempt a job carries.
func (j Job) slot() string {
	switch {
	case j.Manual != "":
		return "m" + strings.ReplaceAll(j.Manual, "-", "")
	case j.Replay != "":
		return "r" + strings.ReplaceAll(j.Replay, "-", "") + "a" + strconv.Itoa(j.Attempt)
	}
	return "a" + strconv.Itoa(j.Attempt)
}

// deliveredAttr is the attribute a success sets, whose presence stops the
// job's series: delivered_at for the event's own series and manual
// retries, rd_<replay> for a replay's (which resends delivered events).
func (j Job) deliveredAttr() string {
	if j.Replay != "" {
		return "rd_" + strings.ReplaceAll(j.Replay, "-", "")
	}
	return "delivered_at"
}

// claimOutcome is what claiming an attempt found.
type claimOutcome int

const (
	claimed        claimOutcome = iota // the attempt is ours to send
	takenOver                          // ours, from a worker that stopped mid-attempt: its outcome is unknown, send it again
	inFlight                           // another worker is sending it now
	inFlightHere                       // this very message is being handled by another worker
	alreadyDone                        // it was sent and recorded
	eventDelivered                     // an attempt of this event succeeded: nothing more is sent
)

// claimed is a held attempt.
type claim struct {
	org, endpoint, event, slot, owner string
	delivered                         string // the attribute a success sets (Job.deliveredAttr)
	outcome                           claimOutcome
	succeeded, nextQueued             bool // of an attempt alreadyDone
}

func attr(prefix, slot string) string { return prefix + slot }

// claimAttempt claims job's attempt for this worker (owner), carried by
// queue message msgID, for lease.
func (s *Store) claimAttempt(ctx context.Context, job Job, msgID, owner string, now time.Time, lease time.Duration) (*claim, error) {
	c := &claim{org: job.OrgID, endpoint: job.EndpointID, event: job.EventID, slot: job.slot(), owner: owner, delivered: job.deliveredAttr()}
	spk, ssk := store.GSIKeyAttrs(outbox.Index)
	stateAttr, msgAttr := attr("s_", c.slot), attr("r_", c.slot)
	state, leaseUntil := expression.Name(stateAttr), expression.Name(attr("l_", c.slot))
	// The claim is in the sweep index until its record (SweepClaims):
	// what a sweep needs to queue its job again rides along.
	upd := expression.Set(state, expression.Value("sending")).
		Set(expression.Name(attr("o_", c.slot)), expression.Value(owner)).
		Set(leaseUntil, expression.Value(now.Add(lease).Unix())).
		Set(expression.Name(msgAttr), expression.Value(msgID)).
		Set(expression.Name("kind"), expression.Value("webhook_event_deliveries")).
		Set(expression.Name(store.AttrTTL), expression.Value(now.Add(EventRetention).Unix())).
		Set(expression.Name("endpoint_id"), expression.Value(c.endpoint)).
		Set(expression.Name("event_id"), expression.Value(c.event)).
		Set(expression.Name("org_id"), expression.Value(c.org)).
		Set(expression.Name("seq"), expression.Value(job.Sequence)).
		Set(expression.Name(spk), expression.Value(sendingPK(s.db, c.event))).
		Set(expression.Name(ssk), expression.Value(sendingSK(now.Add(lease).Unix(), c.slot, job.Attempt)))
	// Not delivered, and this attempt unclaimed or its lease run out.
	cond := expression.AttributeNotExists(expression.Name(c.delivered)).And(expression.Or(
		expression.AttributeNotExists(state),
		state.Equal(expression.Value("sending")).And(leaseUntil.LessThan(expression.Value(now.Unix())))))
	in, err := updateInput(s.db, store.Key(DeliveriesPK(c.org, c.endpoint), eventSK(c.event)), upd, cond)
	if err != nil {
		return nil, err
	}
	in.ReturnValues = ddbtypes.ReturnValueAllOld
	in.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
	out, err := s.db.Client.UpdateItem(ctx, in)
	if err == nil {
		if v, _ := out.Attributes[stateAttr].(*ddbtypes.AttributeValueMemberS); v != nil && v.Value == "sending" {
			c.outcome = takenOver
		}
		return c, nil
	}
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, fmt.Errorf("claim delivery attempt: %w", err)
	}
	item := ccf.Item
	if len(item) == 0 { // a store that does not return the old item: read it
		o, err := s.db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.db.Table), ConsistentRead: aws.Bool(true),
			Key: store.Key(DeliveriesPK(c.org, c.endpoint), eventSK(c.event))})
		if err != nil {
			return nil, fmt.Errorf("read delivery attempt: %w", err)
		}
		item = o.Item
	}
	sv := func(name string) string {
		v, _ := item[name].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	bv := func(name string) bool {
		v, _ := item[name].(*ddbtypes.AttributeValueMemberBOOL)
		return v != nil && v.Value
	}
	switch {
	case sv(c.delivered) != "":
		c.outcome = eventDelivered
	case sv(stateAttr) == "sending" && sv(msgAttr) == msgID:
		c.outcome = inFlightHere
	case sv(stateAttr) == "sending":
		c.outcome = inFlight
	default:
		c.outcome, c.succeeded, c.nextQueued = alreadyDone, bv(attr("ok_", c.slot)), bv(attr("q_", c.slot))
	}
	return c, nil
}

// errLostClaim: the attempt's lease ran out and another worker took it over.
var errLostClaim = errors.New("webhook: the attempt's claim was taken over")

// record stores the claimed attempt's outcome in one transaction: the
// attempt is done (only while this worker still holds its claim), its
// entry in the delivery log, the endpoint's count of failed deliveries
// and, on success, the event as delivered. A failed delivery is an event
// whose attempts are exhausted (exhausted: this failed attempt was its
// series' last): it adds one to the count; a success resets it; a failed
// attempt that is not the last leaves it alone (a receiver down for
// minutes is not a failed delivery until the schedule has run out). The
// count is changed only if the endpoint still exists. A success when the
// worker read a count of 0 (consistently, before sending) leaves the count
// alone: it is as if the success came before any failure that ran beside
// it, and the endpoint's item is written only when something changes.
func (s *Store) record(ctx context.Context, c *claim, a Attempt, now time.Time, failuresRead int, exhausted bool) error {
	// The attempt is done only while this worker still holds its claim.
	state, owner := expression.Name(attr("s_", c.slot)), expression.Name(attr("o_", c.slot))
	held := owner.Equal(expression.Value(c.owner)).And(state.Equal(expression.Value("sending")))
	done := expression.Set(state, expression.Value("done")).Set(expression.Name(attr("ok_", c.slot)), expression.Value(a.Succeeded))
	if a.Succeeded {
		at := expression.Value(store.FormatTime(now))
		done = done.Set(expression.Name("delivered_at"), at)
		if c.delivered != "delivered_at" {
			done = done.Set(expression.Name(c.delivered), at)
		}
	}
	// Recorded, the attempt leaves the sweep index.
	spk, ssk := store.GSIKeyAttrs(outbox.Index)
	done = done.Remove(expression.Name(spk)).Remove(expression.Name(ssk))
	attempt, err := txUpdate(s.db, store.Key(DeliveriesPK(c.org, c.endpoint), eventSK(c.event)), done, held)
	if err != nil {
		return err
	}
	// The endpoint's count, changed only if the endpoint still exists: a
	// success resets it, an exhausted failure adds one.
	failures := expression.Name("consecutive_failures")
	change := expression.Add(failures, expression.Value(1))
	if a.Succeeded {
		change = expression.Set(failures, expression.Value(0))
	}
	counted, err := txUpdate(s.db, store.Key(store.OrgPK(c.org), endpointSK(c.endpoint)), change, store.ItemExists())
	if err != nil {
		return err
	}
	for _, count := range []bool{(a.Succeeded && failuresRead > 0) || (!a.Succeeded && exhausted), false} {
		tx := s.db.Tx()
		mine := tx.Add(attempt)
		tx.PutNew(a)
		counter := -1
		if count {
			counter = tx.Add(counted)
		}
		err = tx.Commit(ctx)
		var failed *store.TxFailed
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &failed):
			return err
		case failed.Has(mine):
			return errLostClaim
		case !failed.Has(counter):
			return err
		}
		// The endpoint was deleted meanwhile: record the attempt uncounted.
	}
	return err
}

// markQueued notes that the attempt after c was queued, so a second
// receive of c's job does not queue it again (a duplicate would send
// nothing anyway: the next attempt is claimed too).
func (s *Store) markQueued(ctx context.Context, c *claim) error {
	in, err := updateInput(s.db, store.Key(DeliveriesPK(c.org, c.endpoint), eventSK(c.event)),
		expression.Set(expression.Name(attr("q_", c.slot)), expression.Value(true)), store.ItemExists())
	if err != nil {
		return err
	}
	_, err = s.db.Client.UpdateItem(ctx, in)
	if store.IsConditionFailed(err) {
		return nil
	}
	return err
}

// Delivered reports whether an attempt of event to endpoint succeeded.
func (s *Store) Delivered(ctx context.Context, org, endpoint, event string) (bool, error) {
	delivered, _, err := s.deliveries(ctx, org, endpoint, event)
	return delivered, err
}

// deliveries reads what the event's item says of its deliveries to the
// endpoint: whether it was delivered, and how many attempts were claimed
// (one s_<slot> each: automatic, manual and replayed alike), so that a
// manual retry is numbered after them.
func (s *Store) deliveries(ctx context.Context, org, endpoint, event string) (delivered bool, attempts int, err error) {
	var item map[string]any
	err = s.db.Get(ctx, DeliveriesPK(org, endpoint), eventSK(event), &item)
	if errors.Is(err, store.ErrNotFound) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	for k := range item {
		if strings.HasPrefix(k, "s_") {
			attempts++
		}
	}
	at, _ := item["delivered_at"].(string)
	return at != "", attempts, nil
}

// disableIfDue turns an endpoint off when its count of consecutive
// failed deliveries has reached DisableAfter, exactly once (by condition), and
// raises webhook_endpoint.disabled in the same transaction (the feed has
// it; the organisation's other endpoints subscribed to it get it); it
// reports whether this call did.
func (s *Store) disableIfDue(ctx context.Context, org, id string, now time.Time) (bool, error) {
	e, err := store.ReadInto[struct {
		URL                 string        `dynamodbav:"url"`
		EventTypes          []outbox.Type `dynamodbav:"event_types"`
		ConsecutiveFailures int           `dynamodbav:"consecutive_failures"`
		IsActive            bool          `dynamodbav:"is_active"`
	}](ctx, s.db, store.OrgPK(org), endpointSK(id))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil || !e.IsActive || e.ConsecutiveFailures < DisableAfter {
		return false, err
	}
	at := store.FormatTime(now)
	ev, err := outbox.New(org, outbox.WebhookEndpointDisabled, "webhook_endpoint", DisabledEndpoint{
		ID: id, URL: e.URL, EventTypes: e.EventTypes, ConsecutiveFailures: e.ConsecutiveFailures, DisabledAt: at,
	}, now)
	if err != nil {
		return false, err
	}
	// Workers failing at once all see the count reach the limit: one
	// turns the endpoint off, the others find it off (or, held by that
	// transaction, try again).
	off, err := txUpdate(s.db, store.Key(store.OrgPK(org), endpointSK(id)),
		expression.Set(expression.Name("is_active"), expression.Value(false)).Set(expression.Name("disabled_at"), expression.Value(at)),
		expression.Name("is_active").Equal(expression.Value(true)).
			And(expression.Name("consecutive_failures").GreaterThanEqual(expression.Value(DisableAfter))))
	if err != nil {
		return false, err
	}
	for attempt := 1; ; attempt++ {
		tx := s.db.Tx()
		tx.Add(off)
		outbox.Add(tx, ev)
		err = tx.Commit(ctx)
		var failed *store.TxFailed
		switch {
		case errors.Is(err, store.ErrTxConflict) && attempt < 3:
			if err := clock.Sleep(ctx, time.Duration(attempt)*20*time.Millisecond); err != nil {
				return false, err
			}
			continue
		case errors.As(err, &failed) && !errors.Is(err, store.ErrTxConflict):
			return false, nil // already off, or a success reset the count meanwhile
		}
		return err == nil, err
	}
}

// DisabledEndpoint is the data of webhook_endpoint.disabled: the endpoint
// as it was turned off (never its secret).
type DisabledEndpoint struct {
	ID                  string        `json:"id"`
	URL                 string        `json:"url"`
	EventTypes          []outbox.Type `json:"event_types"`
	ConsecutiveFailures int           `json:"consecutive_failures"`
	DisabledAt          string        `json:"disabled_at"`
}
