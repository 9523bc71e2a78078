package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event is an event of the organisation's feed, as it is delivered: the
// same id, envelope and data, with its sequence.
type Event struct {
	ID             string          `json:"id"`
	Event          string          `json:"event"`
	Timestamp      string          `json:"timestamp"`
	OrganizationID string          `json:"organization_id"`
	Sequence       int64           `json:"sequence"`
	Data           json.RawMessage `json:"data"`
}

// EventPage is one page of the feed. NextAfter is the after of the next
// call: of the next page while HasMore, and otherwise of the next poll.
type EventPage struct {
	Data []Event `json:"data"`
	Meta struct {
		PerPage   int   `json:"per_page"`
		Count     int   `json:"count"`
		HasMore   bool  `json:"has_more"`
		NextAfter int64 `json:"next_after"`
	} `json:"meta"`
}

// EventsPage reads one page of the feed after the sequence after (0: the
// oldest kept), of types (all when none); perPage 0 is the server's default.
func (c *Client) EventsPage(ctx context.Context, after int64, perPage int, types ...string) (EventPage, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if perPage > 0 {
		q.Set("per_page", strconv.Itoa(perPage))
	}
	if len(types) > 0 {
		q.Set("event_types", strings.Join(types, ","))
	}
	path := "/events"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p EventPage
	_, err := c.Do(ctx, http.MethodGet, path, nil, nil, &p)
	return p, err
}

// Events iterates the feed after the sequence after, oldest first, until
// it has read all there is now. To follow the feed, keep the Sequence of
// the last event handled and call Events again from it: an event is never
// skipped or repeated (the feed lists events once every event before them
// is there).
func (c *Client) Events(ctx context.Context, after int64, types ...string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			p, err := c.EventsPage(ctx, after, 100, types...)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range p.Data {
				if !yield(ev, nil) {
					return
				}
			}
			if !p.Meta.HasMore {
				return
			}
			after = p.Meta.NextAfter
		}
	}
}

// Replay is a replay the server queued.
type Replay struct {
	ID         string   `json:"id"`
	EndpointID string   `json:"endpoint_id"`
	Since      string   `json:"since"`
	Until      string   `json:"until"`
	EventTypes []string `json:"event_types"`
	Queued     int      `json:"queued"`
	Truncated  bool     `json:"truncated"`
	NextSince  *string  `json:"next_since"`
}

// Replay queues the feed's events from since (inclusive) to until
// (exclusive; now when zero) of types (the endpoint's when none) to a
// webhook endpoint again. A window of more than the server's maximum
// answers Truncated with NextSince: call again from it once this replay
// has been sent (one replay per endpoint runs at a time; a second is a 409
// with Retry-After, which Do retries up to MaxRetries).
func (c *Client) Replay(ctx context.Context, endpointID string, since, until time.Time, types ...string) (Replay, error) {
	body := map[string]any{"since": since.UTC().Format(time.RFC3339Nano)}
	if !until.IsZero() {
		body["until"] = until.UTC().Format(time.RFC3339Nano)
	}
	if len(types) > 0 {
		body["event_types"] = types
	}
	var out struct{ Data Replay }
	_, err := c.Do(ctx, http.MethodPost, "/webhooks/"+url.PathEscape(endpointID)+"/replay", nil, body, &out)
	return out.Data, err
}
