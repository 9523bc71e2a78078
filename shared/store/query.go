package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/listing"
)

// StartKey is where a listing resumes: the key attributes (table and index)
// of the last item returned (listing.StartKey, which the edge links
// without the store).
type StartKey = listing.StartKey

// ListRequest is a validated list call as a domain package's List method
// takes it (listing.Request: the edge's ServeList reads it from the query
// string without linking the store).
type ListRequest[F comparable] = listing.Request[F]

// ListQuery is one list request against the table or a GSI: a partition,
// an optional inclusive sort-key range, and optional equality filters on
// other attributes for combined filters that no single index answers.
type ListQuery struct {
	Index  IndexName // "" for the base table
	PK     string
	SKFrom string // inclusive lower bound on the sort key; "" for none
	SKTo   string // inclusive upper bound on the sort key; "" for none
	// SKPrefix restricts the sort key to a prefix (base-table collections).
	SKPrefix string
	Equal    map[string]string // attribute = value, applied as a FilterExpression
	// Filter is a filter of the caller's (the SDK's expression builder),
	// ANDed with Equal's; the zero value filters nothing.
	Filter expression.ConditionBuilder
	// MaxReads bounds the Query calls spent filling a filtered page
	// (maxFilterReads when 0): 1 keeps a page to a single Query.
	MaxReads int
	Limit    int      // items wanted on this page
	After    StartKey // resume after this key; nil for the first page
	Desc     bool     // newest (highest sort key) first
	// Consistent reads the base table strongly consistently (never an
	// index, which DynamoDB reads eventually consistently).
	Consistent bool
	// Project reads only what the caller decodes (QueryInto: the attributes
	// of its type) plus the keys a continuation needs, instead of whole
	// items: for API lists, which hand every attribute they read to a client.
	Project bool
	// Omit leaves attributes of the type out of a projected read (an
	// invoice's lines on the list, a webhook's secrets).
	Omit  []string
	attrs []string
}

// And is a AND b, where either may be unset (the zero ConditionBuilder):
// filters and conditions built up from optional parts.
func And(a, b expression.ConditionBuilder) expression.ConditionBuilder {
	switch {
	case !a.IsSet():
		return b
	case !b.IsSet():
		return a
	}
	return a.And(b)
}

// maxFilterReads bounds the Query calls spent filling one filtered page, so a
// filter that matches nothing in a large partition cannot make a request
// unbounded; the page then comes back short with a continuation.
const maxFilterReads = 10

// Page is one page of items with the key to resume from, nil on the last page.
type Page struct {
	Items []map[string]ddbtypes.AttributeValue
	Next  StartKey
	// Read counts the items the store read for the page (ScannedCount): what
	// DynamoDB bills, whatever the table's size.
	Read int
}

// Query runs q, looping until the page is full or the partition is
// exhausted: with a FilterExpression, DynamoDB's Limit caps items read, not
// items returned. The continuation is built from the last item returned, not
// from LastEvaluatedKey, so nothing read past the page is skipped.
func (db *DB) Query(ctx context.Context, q ListQuery) (Page, error) {
	if err := q.check(); err != nil {
		return Page{}, err
	}
	in, readLimit, err := db.queryInput(q)
	if err != nil {
		return Page{}, err
	}
	return db.readPage(ctx, q, in, readLimit)
}

// check refuses a query that Query would answer wrongly, before any read.
func (q ListQuery) check() error {
	if q.Limit < 1 {
		return fmt.Errorf("store: a query of %s needs a Limit (its page size) of at least 1, not %d", q.PK, q.Limit)
	}
	if q.Project && len(q.attrs) == 0 {
		// Only the typed readers know which attributes to read: a Query
		// of raw items with Project once read whole items, silently.
		return fmt.Errorf("store: a query of %s asks for a projected read (Project), which only QueryInto, MergeInto and Each make (they know the type's attributes); DB.Query reads whole items", q.PK)
	}
	return nil
}

// keyAttrs are the partition and sort key attributes of q's table or index.
func (q ListQuery) keyAttrs() (pkAttr, skAttr string) {
	if q.Index == "" {
		return AttrPK, AttrSK
	}
	return GSIKeyAttrs(q.Index)
}

// keyCondition is q's partition with its sort-key prefix or range, if any.
// The SDK's expression builder names every attribute and value (#0, :0…),
// so reserved words (status, date) and a caller's filter never collide with
// the key condition's placeholders.
func (q ListQuery) keyCondition() expression.KeyConditionBuilder {
	pkAttr, skAttr := q.keyAttrs()
	key := expression.Key(pkAttr).Equal(expression.Value(q.PK))
	sk := expression.Key(skAttr)
	switch {
	case q.SKPrefix != "":
		return key.And(sk.BeginsWith(q.SKPrefix))
	case q.SKFrom != "" && q.SKTo != "":
		return key.And(sk.Between(expression.Value(q.SKFrom), expression.Value(q.SKTo)))
	case q.SKFrom != "":
		return key.And(sk.GreaterThanEqual(expression.Value(q.SKFrom)))
	case q.SKTo != "":
		return key.And(sk.LessThanEqual(expression.Value(q.SKTo)))
	}
	return key
}

// filter is q.Filter ANDed with an equality per q.Equal attribute (in name
// order, so the same query builds the same expression).
func (q ListQuery) filter() expression.ConditionBuilder {
	filter := q.Filter
	for _, attr := range slices.Sorted(maps.Keys(q.Equal)) {
		filter = And(filter, expression.Name(attr).Equal(expression.Value(q.Equal[attr])))
	}
	return filter
}

// projection is what a projected read of q reads: the attributes of its
// type plus the keys (the table's and the index's) a continuation needs.
func (q ListQuery) projection() expression.ProjectionBuilder {
	pkAttr, skAttr := q.keyAttrs()
	keys := []string{AttrPK, AttrSK}
	if q.Index != "" {
		keys = append(keys, pkAttr, skAttr)
	}
	return names(append(keys, q.attrs...))
}

// queryInput is q's first Query call and how many items each call reads:
// one more than the page (which tells whether another page exists), or,
// with a filter, enough that a page rarely needs a second call.
func (db *DB) queryInput(q ListQuery) (*dynamodb.QueryInput, int, error) {
	b := expression.NewBuilder().WithKeyCondition(q.keyCondition())
	readLimit := q.Limit + 1
	if filter := q.filter(); filter.IsSet() {
		b = b.WithFilter(filter)
		readLimit = min(max(readLimit*4, 200), 1000)
	}
	if q.Project && len(q.attrs) > 0 {
		b = b.WithProjection(q.projection())
	}
	expr, err := b.Build()
	if err != nil {
		return nil, 0, fmt.Errorf("store: a query of %s: %w", q.PK, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(db.Table),
		KeyConditionExpression:    expr.KeyCondition(),
		FilterExpression:          expr.Filter(),
		ProjectionExpression:      expr.Projection(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}
	if q.Index != "" {
		in.IndexName = aws.String(string(q.Index))
	}
	if q.Desc {
		in.ScanIndexForward = aws.Bool(false)
	}
	if q.Consistent && q.Index == "" {
		in.ConsistentRead = aws.Bool(true)
	}
	if q.After != nil {
		in.ExclusiveStartKey = toAttrs(q.After)
	}
	return in, readLimit, nil
}

// readPage calls Query with in until q's page is full, the partition is
// read out, or q's read budget is spent (then the page comes back short,
// with a continuation from where the reads stopped).
func (db *DB) readPage(ctx context.Context, q ListQuery, in *dynamodb.QueryInput, readLimit int) (Page, error) {
	want := q.Limit + 1 // one more than the page tells whether another page exists
	var page Page
	for reads := 0; ; reads++ {
		in.Limit = aws.Int32(int32(readLimit))
		out, err := db.Client.Query(ctx, in)
		if err != nil {
			return Page{}, fmt.Errorf("query %s %s: %w", q.Index, q.PK, err)
		}
		page.Items = append(page.Items, out.Items...)
		page.Read += int(out.ScannedCount)
		if len(page.Items) >= want {
			pkAttr, skAttr := q.keyAttrs()
			page.Items = page.Items[:q.Limit]
			page.Next = keyOf(page.Items[len(page.Items)-1], pkAttr, skAttr)
			return page, nil
		}
		if out.LastEvaluatedKey == nil {
			return page, nil
		}
		if reads+1 >= cmp.Or(q.MaxReads, maxFilterReads) {
			page.Next = fromAttrs(out.LastEvaluatedKey)
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func keyOf(item map[string]ddbtypes.AttributeValue, pkAttr, skAttr string) StartKey {
	k := StartKey{}
	for _, a := range []string{AttrPK, AttrSK, pkAttr, skAttr} {
		if v, ok := item[a].(*ddbtypes.AttributeValueMemberS); ok {
			k[a] = v.Value
		}
	}
	return k
}

func toAttrs(k StartKey) map[string]ddbtypes.AttributeValue {
	m := make(map[string]ddbtypes.AttributeValue, len(k))
	for a, v := range k {
		m[a] = &ddbtypes.AttributeValueMemberS{Value: v}
	}
	return m
}

func fromAttrs(m map[string]ddbtypes.AttributeValue) StartKey {
	k := StartKey{}
	for a, v := range m {
		if s, ok := v.(*ddbtypes.AttributeValueMemberS); ok {
			k[a] = s.Value
		}
	}
	return k
}

// KeyFilter is an equality filter that a GSI answers: the index's partition
// for it is Collection(org, type, Segment, Value), and Attr is the item
// attribute holding the same value.
type KeyFilter struct {
	Index                IndexName
	Attr, Segment, Value string
}

// NarrowBy points q at the index of the first filter that has a value
// (callers list them most selective first) and turns the others that have a
// value into equality filter expressions. With no value at all, q stays on
// its collection.
func (q *ListQuery) NarrowBy(org, typ string, filters ...KeyFilter) {
	picked := false
	for _, f := range filters {
		switch {
		case f.Value == "":
		case !picked:
			q.Index, q.PK, picked = f.Index, Collection(org, typ, f.Segment, f.Value), true
		default:
			if q.Equal == nil {
				q.Equal = map[string]string{}
			}
			q.Equal[f.Attr] = f.Value
		}
	}
}

// Between narrows q to items whose attribute attr lies in the inclusive
// range [from, to] (either may be "", not both), as a filter expression:
// for a range on a value that q's key does not order by (an entry's date
// when its list is read by last change, a last change when it is read by
// date). It is ANDed with q's other filters.
func (q *ListQuery) Between(attr, from, to string) {
	if from == "" && to == "" {
		return
	}
	name := expression.Name(attr)
	if from != "" {
		q.Filter = And(q.Filter, name.GreaterThanEqual(expression.Value(from)))
	}
	if to != "" {
		q.Filter = And(q.Filter, name.LessThanEqual(expression.Value(to)))
	}
}

// Dates bounds q's sort key to the inclusive date range [from, to] (either
// may be ""), for sort keys that start with a YYYY-MM-DD date.
func (q *ListQuery) Dates(from, to string) {
	q.SKFrom = from
	if to != "" {
		q.SKTo = to + "~" // after every "<date>#<id>" of that day
	}
}

// Merge lists one page across several partitions of one index (q.PK is
// ignored; pks names them), ordered by the index's sort key as if they
// were one: for a collection kept in a few partitions by a value of few
// kinds (time entries by status), so that one index answers both "all"
// and "of this kind". Each partition is first read for its share of the
// page (twice its even share, so that uneven pages rarely need more), all
// at once; a partition whose share runs out before the page is full (the
// page's items are mostly of its kind) is read on, for what the page still
// lacks. So a page reads about twice the items it returns, however they
// are spread, not once per partition. The continuation is the last sort key
// returned (every sort key of the index is unique), from which each
// partition resumes. Merge reads in ascending order only (a descending
// merge is refused, not answered out of order), and no partitions are an
// empty page.
func (db *DB) Merge(ctx context.Context, q ListQuery, pks []string) (Page, error) {
	if q.Desc {
		return Page{}, fmt.Errorf("store: Merge reads its partitions in ascending order only (Desc is set on a merge of %d partitions of %q)", len(pks), q.Index)
	}
	if q.Limit < 1 {
		return Page{}, fmt.Errorf("store: a merge of %d partitions needs a Limit (its page size) of at least 1, not %d", len(pks), q.Limit)
	}
	if len(pks) == 0 {
		return Page{}, nil
	}
	m := newMerge(db, q, pks)
	if err := m.fill(ctx, m.all(), 2*q.Limit/len(pks)+1); err != nil {
		return Page{}, err
	}
	for len(m.out.Items) < q.Limit {
		// A partition with nothing buffered but more to read could hold
		// the next item: read on there first.
		if dry := m.dry(); len(dry) > 0 {
			if err := m.fill(ctx, dry, q.Limit-len(m.out.Items)); err != nil {
				return Page{}, err
			}
			continue
		}
		if !m.take() {
			break // every partition read out
		}
	}
	m.out.Next = m.next()
	return m.out, nil
}

// merge is one Merge in progress: the partitions' buffered items and where
// each reads on, and the page taken from them so far.
type merge struct {
	db     *DB
	q      ListQuery // each partition's query, but for its PK, Limit and After
	pks    []string
	skAttr string
	parts  []mergePart
	out    Page
}

// mergePart is one partition of a merge.
type mergePart struct {
	buf  []map[string]ddbtypes.AttributeValue
	next StartKey // where to read on; nil once the partition is read out
}

// newMerge starts a merge of q's partitions pks, each resuming after q's
// continuation (the last sort key returned).
func newMerge(db *DB, q ListQuery, pks []string) *merge {
	_, skAttr := q.keyAttrs()
	if after := q.After[skAttr]; after != "" {
		// Sort keys of the merged indexes are of one length, so after+"!"
		// is above after and below every longer key.
		q.SKFrom = max(q.SKFrom, after+"!")
	}
	q.After = nil
	return &merge{db: db, q: q, pks: pks, skAttr: skAttr, parts: make([]mergePart, len(pks))}
}

// sk is the item's sort key on the merged index ("" without one).
func (m *merge) sk(it map[string]ddbtypes.AttributeValue) string {
	v, _ := it[m.skAttr].(*ddbtypes.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// all are the indexes of every partition.
func (m *merge) all() []int {
	all := make([]int, len(m.pks))
	for i := range all {
		all[i] = i
	}
	return all
}

// fill reads up to limit more items of each partition in idx, all at once,
// into their buffers.
func (m *merge) fill(ctx context.Context, idx []int, limit int) error {
	pages := make([]Page, len(idx))
	errs := make([]error, len(idx))
	var calls Calls // a panic of one comes back to the request's goroutine
	for j, i := range idx {
		calls.Go(func() {
			pq := m.q
			pq.PK, pq.Limit, pq.After = m.pks[i], limit, m.parts[i].next
			pages[j], errs[j] = m.db.Query(ctx, pq)
		})
	}
	calls.Wait()
	for j, i := range idx {
		if errs[j] != nil {
			return errs[j]
		}
		m.parts[i].buf = append(m.parts[i].buf, pages[j].Items...)
		m.parts[i].next = pages[j].Next
		m.out.Read += pages[j].Read
	}
	return nil
}

// dry are the partitions with nothing buffered but more to read.
func (m *merge) dry() []int {
	var dry []int
	for i, p := range m.parts {
		if len(p.buf) == 0 && p.next != nil {
			dry = append(dry, i)
		}
	}
	return dry
}

// take moves the buffered item with the least sort key to the page; false
// when nothing is buffered.
func (m *merge) take() bool {
	least := -1
	for i, p := range m.parts {
		if len(p.buf) > 0 && (least < 0 || m.sk(p.buf[0]) < m.sk(m.parts[least].buf[0])) {
			least = i
		}
	}
	if least < 0 {
		return false
	}
	m.out.Items = append(m.out.Items, m.parts[least].buf[0])
	m.parts[least].buf = m.parts[least].buf[1:]
	return true
}

// next is the page's continuation: its last sort key, or nil when no
// partition has anything left (buffered or to read).
func (m *merge) next() StartKey {
	more := false
	for _, p := range m.parts {
		more = more || len(p.buf) > 0 || p.next != nil
	}
	if !more || len(m.out.Items) == 0 {
		return nil
	}
	return StartKey{m.skAttr: m.sk(m.out.Items[len(m.out.Items)-1])}
}

// MergeInto is Merge decoded into values of T (with q.Project, only T's
// attributes are read).
func MergeInto[T any](ctx context.Context, db *DB, q ListQuery, pks []string) ([]T, StartKey, error) {
	if q.Project {
		q.attrs = attrsExcept[T](q.Omit)
	}
	page, err := db.Merge(ctx, q, pks)
	if err != nil {
		return nil, nil, err
	}
	out := make([]T, 0, len(page.Items))
	for _, it := range page.Items {
		var v T
		if err := Unmarshal(it, &v); err != nil {
			return nil, nil, err
		}
		out = append(out, v)
	}
	return out, page.Next, nil
}
