package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/body"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/outbox"
)

// The event feed (GET /events) is an addition to the spec: every event of
// the organisation, oldest first, whatever endpoints exist, each as it is
// delivered (same id, envelope and data) with its sequence. See
// outbox.Feed for why a reader paging by `after` misses none and sees none
// twice while events are being written.

// EventsMeta is the meta of a page of the feed: next_after is where the
// reader goes on from, on the next page or, on the last one, at its next
// poll (every event up to it has been served).
type EventsMeta struct {
	PerPage   int   `json:"per_page"`
	Count     int   `json:"count"`
	HasMore   bool  `json:"has_more"`
	NextAfter int64 `json:"next_after"`
}

// EventsPage is GET /events's answer.
type EventsPage struct {
	Data  []outbox.Message `json:"data"`
	Meta  EventsMeta       `json:"meta"`
	Links httpapi.Links    `json:"links"`
}

// MaxTypesParam bounds ?event_types= as sent: every type, once, fits.
const MaxTypesParam = 1000

// feedTypesParam reads event_types: a comma-separated list of known types.
func feedTypesParam(q url.Values) ([]outbox.Type, error) {
	v, err := httpapi.QueryValue(q, "event_types")
	if err != nil || v == "" {
		return nil, err
	}
	if len(v) > MaxTypesParam {
		return nil, apperr.Invalidf("event_types", "event_types is longer than %d characters: name each type once", MaxTypesParam)
	}
	var types []outbox.Type
	for _, n := range strings.Split(v, ",") {
		t, err := outbox.ParseType(strings.TrimSpace(n))
		if err != nil {
			return nil, apperr.Invalidf("event_types", "%s (event_types is a comma-separated list)", err.Error())
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types, nil
}

// afterParam reads after: a sequence, 0 (the oldest kept) when absent.
func afterParam(q url.Values) (int64, error) {
	v, err := httpapi.QueryValue(q, "after")
	if err != nil || v == "" {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > outbox.MaxAfter {
		return 0, apperr.Invalidf("after", "after must be a sequence: a whole number from 0 to %d (the meta.next_after of the page before, or the sequence of the last event you have)", int64(outbox.MaxAfter))
	}
	return n, nil
}

// serveEvents answers GET /events.
func (s *Store) serveEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	perPage, err := httpapi.PerPageParam(q)
	var after int64
	var types []outbox.Type
	if err == nil {
		after, err = afterParam(q)
	}
	if err == nil {
		types, err = feedTypesParam(q)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	page, err := outbox.Feed(r.Context(), s.db, outbox.FeedQuery{Org: httpapi.OrgID(r.Context()), After: after, Types: types, Limit: perPage,
		Now: httpapi.Now(r.Context()), Settle: s.FeedSettle, Retention: outbox.FeedKeep(s.FeedRetention)})
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	resp := EventsPage{Data: page.Events, Meta: EventsMeta{PerPage: perPage, Count: len(page.Events), HasMore: page.More, NextAfter: page.Next}}
	if resp.Data == nil {
		resp.Data = []outbox.Message{}
	}
	if page.More {
		next := url.Values{"after": {strconv.FormatInt(page.Next, 10)}}
		if perPage != httpapi.DefaultPerPage {
			next.Set("per_page", strconv.Itoa(perPage))
		}
		if len(types) > 0 {
			next.Set("event_types", strings.Join(outbox.Names(types), ","))
		}
		link := httpapi.AbsoluteURL(r, r.URL.Path) + "?" + next.Encode()
		resp.Links.Next = &link
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// ReplayRequest is the body of POST /webhooks/{id}/replay: the events of
// the feed from Since (inclusive) to Until (exclusive; now when zero) of
// Types (the endpoint's subscriptions when empty).
type ReplayRequest struct {
	Since, Until time.Time
	Types        []outbox.Type
}

// parseReplay reads a replay body.
func (s *Store) parseReplay(raw []byte, now time.Time) (ReplayRequest, error) {
	b, err := body.Decode(raw)
	if err != nil {
		return ReplayRequest{}, err
	}
	// Each instant is checked by its value once it is sent and readable:
	// 0001-01-01T00:00:00Z is a time long before the feed, not "not sent".
	var req ReplayRequest
	since, sinceOK := b.Time("since", true)
	until, untilOK := b.Time("until", false)
	req.Since, req.Until = since, until
	if ts, ok := b.Strings("event_types", false); ok {
		req.Types = eventTypes(b, ts)
	}
	if sinceOK {
		s.checkWindow(b, "since", since, now)
	}
	if sinceOK && untilOK && !until.After(since) {
		b.Fail("until", "until must be after since (since is inclusive, until exclusive)")
	}
	return req, b.Err()
}

// checkWindow fails a replay's start that the feed no longer (or not yet)
// holds: any instant sent, the zero time included.
func (s *Store) checkWindow(b *body.Object, field string, since, now time.Time) {
	keep := outbox.FeedKeep(s.FeedRetention)
	switch oldest := now.Add(-keep); {
	case since.Before(oldest):
		b.Fail(field, "%s is before the oldest event kept: events are kept %s, so the oldest %s can be is %s; events before it are gone",
			field, keepText(keep), field, oldest.UTC().Format(time.RFC3339))
	case since.After(now):
		b.Fail(field, "%s is in the future; events that are not there yet reach the endpoint when they happen", field)
	}
}

// keepText is a retention as people say it.
func keepText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// replayError is the answer to a replay that cannot start.
func replayError(err error) error {
	var busy *ErrReplayBusy
	var spent *ErrReplayBudget
	switch {
	case errors.As(err, &busy):
		progress := fmt.Sprintf("%d of its %d events have had their first attempt", busy.Done, busy.Queued)
		if busy.Queued < 0 {
			progress = fmt.Sprintf("it is being queued, or its count was not recorded; %d events have had their first attempt so far", busy.Done)
		}
		return &apperr.Error{Kind: apperr.Conflict, RetryAfter: busy.RetryAfter,
			Message: fmt.Sprintf("a replay to this endpoint's URL is in progress (%s: %s); "+
				"one replay per URL of an organisation runs at a time, whichever endpoint names it: send this one again once it has finished", busy.ID, progress)}
	case errors.As(err, &spent):
		return &apperr.Error{Kind: apperr.BudgetExhausted, RetryAfter: spent.RetryAfter,
			Message: fmt.Sprintf("the organisation has replayed %d events this hour (UTC), its budget; nothing was queued or changed: send this again after Retry-After", spent.Limit)}
	case errors.Is(err, errEndpointOff):
		return &apperr.Error{Kind: apperr.Conflict, Message: "the endpoint is disabled; nothing is delivered to it until it is re-enabled: " +
			"PATCH it with is_active true (and replay_since, to queue what it missed in the same step)"}
	}
	return err
}
