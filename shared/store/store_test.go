package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

type row struct {
	store.Keys
	Match string `dynamodbav:"match"`
}

// putRows writes n rows in one partition; match decides which carry match=yes.
func putRows(t *testing.T, db *store.DB, n int, match func(i int) bool) {
	t.Helper()
	items := make([]map[string]ddbtypes.AttributeValue, 0, n)
	for i := range n {
		r := row{Keys: store.Keys{PK: "P", SK: fmt.Sprintf("%06d", i), Kind: "row"}, Match: "no"}
		if match(i) {
			r.Match = "yes"
		}
		m, err := store.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, m)
	}
	if err := db.BatchPut(context.Background(), items); err != nil {
		t.Fatal(err)
	}
}

func TestQueryFillsPagesAndResumesAfterTheLastItem(t *testing.T) {
	db := storetest.NewDB(t)
	putRows(t, db, 500, func(i int) bool { return i%7 == 0 })
	var got []string
	q := store.ListQuery{PK: "P", Equal: map[string]string{"match": "yes"}, Limit: 10}
	for pages := 0; ; pages++ {
		rows, next, err := store.QueryInto[row](context.Background(), db, q)
		if err != nil {
			t.Fatal(err)
		}
		if next != nil && len(rows) != 10 {
			t.Fatalf("page %d has %d rows but more follow", pages, len(rows))
		}
		for _, r := range rows {
			got = append(got, r.SK)
		}
		if next == nil {
			break
		}
		q.After = next
	}
	if len(got) != 72 || got[0] != "000000" || got[71] != "000497" {
		t.Fatalf("got %d rows: first %s last %s", len(got), got[0], got[len(got)-1])
	}
}

func TestQueryBoundsWorkForAFilterThatMatchesNothing(t *testing.T) {
	db := storetest.NewDB(t)
	putRows(t, db, 2500, func(i int) bool { return i == 2499 })
	q := store.ListQuery{PK: "P", Equal: map[string]string{"match": "yes"}, Limit: 5}
	page, err := db.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	// 10 reads of 200 items: a short page with a continuation, not an unbounded loop.
	if len(page.Items) != 0 || page.Next == nil {
		t.Fatalf("%d items, next %v", len(page.Items), page.Next)
	}
	q.After = page.Next
	page, err = db.Query(context.Background(), q)
	if err != nil || len(page.Items) != 1 || page.Next != nil {
		t.Fatalf("resumed: %d items, next %v, %v", len(page.Items), page.Next, err)
	}
}

func TestQueryRanges(t *testing.T) {
	db := storetest.NewDB(t)
	putRows(t, db, 30, func(int) bool { return true })
	cases := []struct {
		q    store.ListQuery
		want int
	}{
		{store.ListQuery{PK: "P", SKFrom: "000010", Limit: 100}, 20},
		{store.ListQuery{PK: "P", SKTo: "000009", Limit: 100}, 10},
		{store.ListQuery{PK: "P", SKFrom: "000010", SKTo: "000014", Limit: 100}, 5},
		{store.ListQuery{PK: "P", SKPrefix: "00002", Limit: 100}, 10},
		{store.ListQuery{PK: "nobody", Limit: 100}, 0},
	}
	for _, c := range cases {
		page, err := db.Query(context.Background(), c.q)
		if err != nil || len(page.Items) != c.want || page.Next != nil {
			t.Errorf("%+v: %d items, next %v, %v", c.q, len(page.Items), page.Next, err)
		}
	}
}

func TestSecretIsCreatedOnceUnderARace(t *testing.T) {
	db := storetest.NewDB(t)
	var wg sync.WaitGroup
	got := make([][]byte, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := db.LoadOrCreateSecret(context.Background(), "cursor")
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	for _, v := range got[1:] {
		if string(v) != string(got[0]) || len(v) != 32 {
			t.Fatal("instances disagree on the secret")
		}
	}
}

func TestCounterAndPutNew(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := context.Background()
	for want := int64(1); want <= 3; want++ {
		if n, err := db.Increment(ctx, "O#x", "COUNTER#MATTER", 1); err != nil || n != want {
			t.Fatalf("increment: %d %v", n, err)
		}
	}
	if n, _ := db.Increment(ctx, "O#x", "COUNTER#MATTER", 10); n != 13 {
		t.Fatalf("block increment: %d", n)
	}
	g, _ := store.Marshal(store.NewGuard("x", "CVR", "12345678", "a"))
	if err := db.PutNew(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := db.PutNew(ctx, g); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second PutNew: %v", err)
	}
	if err := db.EnsureTable(ctx); err != nil { // idempotent on an existing table
		t.Fatal(err)
	}
	var r row
	if err := db.Get(ctx, "O#x", "nothing", &r); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get absent: %v", err)
	}
}

func TestOptimisticRetriesConflictsOnly(t *testing.T) {
	calls := 0
	err := store.Optimistic("thing", func() error {
		calls++
		if calls < 3 {
			return store.ErrConflict
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("%v after %d calls", err, calls)
	}
	calls = 0
	if err := store.Optimistic("thing", func() error { calls++; return store.ErrConflict }); err == nil || calls != 3 || !strings.Contains(err.Error(), "thing keeps changing") {
		t.Fatalf("always conflicting: %v after %d calls", err, calls)
	}
	boom := errors.New("boom")
	calls = 0
	if err := store.Optimistic("thing", func() error { calls++; return boom }); err != boom || calls != 1 {
		t.Fatalf("other errors are not retried: %v after %d calls", err, calls)
	}
}

// projected is what a projected read decodes: two of the item's attributes.
type projected struct {
	store.Keys `json:"-"`
	Name       string `dynamodbav:"name"`
	Status     string `dynamodbav:"status"` // a reserved word
}

func TestProjectedReadsReadOnlyWhatTheyDecode(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := context.Background()
	var items []map[string]ddbtypes.AttributeValue
	for i := range 7 {
		m, _ := store.Marshal(map[string]any{"PK": "P", "SK": fmt.Sprintf("R#%02d", i), "GSI1PK": "C", "GSI1SK": fmt.Sprintf("%02d", i),
			"kind": "row", "name": fmt.Sprintf("n%d", i), "status": "open", "secret": "s", "big": strings.Repeat("x", 500)})
		items = append(items, m)
	}
	if err := db.BatchPut(ctx, items); err != nil {
		t.Fatal(err)
	}
	if got := store.AttrsOf[projected](); fmt.Sprint(got) != "[name status]" {
		t.Fatalf("AttrsOf = %v", got)
	}
	var seen []string
	q := store.ListQuery{Index: "GSI1", PK: "C", Limit: 3, Project: true}
	for {
		vs, next, err := store.QueryInto[projected](ctx, db, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if v.Status != "open" || v.Kind != "" {
				t.Fatalf("decoded %+v", v)
			}
			seen = append(seen, v.Name)
		}
		if next == nil {
			break
		}
		q.After = next // the cursor's keys were read
	}
	if len(seen) != 7 {
		t.Fatalf("paged through %v", seen)
	}
	page, err := db.Query(ctx, store.ListQuery{Index: "GSI1", PK: "C", Limit: 1})
	if err != nil || len(page.Items[0]) != 9 {
		t.Fatalf("an unprojected read returns every attribute: %d", len(page.Items[0]))
	}
	v, err := store.ReadInto[projected](ctx, db, "P", "R#03", "status")
	if err != nil || v.Name != "n3" || v.Status != "" {
		t.Fatalf("ReadInto: %+v %v", v, err)
	}
	if _, err := store.ReadInto[projected](ctx, db, "P", "R#99"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ReadInto of nothing: %v", err)
	}
}

// TestQueryNeedsAPageSize: a Query without a Limit is a caller's mistake,
// refused before any read (it once indexed an empty page).
func TestQueryNeedsAPageSize(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{0, -1} {
		if _, err := (&store.DB{}).Query(context.Background(), store.ListQuery{PK: "O#x", Limit: limit}); err == nil || !strings.Contains(err.Error(), "Limit") {
			t.Errorf("Limit %d: %v", limit, err)
		}
	}
}

// TestListQueriesAreSafeByConstruction: the list readers refuse what they
// would answer wrongly, before any read, and never panic.
func TestListQueriesAreSafeByConstruction(t *testing.T) {
	t.Parallel()
	db := &store.DB{} // no client: each case must be decided before a call
	ctx := context.Background()
	cases := []struct {
		name string
		run  func() error
		want string // in the error; "" for none
	}{
		{"a raw Query with Project", func() error {
			_, err := db.Query(ctx, store.ListQuery{Index: "GSI1", PK: "C", Limit: 3, Project: true})
			return err
		}, "only QueryInto"},
		{"a descending merge", func() error {
			_, err := db.Merge(ctx, store.ListQuery{Index: "GSI1", Limit: 3, Desc: true}, []string{"A", "B"})
			return err
		}, "ascending order only"},
		{"a merge without a page size", func() error {
			_, err := db.Merge(ctx, store.ListQuery{Index: "GSI1"}, []string{"A"})
			return err
		}, "Limit"},
		{"a merge of no partitions", func() error {
			page, err := db.Merge(ctx, store.ListQuery{Index: "GSI1", Limit: 3}, nil)
			if err == nil && (len(page.Items) != 0 || page.Next != nil) {
				return fmt.Errorf("page %+v", page)
			}
			return err
		}, ""},
		{"a typed merge of no partitions", func() error {
			vs, next, err := store.MergeInto[projected](ctx, db, store.ListQuery{Index: "GSI1", Limit: 3, Project: true}, nil)
			if err == nil && (len(vs) != 0 || next != nil) {
				return fmt.Errorf("%v %v", vs, next)
			}
			return err
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestBuiltConditionsInTransactions: PutWhen and CheckWhen take the SDK
// builder's conditions (a reserved word, status, among them), and a
// condition that no longer holds fails its item of the transaction, named
// by its index, with nothing written; several writers at once, one wins.
func TestBuiltConditionsInTransactions(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := context.Background()
	type row struct {
		store.Keys
		Status    string `dynamodbav:"status"`
		UpdatedAt string `dynamodbav:"updated_at"`
	}
	if err := db.PutNew(ctx, mustMarshal(t, row{Keys: store.Keys{PK: "O#1", SK: "R#1"}, Status: "open", UpdatedAt: "t0"})); err != nil {
		t.Fatal(err)
	}
	if err := db.PutNew(ctx, mustMarshal(t, row{Keys: store.Keys{PK: "O#1", SK: "C#1"}, Status: "active", UpdatedAt: "t0"})); err != nil {
		t.Fatal(err)
	}
	if err := db.PutNew(ctx, mustMarshal(t, row{Keys: store.Keys{PK: "O#1", SK: "C#1"}})); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("PutNew over an item: %v, want ErrConflict", err)
	}
	var wg sync.WaitGroup
	results := make([]error, 3)
	for i := range results {
		wg.Go(func() {
			tx := db.Tx()
			tx.CheckWhen("O#1", "C#1", expression.Name("status").Equal(expression.Value("active")))
			tx.PutWhen(row{Keys: store.Keys{PK: "O#1", SK: "R#1"}, Status: "closed", UpdatedAt: fmt.Sprint("t", i+1)}, store.UnchangedSince("t0"))
			results[i] = tx.Commit(ctx)
		})
	}
	wg.Wait()
	won := 0
	for _, err := range results {
		var failed *store.TxFailed
		switch {
		case err == nil:
			won++
		case errors.As(err, &failed) && (failed.Has(1) || failed.Conflict(1)), errors.Is(err, store.ErrTxConflict):
		default:
			t.Fatalf("a losing writer: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers changed the row from t0, want 1", won)
	}
	// The check fails: nothing is written.
	tx := db.Tx()
	ci := tx.CheckWhen("O#1", "C#1", expression.Name("status").Equal(expression.Value("closed")))
	tx.Put(row{Keys: store.Keys{PK: "O#1", SK: "R#2"}, Status: "open"})
	var failed *store.TxFailed
	if err := tx.Commit(ctx); !errors.As(err, &failed) || !failed.Has(ci) {
		t.Fatalf("a failed check: %v, want its index %d failed", err, ci)
	}
	var got row
	if err := db.Get(ctx, "O#1", "R#2", &got); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the put beside a failed check was written: %+v %v", got, err)
	}
}

func mustMarshal(t *testing.T, v any) map[string]ddbtypes.AttributeValue {
	t.Helper()
	m, err := store.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
