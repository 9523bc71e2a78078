package idempotency

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

var now = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// TestStoredKeysRevealNothing: the sort key of a bound key depends on the
// stage's secret, the endpoint and the key, and holds none of the key.
func TestStoredKeysRevealNothing(t *testing.T) {
	t.Parallel()
	a, b := NewStore(nil, []byte("stage-a")), NewStore(nil, []byte("stage-b"))
	long := strings.Repeat("k", 255)
	base := a.keySK("matters", "order-4711")
	for _, c := range []struct {
		name string
		sk   string
		same bool
	}{
		{"the same key again", a.keySK("matters", "order-4711"), true},
		{"another key", a.keySK("matters", "order-4712"), false},
		{"another endpoint", a.keySK("clients", "order-4711"), false},
		{"another stage's secret", b.keySK("matters", "order-4711"), false},
		{"an endpoint and key that concatenate alike", a.keySK("matter", "sorder-4711"), false},
	} {
		if (c.sk == base) != c.same {
			t.Errorf("%s: %s vs %s", c.name, c.sk, base)
		}
	}
	for _, key := range []string{"order-4711", long, "010190-1234"} {
		sk := a.keySK("matters", key)
		if strings.Contains(sk, key) || len(sk) != len("IDEM#matters#")+64 {
			t.Errorf("key %q stored as %q", key, sk)
		}
	}
}

func TestRecordOf(t *testing.T) {
	t.Parallel()
	item := func(expires int64) map[string]any {
		return map[string]any{"PK": "O#x", "SK": "IDEM#x", "expires_at": expires, "resource_id": "r-1", "response": "{}"}
	}
	for _, c := range []struct {
		name string
		item map[string]any
		want bool
	}{
		{"absent", nil, false},
		{"bound for another hour", item(now.Add(time.Hour).Unix()), true},
		{"bound for one more second", item(now.Unix() + 1), true},
		{"expiring now", item(now.Unix()), false},
		{"expired", item(now.Add(-time.Hour).Unix()), false},
	} {
		m, err := store.Marshal(c.item)
		if err != nil {
			t.Fatal(err)
		}
		if rec := RecordOf(m, now); (rec != nil) != c.want || (rec != nil && rec.ResourceID != "r-1") {
			t.Errorf("%s: %+v", c.name, rec)
		}
	}
}

// TestOneKeyBindsOnce: creates racing with one key; one binds it, the
// others' transactions are cancelled and write nothing, carrying the
// winner's record (or a conflict, when they overlapped it). The key is
// honoured 24 hours, then free.
func TestOneKeyBindsOnce(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	s := NewStore(db, []byte("secret"))
	ctx := context.Background()
	bind := Binding{Org: "org", Endpoint: "matters", Key: "order-4711", BodyHash: "h", Now: now}
	const racers = 8
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			id := string(rune('a' + i))
			it, err := s.Item(bind, id, "/matters/"+id, []byte(`{"id":"`+id+`"}`))
			if err != nil {
				errs[i] = err
				return
			}
			tx := db.Tx()
			tx.PutNew(store.Keys{PK: store.OrgPK("org"), SK: "RES#" + id, Kind: "resource"})
			tx.Add(it)
			errs[i] = tx.Commit(ctx)
		})
	}
	wg.Wait()
	winner := ""
	for i, err := range errs {
		var f *store.TxFailed
		switch {
		case err == nil:
			if winner != "" {
				t.Fatalf("the key bound twice: %s and %s", winner, string(rune('a'+i)))
			}
			winner = string(rune('a' + i))
		case errors.As(err, &f) && (f.Has(1) || f.Conflict(1)), errors.Is(err, store.ErrTxConflict):
		default:
			t.Fatalf("racer %d: %v", i, err)
		}
	}
	rec, err := s.Lookup(ctx, "org", "matters", "order-4711", true, now.Add(23*time.Hour))
	if winner == "" || err != nil || rec == nil || rec.ResourceID != winner || rec.Location != "/matters/"+winner {
		t.Fatalf("winner %q, record %+v, %v", winner, rec, err)
	}
	for _, err := range errs {
		var f *store.TxFailed
		if errors.As(err, &f) && f.Has(1) {
			if r := RecordOf(f.Items[1], now); r == nil || r.ResourceID != winner {
				t.Errorf("a cancelled binding carried %+v, want the winner's record", r)
			}
		}
	}
	page, err := db.Query(ctx, store.ListQuery{PK: store.OrgPK("org"), SKPrefix: "RES#", Limit: racers})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("%d resources written, want the winner's only (%v)", len(page.Items), err)
	}
	// After 24 hours the key is free: Lookup forgets it and a new create binds it.
	later := bind
	later.Now = now.Add(Retention)
	if rec, err := s.Lookup(ctx, "org", "matters", "order-4711", true, later.Now); rec != nil || err != nil {
		t.Fatalf("after 24 hours: %+v %v", rec, err)
	}
	it, err := s.Item(later, "z", "/matters/z", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Tx()
	tx.Add(it)
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("rebinding an expired key: %v", err)
	}
}
