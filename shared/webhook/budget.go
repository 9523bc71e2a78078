package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/metrics"
	"github.com/practice-api/practice-api/shared/store"
)

// An endpoint's budget: at most EndpointConcurrency deliveries to it in
// flight at once. Replayed ones take a slot only while fewer than half are
// in use and no live delivery waits for one, so a replay never holds the
// slots its endpoint's live events need. A receiver that
// is slow but answers is paced by its own slots and holds no more workers
// than that; the jobs over its budget wait in the queue, without using an
// attempt.
//
// The budget is one item per endpoint in its deliveries partition,
// INFLIGHT: n (slots held), r (of which by replays), one attribute per
// holder (f_<holder> for a live delivery, g_<holder> for a replayed one)
// whose value is the unix second its hold lapses (ClaimLease on: a worker
// that stops frees its slot then), d_ms (how long the last delivery took)
// and next_ms / rnext_ms (the time the next live / replayed job over the
// budget is due: each one waiting reserves the slot after the last one
// reserved, spaced by d_ms ÷ slots, so a backlog waits its turn instead
// of spinning through the queue). Taking a slot and giving it back are
// one conditional write each; a job over the budget costs the failed take
// and its reservation.

const budgetSK = "INFLIGHT"

// budget is a held slot.
type budget struct {
	org, endpoint string
	attr          string // f_<holder> or g_<holder>
	replay        bool
}

// slots is how many deliveries one endpoint may have in flight, and how
// many of them replays may hold.
func (d *Deliverer) slots(replay bool) int {
	n := d.EndpointConcurrency
	if n <= 0 {
		n = DefaultEndpointConcurrency
	}
	if replay {
		return max(1, n/2)
	}
	return n
}

// errOverBudget: the endpoint has no free slot for this job; wait is when
// its reserved turn comes.
type errOverBudget struct{ wait time.Duration }

func (e *errOverBudget) Error() string {
	return fmt.Sprintf("webhook: the endpoint's deliveries in flight are at its budget; the job waits %s", e.wait)
}

// takeSlot holds one of the endpoint's delivery slots for job, or says
// how long the job is to wait (*errOverBudget).
func (d *Deliverer) takeSlot(ctx context.Context, job Job, holder string, now time.Time) (*budget, error) {
	b := &budget{org: job.OrgID, endpoint: job.EndpointID, attr: "f_" + holder, replay: job.Replay != ""}
	if b.replay {
		b.attr = "g_" + holder
	}
	s := d.Store
	key := store.Key(DeliveriesPK(b.org, b.endpoint), budgetSK)
	inUse := expression.Name("n")
	below := func(slots int) expression.ConditionBuilder {
		return expression.Or(expression.AttributeNotExists(inUse), inUse.LessThan(expression.Value(slots)))
	}
	for try := 0; ; try++ {
		upd := expression.Set(expression.Name(b.attr), expression.Value(now.Add(d.claimLease()).Unix())).
			Set(expression.Name("kind"), expression.Value("webhook_budget")).
			Set(expression.Name(store.AttrTTL), expression.Value(now.Add(EventRetention).Unix())).
			Add(inUse, expression.Value(1))
		cond := below(d.slots(false))
		if b.replay {
			// A replayed job takes a slot only while fewer than half of the
			// endpoint's slots are in use (live deliveries included) and no
			// live job of the endpoint waits for one (a live turn booked
			// ahead): a replay uses what its endpoint's live deliveries
			// leave, and always leaves them half.
			liveTurn := expression.Name("next_ms")
			upd = upd.Add(expression.Name("r"), expression.Value(1))
			cond = cond.And(below(d.slots(true)),
				expression.Or(expression.AttributeNotExists(liveTurn), liveTurn.LessThan(expression.Value(now.UnixMilli()))))
		}
		in, err := updateInput(s.db, key, upd, cond)
		if err != nil {
			return nil, fmt.Errorf("take a delivery slot: %w", err)
		}
		in.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
		_, err = s.db.Client.UpdateItem(ctx, in)
		if err == nil {
			return b, nil
		}
		var ccf *ddbtypes.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return nil, fmt.Errorf("take a delivery slot: %w", err)
		}
		// Full: free the holds of workers that stopped, and try again;
		// otherwise reserve this job's turn.
		if try < 2 && d.freeLapsed(ctx, key, ccf.Item, now) {
			continue
		}
		wait, err := d.reserve(ctx, key, ccf.Item, b.replay, now)
		if err != nil {
			return nil, err
		}
		return nil, &errOverBudget{wait: wait}
	}
}

// freeLapsed gives back the slots whose holds have lapsed (their workers
// stopped), each by condition (its hold unchanged); it reports whether it
// freed any.
func (d *Deliverer) freeLapsed(ctx context.Context, key map[string]ddbtypes.AttributeValue, item map[string]ddbtypes.AttributeValue, now time.Time) bool {
	freed := false
	for name, v := range item {
		if !strings.HasPrefix(name, "f_") && !strings.HasPrefix(name, "g_") {
			continue
		}
		n, _ := v.(*ddbtypes.AttributeValueMemberN)
		if n == nil {
			continue
		}
		lease, _ := strconv.ParseInt(n.Value, 10, 64)
		if lease >= now.Unix() {
			continue
		}
		if d.giveBack(ctx, key, name, n.Value) == nil {
			freed = true
		}
	}
	return freed
}

// giveBack frees the slot held under attr (only if its hold is old, when
// old is set); it reports ErrNotFound when there was no such hold.
func (d *Deliverer) giveBack(ctx context.Context, key map[string]ddbtypes.AttributeValue, attr, old string) error {
	hold := expression.Name(attr)
	cond := expression.AttributeExists(hold)
	if old != "" {
		cond = hold.Equal(expression.Value(attributevalue.Number(old))) // the number as read
	}
	in, err := updateInput(d.Store.db, key, freeSlot(attr, strings.HasPrefix(attr, "g_")), cond)
	if err != nil {
		return err
	}
	_, err = d.Store.db.Client.UpdateItem(ctx, in)
	if store.IsConditionFailed(err) {
		return store.ErrNotFound
	}
	return err
}

// release gives a held slot back, noting how long the delivery took (the
// spacing of the turns of jobs over the budget).
func (d *Deliverer) release(ctx context.Context, b *budget, took time.Duration) {
	if b == nil {
		return
	}
	key := store.Key(DeliveriesPK(b.org, b.endpoint), budgetSK)
	upd := freeSlot(b.attr, b.replay)
	if took > 0 { // a delivery was made: its time spaces the turns
		upd = upd.Set(expression.Name("d_ms"), expression.Value(max(took.Milliseconds(), 1)))
	}
	in, err := updateInput(d.Store.db, key, upd, expression.AttributeExists(expression.Name(b.attr)))
	if err == nil {
		_, err = d.Store.db.Client.UpdateItem(ctx, in)
	}
	if err != nil && !store.IsConditionFailed(err) {
		// Not given back: it lapses with its hold (the claim lease).
		d.log().WarnContext(ctx, "webhook delivery slot not given back; it lapses with its hold", "endpoint_id", b.endpoint, "err", err)
	}
}

// freeSlot gives back the slot held under attr (and a replay's, for a
// replayed job's).
func freeSlot(attr string, replay bool) expression.UpdateBuilder {
	upd := expression.Remove(expression.Name(attr)).Add(expression.Name("n"), expression.Value(-1))
	if replay {
		upd = upd.Add(expression.Name("r"), expression.Value(-1))
	}
	return upd
}

// reserve books the next turn of a job over the budget, after the last
// one booked (or now), spaced by the endpoint's last delivery time over
// its slots, and returns how long the job waits for it.
func (d *Deliverer) reserve(ctx context.Context, key map[string]ddbtypes.AttributeValue, item map[string]ddbtypes.AttributeValue, replay bool, now time.Time) (time.Duration, error) {
	attr := "next_ms"
	if replay {
		attr = "rnext_ms"
	}
	numOf := func(name string) int64 {
		v, _ := item[name].(*ddbtypes.AttributeValueMemberN)
		if v == nil {
			return 0
		}
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	for try := 0; try < 5; try++ {
		last := numOf(attr)
		took := max(numOf("d_ms"), minTurn.Milliseconds())
		turn := max(last, now.UnixMilli()) + took/int64(d.slots(replay))
		booked := expression.Name(attr)
		cond := booked.Equal(expression.Value(last)) // unchanged since read
		if _, ok := item[attr]; !ok {
			cond = expression.AttributeNotExists(booked)
		}
		in, err := updateInput(d.Store.db, key, expression.Set(booked, expression.Value(turn)), cond)
		if err != nil {
			return 0, fmt.Errorf("reserve a delivery turn: %w", err)
		}
		in.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
		_, err = d.Store.db.Client.UpdateItem(ctx, in)
		var ccf *ddbtypes.ConditionalCheckFailedException
		switch {
		case err == nil:
			return time.Duration(turn-now.UnixMilli()) * time.Millisecond, nil
		case errors.As(err, &ccf):
			item = ccf.Item // another job booked meanwhile: after it
		default:
			return 0, fmt.Errorf("reserve a delivery turn: %w", err)
		}
	}
	return minTurn, nil // busy booking: a short wait, and the next try books again
}

// minTurn is the shortest spacing of turns, and the wait of a job whose
// endpoint has no delivery time yet.
const minTurn = time.Second

// paced notes a job that waits for its endpoint's budget: the
// WebhookDeliveriesPaced metric, summed over ten seconds into one line, and
// one WARN per endpoint and worker every five minutes, naming it and how
// long its receiver took: a backlog or a slow receiver is a metric and a
// line, not one per job.
func (d *Deliverer) paced(ctx context.Context, job Job, wait time.Duration, now time.Time) {
	d.tallyMu.Lock()
	if d.warned == nil {
		d.warned = map[string]time.Time{}
	}
	d.pacedN++
	first := now.Sub(d.warned[job.EndpointID]) >= 5*time.Minute
	if first {
		d.warned[job.EndpointID] = now
		for id, at := range d.warned {
			if now.Sub(at) >= 5*time.Minute {
				delete(d.warned, id)
			}
		}
	}
	n, flush := d.pacedN, now.Sub(d.pacedAt) >= 10*time.Second
	if flush {
		d.pacedN, d.pacedAt = 0, now
	}
	d.tallyMu.Unlock()
	if first {
		d.log().WarnContext(ctx, "webhook endpoint at its delivery budget: jobs wait their turn", "organization_id", job.OrgID, "endpoint_id", job.EndpointID,
			"slots", d.slots(job.Replay != ""), "replay", job.Replay != "", "wait", wait.Round(time.Millisecond).String())
	}
	if flush {
		metrics.EmitTo(ctx, d.log(), d.Stage, slog.LevelInfo, "webhook deliveries paced", map[string]int{"WebhookDeliveriesPaced": n})
	}
}

// replayPace is the spacing of a replay's jobs to endpoint, so that they
// reach it about as fast as its replay slots take them (its last delivery
// time over them; a second a delivery when it has none yet: a slower
// receiver's jobs wait their turn once, a faster one's replay takes a
// little longer than it could), instead of all at once, each to wait its
// turn again.
func (d *Deliverer) replayPace(ctx context.Context, org, endpoint string) time.Duration {
	out, err := d.Store.db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.Store.db.Table),
		Key:                  store.Key(DeliveriesPK(org, endpoint), budgetSK),
		ProjectionExpression: paceRead.Projection(), ExpressionAttributeNames: paceRead.Names()})
	took := time.Second
	if err == nil {
		if v, ok := out.Item["d_ms"].(*ddbtypes.AttributeValueMemberN); ok {
			if ms, err := strconv.ParseInt(v.Value, 10, 64); err == nil && ms > 0 {
				took = time.Duration(ms) * time.Millisecond
			}
		}
	}
	return took / time.Duration(d.slots(true))
}

// paceRead reads an endpoint's last delivery time (replayPace), built once.
var paceRead = store.MustBuild(expression.NewBuilder().WithProjection(expression.NamesList(expression.Name("d_ms"))))
