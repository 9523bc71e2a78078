package outbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/practice-api/practice-api/shared/store"
)

// The feed is an organisation's events in sequence order: the range of
// EVT#<sequence> keys of its partition, written with the events
// themselves. A sequence is the commit's microsecond (store.DB.Sequence),
// and a transaction holding an event commits within store.SequenceWindow
// of it or not at all; so a reader that is served only sequences older
// than Settle (twice that window) never sees an event appear behind the
// point it has read to, and paging by `after` misses none and repeats
// none, while events are being written.

// MaxSeq is the highest sequence of sixteen digits (EVT#<16 digits>).
const MaxSeq = 9_999_999_999_999_999

// MaxAfter is the highest `after` GET /events takes: the largest integer a
// JSON number carries exactly in every client (2^53 − 1, the document's
// bound). Sequences are microseconds since 1970, so no event has one
// above it before the year 2255; a larger `after` is refused rather than
// wrapped round to the oldest event.
const MaxAfter = 1<<53 - 1

// DefaultSettle is how far behind now the feed is served.
const DefaultSettle = 10 * time.Second

// FeedQuery is one page of an organisation's feed.
type FeedQuery struct {
	Org   string
	After int64  // the last sequence the reader has; 0 for the oldest kept
	Types []Type // only these types; all when empty
	Limit int
	// Now, Settle and Retention bound the page: sequences older than
	// Now-Retention are gone, those newer than Now-Settle not served yet
	// (with no Settle, every event committed is: tests only).
	Now               time.Time
	Settle, Retention time.Duration
	// Until, when not zero, replaces the settle bound (a replay, which
	// queues what is there now: a later event reaches its endpoint anyway).
	Until time.Time
}

// FeedPage is a page of the feed: its events and whether more are there
// up to the bound.
type FeedPage struct {
	Events []Message
	More   bool
	// Next is where the reader resumes (its next After): the last sequence
	// the page read when there is more, and otherwise the newest sequence
	// the page could hold (every event up to it has been read, so a
	// filtered reader does not read the others again).
	Next int64
}

// Feed reads one page: a single Query of the organisation's partition
// over the sequence range, consistent (an event committed before the
// bound is read). With Types, the Query filters on type and reads at most
// four pages' worth of events: a page of a rare type may come back short,
// with More and Next to go on from.
func Feed(ctx context.Context, db *store.DB, q FeedQuery) (FeedPage, error) {
	oldest := q.Now.Add(-q.Retention).UnixMicro()
	upTo := q.Now.Add(-q.Settle).UnixMicro()
	unbounded := q.Settle <= 0 && q.Until.IsZero()
	switch {
	case !q.Until.IsZero():
		upTo = q.Until.UnixMicro()
	case unbounded:
		// No settle (tests): everything committed, and a reader goes on
		// from the last event it got.
		upTo = MaxSeq
	}
	if q.After >= MaxSeq || q.After < 0 { // after+1 would wrap to the oldest event
		return FeedPage{Next: max(q.After, 0)}, nil
	}
	from := max(q.After+1, oldest)
	page := FeedPage{Next: max(q.After, upTo)}
	if unbounded {
		page.Next = q.After
	}
	if from > upTo {
		return page, nil
	}
	lq := store.ListQuery{PK: store.OrgPK(q.Org), SKFrom: SeqSK(from), SKTo: SeqSK(upTo), Limit: q.Limit, Consistent: true, MaxReads: 1}
	if len(q.Types) > 0 {
		types := make([]expression.OperandBuilder, len(q.Types))
		for i, t := range q.Types {
			types[i] = expression.Value(string(t))
		}
		lq.Filter = expression.Name("type").In(types[0], types[1:]...)
	}
	res, err := db.Query(ctx, lq)
	if err != nil {
		return FeedPage{}, err
	}
	for _, it := range res.Items {
		var ev Event
		if err := store.Unmarshal(it, &ev); err != nil {
			return FeedPage{}, err
		}
		page.Events = append(page.Events, ev.Message())
		if unbounded {
			page.Next = max(page.Next, ev.Seq)
		}
	}
	if res.Next != nil {
		seq, err := SeqOf(res.Next[store.AttrSK])
		if err != nil {
			return FeedPage{}, err
		}
		page.More, page.Next = true, seq
	}
	return page, nil
}

// SeqOf is the sequence of a feed event's sort key.
func SeqOf(sk string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(sk, "EVT#"), 10, 64)
	if err != nil || !strings.HasPrefix(sk, "EVT#") {
		return 0, fmt.Errorf("outbox: %q is not a feed event's key", sk)
	}
	return n, nil
}

// FeedKeep is how long events of the feed are kept, for a page's bound.
func FeedKeep(retention time.Duration) time.Duration {
	if retention <= 0 {
		return DefaultFeedRetention
	}
	return retention
}
