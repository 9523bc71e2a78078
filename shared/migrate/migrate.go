// Package migrate runs the data changes a release needs, each once per
// table: a step is code (Steps, in order, append only), its run is
// recorded in the table (CONFIG / MIGRATION#<id>), and `scripts/admin
// migrate` applies what is pending. docs/releases.md says when a release
// needs one and how to write it.
//
// A step may run more than once: a run that died (a killed process, a
// lost connection) is taken over once its lease is out. So every step is
// idempotent, as a data change that meets live traffic must be anyway.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
)

// Step is one data change.
type Step struct {
	// ID names it for ever, in the order it was written:
	// "2026-11-24-invoice-updated-index". Never renamed, never reused.
	ID string
	// What says what it changes, for the operator who runs it.
	What string
	// Run makes the change. It must be idempotent (see the package doc)
	// and bounded in what it reads at once (Query or Scan pages).
	Run func(ctx context.Context, db *store.DB) error
}

// Steps are the data changes of every release, oldest first (the keys
// changed freely before any stage held data: docs/data-model.md).
var Steps = []Step{
	{ID: "2026-11-27-time-entry-copies-by-id", What: "write the copy by id (TEID#<id>) of every time entry written before copies were, so that GET /time-entries?ids= finds it (#37)",
		Run: timeentry.BackfillCopies},
}

// Lease is how long a run holds its step before another may take it over.
const Lease = 15 * time.Minute

// record is a step's item.
type record struct {
	PK         string `dynamodbav:"PK"`
	SK         string `dynamodbav:"SK"`
	What       string `dynamodbav:"what"`
	AppliedAt  string `dynamodbav:"applied_at,omitempty"`
	LeaseUntil int64  `dynamodbav:"lease_until,omitempty"`
}

func key(id string) (string, string) { return "CONFIG", "MIGRATION#" + id }

// Status is a step's state in a table.
type Status struct {
	ID        string `json:"id"`
	What      string `json:"what"`
	AppliedAt string `json:"applied_at,omitempty"` // empty: pending
}

// List says of each step whether the table has it.
func List(ctx context.Context, db *store.DB, steps []Step) ([]Status, error) {
	out := make([]Status, 0, len(steps))
	for _, s := range steps {
		var r record
		pk, sk := key(s.ID)
		err := db.Get(ctx, pk, sk, &r)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		out = append(out, Status{ID: s.ID, What: s.What, AppliedAt: r.AppliedAt})
	}
	return out, nil
}

// ErrHeld is returned when another run holds a step: try again after it.
var ErrHeld = errors.New("migrate: another run is applying this step")

// Apply runs the pending steps in order, each under its lease, and stops
// at the first that fails (the steps after it may rely on it). It returns
// the ids it applied. Leases and applied_at are on db's Clock.
func Apply(ctx context.Context, db *store.DB, steps []Step) ([]string, error) {
	now := db.Now
	seen := map[string]bool{}
	var applied []string
	for _, s := range steps {
		if s.ID == "" || seen[s.ID] {
			return applied, fmt.Errorf("migrate: step id %q is empty or repeated", s.ID)
		}
		seen[s.ID] = true
		claimed, err := claim(ctx, db, s, now())
		if err != nil {
			return applied, fmt.Errorf("%s: %w", s.ID, err)
		}
		if !claimed {
			continue // applied before
		}
		if err := s.Run(ctx, db); err != nil {
			release(ctx, db, s.ID)
			return applied, fmt.Errorf("%s: %w", s.ID, err)
		}
		if err := done(ctx, db, s.ID, now()); err != nil {
			return applied, fmt.Errorf("%s: %w", s.ID, err)
		}
		applied = append(applied, s.ID)
	}
	return applied, nil
}

// claim takes the step's lease: it reports false for an applied step, and
// ErrHeld while another run's lease lasts.
func claim(ctx context.Context, db *store.DB, s Step, now time.Time) (bool, error) {
	pk, sk := key(s.ID)
	lease := expression.Name("lease_until")
	free := expression.AttributeNotExists(expression.Name("applied_at")).
		And(expression.AttributeNotExists(lease).Or(lease.LessThan(expression.Value(now.Unix()))))
	e, err := expression.NewBuilder().WithCondition(free).
		WithUpdate(expression.Set(expression.Name("what"), expression.Value(s.What)).
			Set(lease, expression.Value(now.Add(Lease).Unix()))).Build()
	if err != nil {
		return false, err
	}
	_, err = db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(db.Table), Key: store.Key(pk, sk),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		var r record
		if err := store.Unmarshal(failed.Item, &r); err == nil && r.AppliedAt != "" {
			return false, nil
		}
		return false, ErrHeld
	}
	return err == nil, err
}

func done(ctx context.Context, db *store.DB, id string, now time.Time) error {
	pk, sk := key(id)
	e, err := expression.NewBuilder().WithUpdate(expression.Set(expression.Name("applied_at"), expression.Value(store.FormatTime(now))).
		Remove(expression.Name("lease_until"))).Build()
	if err != nil {
		return err
	}
	_, err = db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(db.Table), Key: store.Key(pk, sk),
		UpdateExpression: e.Update(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	return err
}

// release gives a failed step's lease back, so that the next run retries
// it at once (best effort: a lease left behind runs out).
func release(ctx context.Context, db *store.DB, id string) {
	pk, sk := key(id)
	_, _ = db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(db.Table), Key: store.Key(pk, sk),
		UpdateExpression: leaseGiven.Update(), ExpressionAttributeNames: leaseGiven.Names(),
	})
}

// leaseGiven is the update that gives a step's lease back.
var leaseGiven = store.MustBuild(expression.NewBuilder().WithUpdate(expression.Remove(expression.Name("lease_until"))))
