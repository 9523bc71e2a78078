package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apperr"
)

// TxBuilder collects the items of one TransactWriteItems.
type TxBuilder struct {
	db        *DB
	items     []ddbtypes.TransactWriteItem
	err       error
	sequenced []sequenced
}

// sequenced is an item whose key holds a sequence number given at commit.
type sequenced struct {
	index int
	build func(seq int64) any
}

// Tx starts a transaction on db.
func (db *DB) Tx() *TxBuilder { return &TxBuilder{db: db} }

// DB is the store the transaction commits to.
func (b *TxBuilder) DB() *DB { return b.db }

// PutNew adds a Put of v that must not exist yet; it returns the item's
// index in the transaction, to match against failed conditions.
func (b *TxBuilder) PutNew(v any) int {
	item, err := Marshal(v)
	if err != nil && b.err == nil {
		b.err = err
	}
	b.items = append(b.items, ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{
		TableName: aws.String(b.db.Table), Item: item,
		ConditionExpression: itemIsNew.Condition(), ExpressionAttributeNames: itemIsNew.Names(),
	}})
	return len(b.items) - 1
}

// PutSequenced adds a Put of an item that must not exist yet and whose key
// holds a sequence number: build makes the item for a number, given when
// the transaction is committed (DB.Sequence), and given again when the
// number is taken (two items of one partition in one microsecond). A
// transaction holding one commits within SequenceWindow of its number or
// not at all (a reader that serves numbers up to twice that ago then
// never sees one appear behind it: the event feed's rule).
func (b *TxBuilder) PutSequenced(build func(seq int64) any) int {
	b.items = append(b.items, ddbtypes.TransactWriteItem{})
	i := len(b.items) - 1
	b.sequenced = append(b.sequenced, sequenced{index: i, build: build})
	return i
}

// SequenceWindow bounds how long after taking its sequence numbers a
// transaction may commit: the SDK's attempts stop at this deadline.
var SequenceWindow = 5 * time.Second

// sequenceAttempts bounds the numbers a transaction takes when the ones
// it took were taken (collisions within one microsecond).
const sequenceAttempts = 4

// number gives each sequenced item its number and its Put.
func (b *TxBuilder) number() {
	for _, sq := range b.sequenced {
		item, err := Marshal(sq.build(b.db.Sequence()))
		if err != nil && b.err == nil {
			b.err = err
		}
		b.items[sq.index] = ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{
			TableName: aws.String(b.db.Table), Item: item,
			ConditionExpression: itemIsNew.Condition(), ExpressionAttributeNames: itemIsNew.Names(),
		}}
	}
}

// onlySequenced reports whether every failed condition is a sequenced
// item's (its number was taken).
func (b *TxBuilder) onlySequenced(f *TxFailed) bool {
	if len(f.Failed) == 0 || len(f.Conflicted) > 0 {
		return false
	}
	for _, i := range f.Failed {
		if !slices.ContainsFunc(b.sequenced, func(s sequenced) bool { return s.index == i }) {
			return false
		}
	}
	return true
}

// CheckWhen adds a ConditionCheck on an existing item, its condition
// built with the SDK's expression builder.
func (b *TxBuilder) CheckWhen(pk, sk string, cond expression.ConditionBuilder) int {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("store: a condition check of %s %s: %w", pk, sk, err)
	}
	b.items = append(b.items, ddbtypes.TransactWriteItem{ConditionCheck: &ddbtypes.ConditionCheck{
		TableName: aws.String(b.db.Table), Key: Key(pk, sk), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}})
	return len(b.items) - 1
}

// Add adds a prepared item (an idempotency completion, an update).
func (b *TxBuilder) Add(it ddbtypes.TransactWriteItem) int {
	b.items = append(b.items, it)
	return len(b.items) - 1
}

// TxFailed is returned when a transaction was cancelled by its items:
// Failed holds the indexes of failed conditions, Conflicted those of
// items a concurrent transaction held (nothing was written either way).
// Items holds, by index, the current item of a failed condition whose
// action asked for it (ReturnValuesOnConditionCheckFailure ALL_OLD).
type TxFailed struct {
	Failed, Conflicted []int
	Items              map[int]map[string]ddbtypes.AttributeValue
}

func (e *TxFailed) Error() string {
	return fmt.Sprintf("store: transaction cancelled: conditions failed at %v, conflicts at %v", e.Failed, e.Conflicted)
}

// Is makes a cancellation by conflicts alone ErrTxConflict, and so
// apperr.Unavailable (Classify).
func (e *TxFailed) Is(target error) bool {
	return (target == ErrTxConflict || target == apperr.Unavailable) && len(e.Failed) == 0 && len(e.Conflicted) > 0
}

// Conflict reports whether item i was held by a concurrent transaction.
func (e *TxFailed) Conflict(i int) bool { return slices.Contains(e.Conflicted, i) }

// Has reports whether the condition of item i failed.
func (e *TxFailed) Has(i int) bool {
	for _, f := range e.Failed {
		if f == i {
			return true
		}
	}
	return false
}

// Commit runs the transaction. A cancellation by failed conditions is a
// *TxFailed; anything else is a store error.
func (b *TxBuilder) Commit(ctx context.Context) error {
	if len(b.sequenced) == 0 {
		return b.commit(ctx)
	}
	for attempt := 1; ; attempt++ {
		b.number()
		wctx, cancel := context.WithTimeout(ctx, SequenceWindow)
		err := b.commit(wctx)
		cancel()
		var f *TxFailed
		if attempt < sequenceAttempts && errors.As(err, &f) && b.onlySequenced(f) {
			continue
		}
		return err
	}
}

func (b *TxBuilder) commit(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	_, err := b.db.Client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: b.items})
	if err == nil {
		return nil
	}
	if f := cancelled(err); f != nil {
		return f
	}
	if isTxConflict(err) {
		return ErrTxConflict
	}
	return fmt.Errorf("transaction: %w", err)
}

// Put adds an unconditional Put of v: an item whose write another item of
// the transaction guards (a copy of it under another key).
func (b *TxBuilder) Put(v any) int {
	item, err := Marshal(v)
	if err != nil && b.err == nil {
		b.err = err
	}
	b.items = append(b.items, ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String(b.db.Table), Item: item}})
	return len(b.items) - 1
}

// PutWhen adds a Put of v that replaces an item only if cond holds, its
// condition built with the SDK's expression builder (UnchangedSince for an
// optimistic replace).
func (b *TxBuilder) PutWhen(v any, cond expression.ConditionBuilder) int {
	item, err := Marshal(v)
	if err != nil && b.err == nil {
		b.err = err
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("store: a conditional put: %w", err)
	}
	b.items = append(b.items, ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{
		TableName: aws.String(b.db.Table), Item: item, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}})
	return len(b.items) - 1
}

// UnchangedSince is the condition of an optimistic replace: the item
// exists and its updated_at is still prev.
func UnchangedSince(prev string) expression.ConditionBuilder {
	return ItemExists().And(expression.Name("updated_at").Equal(expression.Value(prev)))
}

// ItemExists is the condition that the item is there.
func ItemExists() expression.ConditionBuilder {
	return expression.AttributeExists(expression.Name(AttrPK))
}

// itemIsNew is the condition of a write that must not replace an item.
var itemIsNew = MustBuild(expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(AttrPK))))

// MustBuild builds an expression made of constants, once, at start (a
// package variable): it cannot fail but by a mistake in the code that
// wrote it, which every test of that package meets.
func MustBuild(b expression.Builder) expression.Expression {
	e, err := b.Build()
	if err != nil {
		panic(fmt.Sprintf("store: a constant expression: %v", err))
	}
	return e
}
