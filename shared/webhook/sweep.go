package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// A worker that stops between an attempt's claim and its record (killed,
// out of memory, past its time) leaves the attempt "sending". Its job
// message normally comes back from the queue after the visibility
// timeout, past the claim's lease, and that receive takes the claim over.
// When the job is gone instead (it went to the dead-letter queue after its
// receives, or its queue lost it), nothing else would ever resolve the
// attempt: SweepClaims does.
//
// While an attempt is claimed, its item is in the sweep index (the
// outbox's, outbox.Index, keys only) under DLV#SENDING#<shard>, sorted by
// the end of its lease: <12 digits of unix seconds>#<slot>#<attempt>. The
// record takes it out. A claim costs its index entry (1 WRU) and the
// record its removal (2 WRU, in the record's transaction).

// sendingPrefix starts the sweep index partitions of claimed attempts.
const sendingPrefix = "DLV#SENDING#"

// sendingPK is the partition of an event's claims on db: one of its
// outbox shards (outbox.ShardsOf), by event id, as the outbox spreads its
// pending events.
func sendingPK(db *store.DB, event string) string {
	return sendingPrefix + strconv.Itoa(outbox.ShardOf(event, outbox.ShardsOf(db)))
}

// sendingSK orders a shard's claims by the end of their lease and names
// the attempt (its slot and number) for the sweep.
func sendingSK(lease int64, slot string, attempt int) string {
	return fmt.Sprintf("%012d#%s#%d", lease, slot, attempt)
}

// SweepClaims queues again every attempt whose claim's lease ran out
// without a record, as its lost job would have been queued: the next
// worker takes the claim over and sends the same attempt (its outcome is
// unknown, so it counts as no failure and uses up no attempt). An attempt
// whose event was delivered meanwhile, whose endpoint is gone, off or no
// longer subscribed, or whose event has left the feed, is resolved
// instead: nothing would send it. Each claim found is pushed a lease
// further by condition before its job is queued, so sweeps at once queue
// it once, and a job lost again is found again. It returns how many jobs
// it queued; a shard or a claim that fails is skipped and reported, and
// holds back no other.
func (d *Deliverer) SweepClaims(ctx context.Context) (int, error) {
	now := d.now()
	upTo := fmt.Sprintf("%012d", now.Unix()-1) + "~" // leases that ended before now
	spk, _ := store.GSIKeyAttrs(outbox.Index)
	queued := 0
	var errs []error
	for shard := range outbox.ShardsOf(d.Store.db) {
		q := store.ListQuery{Index: outbox.Index, PK: sendingPrefix + strconv.Itoa(shard), SKTo: upTo, Limit: 100}
		for {
			page, err := d.Store.db.Query(ctx, q)
			if err != nil {
				errs = append(errs, fmt.Errorf("sweep claims, shard %d: %w", shard, err))
				break
			}
			for _, it := range page.Items {
				if pk, _ := it[spk].(*ddbtypes.AttributeValueMemberS); pk == nil || !strings.HasPrefix(pk.Value, sendingPrefix) {
					continue
				}
				sent, err := d.resend(ctx, it, now)
				if err != nil {
					errs = append(errs, err)
				}
				if sent {
					queued++
				}
			}
			if page.Next == nil {
				break
			}
			q.After = page.Next
		}
	}
	return queued, errors.Join(errs...)
}

// resend queues the job of one stale claim (an index entry: the item's
// keys and its sweep key), or resolves a claim nothing would send.
func (d *Deliverer) resend(ctx context.Context, entry map[string]ddbtypes.AttributeValue, now time.Time) (bool, error) {
	s := d.Store
	str := func(m map[string]ddbtypes.AttributeValue, k string) string {
		v, _ := m[k].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	num := func(m map[string]ddbtypes.AttributeValue, k string) int64 {
		v, _ := m[k].(*ddbtypes.AttributeValueMemberN)
		if v == nil {
			return 0
		}
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	_, sskAttr := store.GSIKeyAttrs(outbox.Index)
	pk, sk, ssk := str(entry, store.AttrPK), str(entry, store.AttrSK), str(entry, sskAttr)
	parts := strings.Split(ssk, "#")
	if len(parts) != 3 {
		return false, nil // not a claim's key
	}
	slot := parts[1]
	attempt, _ := strconv.Atoi(parts[2])
	out, err := s.db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.db.Table), Key: store.Key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("sweep claims, read %s: %w", sk, err)
	}
	item := out.Item
	if str(item, attr("s_", slot)) != "sending" || num(item, attr("l_", slot)) >= now.Unix() || str(item, sskAttr) != ssk {
		return false, nil // recorded, or taken over, since the index was read
	}
	job := Job{EndpointID: str(item, "endpoint_id"), Attempt: attempt}
	switch {
	case strings.HasPrefix(slot, "m"):
		job.Manual = uuidOf(slot[1:])
	case strings.HasPrefix(slot, "r"):
		job.Replay = uuidOf(strings.SplitN(slot[1:], "a", 2)[0])
	}
	org, event, seq := str(item, "org_id"), str(item, "event_id"), num(item, "seq")
	release := func(why string) (bool, error) {
		switch err := d.resolveClaim(ctx, pk, sk, ssk, slot); {
		case errors.Is(err, errLostClaim):
			return false, nil // another sweep resolved it
		case err != nil:
			return false, err
		}
		slog.Warn("webhook delivery claim resolved: nothing would send it", "organization_id", org, "endpoint_id", job.EndpointID,
			"event_id", event, "attempt", attempt, "why", why)
		return false, nil
	}
	if str(item, job.deliveredAttr()) != "" {
		return release("the event was delivered")
	}
	e, err := s.Get(ctx, org, job.EndpointID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return release("the endpoint was deleted")
	case err != nil:
		return false, fmt.Errorf("sweep claims, read endpoint %s: %w", job.EndpointID, err)
	}
	var ev outbox.Event
	err = s.db.Get(ctx, store.OrgPK(org), outbox.SeqSK(seq), &ev)
	switch {
	case seq == 0 || errors.Is(err, store.ErrNotFound):
		return release("the event is no longer in the feed")
	case err != nil:
		return false, fmt.Errorf("sweep claims, read event %s: %w", event, err)
	}
	job.OrgID, job.EventID, job.Sequence = org, event, seq
	if ev.ID != event {
		return release("the event is no longer in the feed")
	}
	if !e.IsActive || !slices.Contains(e.EventTypes, ev.Type) {
		return release("the endpoint is off or no longer subscribed")
	}
	if err := d.moveClaim(ctx, pk, sk, ssk, sendingSK(now.Add(d.claimLease()).Unix(), slot, attempt)); errors.Is(err, errLostClaim) {
		return false, nil // another sweep has it
	} else if err != nil {
		return false, err
	}
	if err := d.enqueue(ctx, job, 0); err != nil {
		return false, fmt.Errorf("sweep claims, queue event %s again: %w", event, err)
	}
	return true, nil
}

// moveClaim moves a claim's sweep key from old to next, by condition (a
// sweep beside this one finds it moved); it leaves the claim itself
// alone, for the worker to take over.
func (d *Deliverer) moveClaim(ctx context.Context, pk, sk, old, next string) error {
	_, ssk := store.GSIKeyAttrs(outbox.Index)
	sweepSK := expression.Name(ssk)
	return d.updateClaim(ctx, pk, sk, expression.Set(sweepSK, expression.Value(next)), sweepSK.Equal(expression.Value(old)))
}

// resolveClaim ends a claim nothing would send: its attempt is "unsent"
// (never claimed again: a late job of it goes on with the series) and
// leaves the sweep index.
func (d *Deliverer) resolveClaim(ctx context.Context, pk, sk, old, slot string) error {
	spk, ssk := store.GSIKeyAttrs(outbox.Index)
	state, sweepSK := expression.Name(attr("s_", slot)), expression.Name(ssk)
	return d.updateClaim(ctx, pk, sk,
		expression.Set(state, expression.Value("unsent")).Remove(expression.Name(spk)).Remove(sweepSK),
		sweepSK.Equal(expression.Value(old)).And(state.Equal(expression.Value("sending"))))
}

// updateClaim applies upd to the claim's item where cond holds;
// errLostClaim when it does not.
func (d *Deliverer) updateClaim(ctx context.Context, pk, sk string, upd expression.UpdateBuilder, cond expression.ConditionBuilder) error {
	in, err := updateInput(d.Store.db, store.Key(pk, sk), upd, cond)
	if err != nil {
		return err
	}
	_, err = d.Store.db.Client.UpdateItem(ctx, in)
	if store.IsConditionFailed(err) {
		return errLostClaim
	}
	if err != nil {
		return fmt.Errorf("sweep claims, update %s: %w", sk, err)
	}
	return nil
}

// uuidOf puts back the dashes a slot's id lost (32 hex digits).
func uuidOf(hex string) string {
	if len(hex) != 32 {
		return hex
	}
	return hex[:8] + "-" + hex[8:12] + "-" + hex[12:16] + "-" + hex[16:20] + "-" + hex[20:]
}
