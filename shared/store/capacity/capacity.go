// Package capacity meters what store calls consume, as DynamoDB bills it
// (read and write request units, the table's and each index's apart): for
// tests that hold routes to budgets, the capacity benchmarks and the
// ddbproxy. No Lambda links it (functions/deps_test.go).
package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/practice-api/practice-api/shared/store"
)

// Capacity is what a set of store calls consumed, as DynamoDB bills it:
// write and read request units, the table's and each index's apart.
// It comes from ReturnConsumedCapacity INDEXES on every call (DynamoDB
// Local reports it as AWS bills it), plus what AWS bills that DynamoDB
// Local does not report: a ConditionCheck inside TransactWriteItems (2 WRU,
// as a transactional write of a checked item under 1 KB) and a failed
// conditional single-item write (1 WRU).
type Capacity struct {
	WRU, RRU float64
	// ByIndex splits the units by where they were spent: "table", or an
	// index's name.
	ByIndex map[string]float64
	// Calls counts the store calls (round trips, retries included).
	Calls int
}

// Add adds o to c.
func (c *Capacity) Add(o Capacity) {
	c.WRU += o.WRU
	c.RRU += o.RRU
	c.Calls += o.Calls
	for k, v := range o.ByIndex {
		if c.ByIndex == nil {
			c.ByIndex = map[string]float64{}
		}
		c.ByIndex[k] += v
	}
}

// Indexes lists the indexes that consumed units, sorted.
func (c Capacity) Indexes() []string {
	var out []string
	for k := range c.ByIndex {
		if k != "table" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Round returns c with units rounded to a hundredth (sums of halves and
// quarters are exact, but a printed budget should not show 7.000000001).
func (c Capacity) Round() Capacity {
	r := func(v float64) float64 { return math.Round(v*100) / 100 }
	c.WRU, c.RRU = r(c.WRU), r(c.RRU)
	return c
}

// Meter records the capacity of every call of the clients it is
// installed on (store.Config.APIOptions): tests hold routes to budgets
// with it, and make bench and make capacity print it.
//
// DynamoDB Local misreports what a TransactWriteItems consumed (items whose
// capacity is equal are counted once, and index writes of some are counted
// twice), so a committed transaction is costed here as AWS bills it: every
// item, read before and after through Reader (a client without the meter),
// 2 WRU per KB of the larger of its two images, and 2 WRU per KB of the
// projected entry of every index the item entered, left or changed in.
type Meter struct {
	// Reader reads the images of a transaction's items; without it a
	// transaction counts what DynamoDB Local reports.
	Reader *dynamodb.Client

	mu  sync.Mutex
	cur Capacity
}

// Reset forgets what was recorded.
func (m *Meter) Reset() { m.mu.Lock(); m.cur = Capacity{}; m.mu.Unlock() }

// Take returns what was recorded since the last Reset and resets.
func (m *Meter) Take() Capacity {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cur
	m.cur = Capacity{}
	return c
}

// Peek returns what was recorded since the last Reset.
func (m *Meter) Peek() Capacity {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

func (m *Meter) add(c Capacity) {
	m.mu.Lock()
	m.cur.Add(c)
	m.mu.Unlock()
}

// Middleware is the smithy hook: it asks every call for its consumed
// capacity and records the answer.
func (m *Meter) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("capacityMeter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			write := askCapacity(in.Parameters)
			tx, _ := in.Parameters.(*dynamodb.TransactWriteItemsInput)
			var before []map[string]ddbtypes.AttributeValue
			if tx != nil && m.Reader != nil {
				before = m.Images(ctx, tx)
			}
			out, md, err := next.HandleInitialize(ctx, in)
			c := Capacity{Calls: 1}
			switch {
			case err == nil && tx != nil && m.Reader != nil:
				c.AddTransaction(tx, before, m.Images(ctx, tx))
			case err == nil:
				for _, cc := range consumed(out.Result) {
					c.addConsumed(cc, write)
				}
				c.addChecks(in.Parameters)
			default:
				c.addFailure(in.Parameters, err)
			}
			m.add(c)
			return out, md, err
		}), middleware.After)
}

// askCapacity sets ReturnConsumedCapacity INDEXES on in and reports
// whether the call writes.
func askCapacity(in any) (write bool) {
	idx := ddbtypes.ReturnConsumedCapacityIndexes
	switch v := in.(type) {
	case *dynamodb.GetItemInput:
		v.ReturnConsumedCapacity = idx
	case *dynamodb.QueryInput:
		v.ReturnConsumedCapacity = idx
	case *dynamodb.ScanInput:
		v.ReturnConsumedCapacity = idx
	case *dynamodb.BatchGetItemInput:
		v.ReturnConsumedCapacity = idx
	case *dynamodb.TransactGetItemsInput:
		v.ReturnConsumedCapacity = idx
	case *dynamodb.PutItemInput:
		v.ReturnConsumedCapacity = idx
		return true
	case *dynamodb.UpdateItemInput:
		v.ReturnConsumedCapacity = idx
		return true
	case *dynamodb.DeleteItemInput:
		v.ReturnConsumedCapacity = idx
		return true
	case *dynamodb.BatchWriteItemInput:
		v.ReturnConsumedCapacity = idx
		return true
	case *dynamodb.TransactWriteItemsInput:
		v.ReturnConsumedCapacity = idx
		return true
	}
	return false
}

func consumed(out any) []ddbtypes.ConsumedCapacity {
	one := func(c *ddbtypes.ConsumedCapacity) []ddbtypes.ConsumedCapacity {
		if c == nil {
			return nil
		}
		return []ddbtypes.ConsumedCapacity{*c}
	}
	switch v := out.(type) {
	case *dynamodb.GetItemOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(v.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		return v.ConsumedCapacity
	case *dynamodb.BatchWriteItemOutput:
		return v.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		return v.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		return v.ConsumedCapacity
	}
	return nil
}

func (c *Capacity) addConsumed(cc ddbtypes.ConsumedCapacity, write bool) {
	if c.ByIndex == nil {
		c.ByIndex = map[string]float64{}
	}
	total := aws.ToFloat64(cc.CapacityUnits)
	parts := 0.0
	if cc.Table != nil {
		c.ByIndex["table"] += aws.ToFloat64(cc.Table.CapacityUnits)
		parts += aws.ToFloat64(cc.Table.CapacityUnits)
	}
	for name, ic := range cc.GlobalSecondaryIndexes {
		c.ByIndex[name] += aws.ToFloat64(ic.CapacityUnits)
		parts += aws.ToFloat64(ic.CapacityUnits)
	}
	if cc.Table == nil && len(cc.GlobalSecondaryIndexes) == 0 {
		c.ByIndex["table"] += total
	}
	if write {
		c.WRU += total
	} else {
		c.RRU += total
	}
}

// Images reads the current item of every action of tx through Reader
// (nil where there is none).
func (m *Meter) Images(ctx context.Context, tx *dynamodb.TransactWriteItemsInput) []map[string]ddbtypes.AttributeValue {
	out := make([]map[string]ddbtypes.AttributeValue, len(tx.TransactItems))
	for i, it := range tx.TransactItems {
		table, key := txTarget(it)
		if key == nil {
			continue
		}
		got, err := m.Reader.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
		if err == nil {
			out[i] = got.Item
		}
	}
	return out
}

// txTarget is the table and primary key an action of a transaction writes.
func txTarget(it ddbtypes.TransactWriteItem) (*string, map[string]ddbtypes.AttributeValue) {
	switch {
	case it.Put != nil:
		return it.Put.TableName, map[string]ddbtypes.AttributeValue{store.AttrPK: it.Put.Item[store.AttrPK], store.AttrSK: it.Put.Item[store.AttrSK]}
	case it.Update != nil:
		return it.Update.TableName, it.Update.Key
	case it.Delete != nil:
		return it.Delete.TableName, it.Delete.Key
	case it.ConditionCheck != nil:
		return it.ConditionCheck.TableName, it.ConditionCheck.Key
	}
	return nil, nil
}

// AddTransaction costs a committed transaction from its items' images
// before and after: 2 WRU per KB for each item (its larger image; a
// condition check its current one), and 2 WRU per KB of each index entry
// written, deleted or changed.
func (c *Capacity) AddTransaction(tx *dynamodb.TransactWriteItemsInput, before, after []map[string]ddbtypes.AttributeValue) {
	if c.ByIndex == nil {
		c.ByIndex = map[string]float64{}
	}
	add := func(where string, u float64) {
		c.WRU += u
		c.ByIndex[where] += u
	}
	for i, it := range tx.TransactItems {
		pre, post := before[i], after[i]
		if it.ConditionCheck != nil {
			add("table", 2*max(units(ItemSize(pre), 1024), 1))
			continue
		}
		add("table", 2*max(units(max(ItemSize(pre), ItemSize(post)), 1024), 1))
		for _, ix := range store.Indexes {
			for where, u := range writes(ix, pre, post) {
				add(where, 2*u)
			}
		}
	}
}

// TransactionKeys is what one committed action of a transaction wrote, by
// partition key: its item's ("<PK>") and each index entry's ("<index>
// <its partition key>"), in WRU (a condition check writes nothing).
func TransactionKeys(it ddbtypes.TransactWriteItem, pre, post map[string]ddbtypes.AttributeValue) map[string]float64 {
	if it.ConditionCheck != nil {
		return nil
	}
	out := map[string]float64{}
	img := post
	if img == nil {
		img = pre
	}
	if pk, ok := img[store.AttrPK].(*ddbtypes.AttributeValueMemberS); ok {
		out[pk.Value] += 2 * max(units(max(ItemSize(pre), ItemSize(post)), 1024), 1)
	}
	for _, ix := range store.Indexes {
		if len(writes(ix, pre, post)) == 0 {
			continue
		}
		pkAttr, _ := store.GSIKeyAttrs(ix.Name)
		a, b := entry(ix, pre), entry(ix, post)
		pkOf := func(e map[string]ddbtypes.AttributeValue) string {
			v, _ := e[pkAttr].(*ddbtypes.AttributeValueMemberS)
			if v == nil {
				return ""
			}
			return v.Value
		}
		if a != nil && b != nil && pkOf(a) == pkOf(b) {
			out[string(ix.Name)+" "+pkOf(a)] += 2 * max(units(max(ItemSize(a), ItemSize(b)), 1024), 1)
			continue
		}
		for _, e := range []map[string]ddbtypes.AttributeValue{a, b} {
			if e != nil {
				out[string(ix.Name)+" "+pkOf(e)] += 2 * max(units(ItemSize(e), 1024), 1)
			}
		}
	}
	return out
}

// ConditionCheckWRU is what AWS bills for a ConditionCheck in a
// TransactWriteItems on an item under 1 KB (a transactional write of it);
// DynamoDB Local reports nothing for it.
const ConditionCheckWRU = 2

// addChecks adds what DynamoDB Local leaves out of a committed
// transaction: its condition checks.
func (c *Capacity) addChecks(in any) {
	tx, ok := in.(*dynamodb.TransactWriteItemsInput)
	if !ok {
		return
	}
	for _, it := range tx.TransactItems {
		if it.ConditionCheck != nil {
			c.WRU += ConditionCheckWRU
			if c.ByIndex == nil {
				c.ByIndex = map[string]float64{}
			}
			c.ByIndex["table"] += ConditionCheckWRU
		}
	}
}

// addFailure accounts for what AWS bills for a call that failed on a
// condition and DynamoDB Local reports nothing for: a failed conditional
// single-item write is billed as a write of the item (taken as 1 WRU).
// A cancelled transaction is not counted: paths that must stay in a budget
// do not rely on one failing.
func (c *Capacity) addFailure(in any, err error) {
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return
	}
	switch in.(type) {
	case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput:
		c.WRU++
		if c.ByIndex == nil {
			c.ByIndex = map[string]float64{}
		}
		c.ByIndex["table"]++
	}
}

// ItemSize is an item's size as DynamoDB counts it for capacity: the
// UTF-8 length of each attribute's name plus its value's size.
func ItemSize(item map[string]ddbtypes.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v ddbtypes.AttributeValue) int {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberN:
		return numberSize(x.Value)
	case *ddbtypes.AttributeValueMemberB:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberBOOL, *ddbtypes.AttributeValueMemberNULL:
		return 1
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberNS:
		n := 0
		for _, s := range x.Value {
			n += numberSize(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberBS:
		n := 0
		for _, b := range x.Value {
			n += len(b)
		}
		return n
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize: about one byte per two significant digits, plus one.
func numberSize(s string) int {
	digits := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}

// units is the request units of size bytes in blocks of block bytes.
func units(size, block int) float64 {
	if size <= 0 {
		return 0
	}
	return math.Ceil(float64(size) / float64(block))
}

// equalItems reports whether two items hold the same attributes and values.
func equalItems(a, b map[string]ddbtypes.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !equalValue(v, b[k]) {
			return false
		}
	}
	return true
}

// equalValue compares two attribute values by type and content.
func equalValue(a, b ddbtypes.AttributeValue) bool {
	switch x := a.(type) {
	case *ddbtypes.AttributeValueMemberS:
		y, ok := b.(*ddbtypes.AttributeValueMemberS)
		return ok && x.Value == y.Value
	case *ddbtypes.AttributeValueMemberN:
		y, ok := b.(*ddbtypes.AttributeValueMemberN)
		return ok && x.Value == y.Value
	case *ddbtypes.AttributeValueMemberB:
		y, ok := b.(*ddbtypes.AttributeValueMemberB)
		return ok && string(x.Value) == string(y.Value)
	case *ddbtypes.AttributeValueMemberBOOL:
		y, ok := b.(*ddbtypes.AttributeValueMemberBOOL)
		return ok && x.Value == y.Value
	case *ddbtypes.AttributeValueMemberNULL:
		_, ok := b.(*ddbtypes.AttributeValueMemberNULL)
		return ok
	case *ddbtypes.AttributeValueMemberL:
		y, ok := b.(*ddbtypes.AttributeValueMemberL)
		if !ok || len(x.Value) != len(y.Value) {
			return false
		}
		for i := range x.Value {
			if !equalValue(x.Value[i], y.Value[i]) {
				return false
			}
		}
		return true
	case *ddbtypes.AttributeValueMemberM:
		y, ok := b.(*ddbtypes.AttributeValueMemberM)
		return ok && equalItems(x.Value, y.Value)
	case *ddbtypes.AttributeValueMemberSS:
		y, ok := b.(*ddbtypes.AttributeValueMemberSS)
		return ok && fmt.Sprint(x.Value) == fmt.Sprint(y.Value)
	case *ddbtypes.AttributeValueMemberNS:
		y, ok := b.(*ddbtypes.AttributeValueMemberNS)
		return ok && fmt.Sprint(x.Value) == fmt.Sprint(y.Value)
	case nil:
		return b == nil
	}
	return false
}

// entry is what the index holds of item: nil when the item is not in it.
func entry(ix store.Index, item map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	pk, sk := store.GSIKeyAttrs(ix.Name)
	if item == nil || item[pk] == nil || item[sk] == nil {
		return nil
	}
	if !ix.KeysOnly {
		return item
	}
	return map[string]ddbtypes.AttributeValue{store.AttrPK: item[store.AttrPK], store.AttrSK: item[store.AttrSK], pk: item[pk], sk: item[sk]}
}

// writes is the units (per KB, before any transactional doubling) a
// change of an item from pre to post (nil: absent) costs this index: a
// put of an entry that appears, a delete of one that goes, both when its
// key changes, one write when its projected attributes change.
func writes(ix store.Index, pre, post map[string]ddbtypes.AttributeValue) map[string]float64 {
	a, b := entry(ix, pre), entry(ix, post)
	pk, sk := store.GSIKeyAttrs(ix.Name)
	same := func(x, y map[string]ddbtypes.AttributeValue) bool {
		return ItemSize(x) == ItemSize(y) && equalItems(x, y)
	}
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return map[string]float64{string(ix.Name): max(units(ItemSize(b), 1024), 1)}
	case b == nil:
		return map[string]float64{string(ix.Name): max(units(ItemSize(a), 1024), 1)}
	case !equalValue(a[pk], b[pk]) || !equalValue(a[sk], b[sk]):
		return map[string]float64{string(ix.Name): max(units(ItemSize(a), 1024), 1) + max(units(ItemSize(b), 1024), 1)}
	case same(a, b):
		return nil
	}
	return map[string]float64{string(ix.Name): max(units(max(ItemSize(a), ItemSize(b)), 1024), 1)}
}
