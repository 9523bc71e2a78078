package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

func TestParseTypeAndInFeed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		ok     bool
		inFeed bool
	}{
		{"matter.created", true, true},
		{"invoice.paid", true, true},
		{"webhook_endpoint.disabled", true, true},
		{"company.created", true, true},  // an addition (#37)
		{"company.enrich", false, false}, // internal: no subscriber sees it
		{"webhook.test", false, false},   // sent on request only
		{"Matter.Created", false, false},
		{" matter.created", false, false},
		{"", false, false},
	} {
		typ, err := ParseType(c.name)
		if (err == nil) != c.ok || (err == nil && string(typ) != c.name) {
			t.Errorf("ParseType(%q) = %q, %v", c.name, typ, err)
		}
		if err != nil && !strings.Contains(err.Error(), "known: matter.created, matter.closed") {
			t.Errorf("ParseType(%q): %v does not list the known types", c.name, err)
		}
		if InFeed(Type(c.name)) != c.inFeed {
			t.Errorf("InFeed(%q) = %v", c.name, !c.inFeed)
		}
	}
}

// TestSequenceKeysSortAsNumbers: the feed is a range of sort keys, so
// their order must be the sequences' order.
func TestSequenceKeysSortAsNumbers(t *testing.T) {
	t.Parallel()
	seqs := []int64{0, 1, 9, 10, 999, t0.UnixMicro(), t0.UnixMicro() + 1, MaxSeq}
	keys := make([]string, len(seqs))
	for i, s := range seqs {
		keys[i] = SeqSK(s)
		if n, err := SeqOf(keys[i]); err != nil || n != s {
			t.Errorf("SeqOf(%s) = %d, %v", keys[i], n, err)
		}
	}
	if !slices.IsSorted(keys) {
		t.Fatalf("keys out of order: %v", keys)
	}
	if _, err := SeqOf("EVI#x"); err == nil {
		t.Fatal("an internal event's key read as a sequence")
	}
}

func TestNewEventsAndTheirShards(t *testing.T) {
	t.Parallel()
	shards, fewer := map[string]bool{}, map[string]bool{}
	for i := range 2000 {
		ev, err := New("org", MatterCreated, "matter", map[string]any{"id": fmt.Sprint(i)}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if ev.GSI6PK != "" {
			t.Fatalf("New gave %s a shard: Add gives it the table's", ev.GSI6PK)
		}
		shards[pendingPKOf(ev.ID, ShardsOf(&store.DB{}))] = true
		fewer[pendingPKOf(ev.ID, ShardsOf(&store.DB{OutboxShards: 5}))] = true
		if ev.PK != store.OrgPK("org") || !strings.HasPrefix(ev.SK, "EVI#") || ev.Type != MatterCreated || ev.CreatedAt != store.FormatTime(t0) {
			t.Fatalf("event %+v", ev)
		}
		var data map[string]map[string]string
		if err := json.Unmarshal([]byte(ev.Data), &data); err != nil || data["matter"]["id"] != fmt.Sprint(i) {
			t.Fatalf("data %s", ev.Data)
		}
	}
	// 2,000 events land in every one of the sweep's partitions, and in
	// no other: the default's, and a table's own (OUTBOX_SHARDS).
	for n, got := range map[int]map[string]bool{DefaultShards: shards, 5: fewer} {
		for s := range n {
			if !got[PendingPK(s)] {
				t.Errorf("%d shards: no event in shard %d", n, s)
			}
		}
		if len(got) != n {
			t.Fatalf("%d partitions, want %d", len(got), n)
		}
	}
	if _, err := New("org", MatterCreated, "matter", func() {}, t0); err == nil {
		t.Fatal("an unencodable payload made an event")
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    Dispatcher
		typ  Type
		want time.Duration
	}{
		{Dispatcher{}, MatterCreated, DefaultFeedRetention},
		{Dispatcher{}, CompanyEnrich, DefaultRetention},
		{Dispatcher{FeedRetention: time.Hour, Retention: time.Minute}, InvoicePaid, time.Hour},
		{Dispatcher{FeedRetention: time.Hour, Retention: time.Minute}, CompanyEnrich, time.Minute},
	} {
		if got := c.d.retention(c.typ); got != c.want {
			t.Errorf("%s with %+v: %v, want %v", c.typ, c.d, got, c.want)
		}
	}
	if FeedKeep(0) != DefaultFeedRetention || FeedKeep(time.Hour) != time.Hour {
		t.Fatal("FeedKeep")
	}
}

type sink struct {
	mu   sync.Mutex
	sent [][]byte
}

func (s *sink) Send(_ context.Context, _ string, body []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, body)
	return nil
}

// TestFeedOrderUnderConcurrentCommits: changes committing at once each
// write their event; the feed holds every one, once, in commit order with
// distinct sequences, and each is dispatched once or parked when no queue
// takes its type.
func TestFeedOrderUnderConcurrentCommits(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	types := []Type{MatterCreated, InvoicePaid, CompanyEnrich}
	errs := make([]error, 30)
	for i := range errs {
		wg.Go(func() {
			ev, err := New("org", types[i%len(types)], "n", i, time.Now())
			if err != nil {
				errs[i] = err
				return
			}
			tx := db.Tx()
			Add(tx, ev)
			errs[i] = tx.Commit(ctx)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	page, err := Feed(ctx, db, FeedQuery{Org: "org", Limit: 100, Now: time.Now().Add(time.Minute), Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 20 || page.More {
		t.Fatalf("%d feed events (more %v), want the 20 of the feed's types", len(page.Events), page.More)
	}
	for i := 1; i < len(page.Events); i++ {
		if page.Events[i].Sequence <= page.Events[i-1].Sequence {
			t.Fatalf("sequences out of order at %d: %d after %d", i, page.Events[i].Sequence, page.Events[i-1].Sequence)
		}
	}
	got := &sink{}
	d := &Dispatcher{DB: db, Routes: map[Type][]Sink{MatterCreated: {got}, CompanyEnrich: {got}}}
	n, err := d.Sweep(ctx, 0)
	var failed *FailedEvents
	if n != 20 || !errors.As(err, &failed) || failed.Parked != 10 || failed.UnknownTypes != 10 {
		t.Fatalf("swept %d, %v; want 20 sent and the 10 invoice.paid parked (no queue takes them)", n, err)
	}
	if len(got.sent) != 20 {
		t.Fatalf("%d sends, want 20", len(got.sent))
	}
	if n, err := d.Sweep(ctx, 0); n != 0 || err != nil {
		t.Fatalf("a second sweep sent %d: %v", n, err)
	}
}
