package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/practice-api/practice-api/shared/store"
)

// Page size rules of the spec.
const (
	DefaultPerPage = 50
	MaxPerPage     = 100
)

// ListRequest is a validated list call: filters, page size and where to resume.
type ListRequest[F comparable] struct {
	Filter  F
	PerPage int
	After   store.StartKey
}

// Meta is the CursorMeta of every list response (docs/api.md).
type Meta struct {
	PerPage    int     `json:"per_page"`
	Count      int     `json:"count"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// Links holds the continuation URL, null on the last page.
type Links struct {
	Next *string `json:"next"`
}

// ListResponse is {data, meta, links}.
type ListResponse[T any] struct {
	Data  []T   `json:"data"`
	Meta  Meta  `json:"meta"`
	Links Links `json:"links"`
}

// ServeList is the one pagination helper: it validates per_page, parses the
// filters, opens the cursor (which carries the filters of the first page
// forward), calls fetch and writes {data, meta, links}. A filter sent
// alongside a cursor must equal the cursor's.
func ServeList[F comparable, T any](w http.ResponseWriter, r *http.Request, resource string,
	parse func(url.Values) (F, error),
	fetch func(ctx context.Context, org string, req ListRequest[F]) ([]T, store.StartKey, error),
) {
	q := r.URL.Query()
	env := envFrom(r.Context())
	perPage, err := PerPageParam(q)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	filter, err := parse(q)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	req := ListRequest[F]{Filter: filter, PerPage: perPage}
	raw, err := QueryValue(q, "cursor")
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if len(raw) > MaxCursor {
		WriteError(w, r, Invalid("cursor", "cursor is invalid; use links.next of a previous page of this list unchanged"))
		return
	}
	if raw != "" {
		c, err := env.sealer.open(raw)
		if err != nil || c.Org != env.client.OrgID || c.Resource != resource {
			WriteError(w, r, Invalid("cursor", "cursor is invalid; use links.next of a previous page of this list unchanged"))
			return
		}
		var fromCursor F
		if err := json.Unmarshal(c.Filter, &fromCursor); err != nil {
			WriteError(w, r, Invalid("cursor", "cursor is invalid; use links.next of a previous page of this list unchanged"))
			return
		}
		var zero F
		if filter != zero && filter != fromCursor {
			WriteError(w, r, Invalid("cursor", "the cursor carries the filters of the first page; send it without filters, or with the same ones"))
			return
		}
		req.Filter, req.After = fromCursor, c.After
	}
	items, next, err := fetch(r.Context(), env.client.OrgID, req)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if items == nil {
		items = []T{}
	}
	resp := ListResponse[T]{Data: items, Meta: Meta{PerPage: perPage, Count: len(items)}}
	if next != nil {
		f, err := json.Marshal(req.Filter)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		token, err := env.sealer.seal(cursor{Org: env.client.OrgID, Resource: resource, Filter: f, After: next})
		if err != nil {
			WriteError(w, r, err)
			return
		}
		link := nextURL(r, token, perPage)
		resp.Meta.HasMore, resp.Meta.NextCursor, resp.Links.Next = true, &token, &link
	}
	WriteJSON(w, http.StatusOK, resp)
}

// PerPageParam is per_page: DefaultPerPage when absent, 1 to MaxPerPage.
func PerPageParam(q url.Values) (int, error) {
	v, err := QueryValue(q, "per_page")
	if err != nil {
		return 0, err
	}
	if _, sent := q["per_page"]; !sent {
		return DefaultPerPage, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPerPage {
		return 0, Invalid("per_page", "per_page must be an integer from 1 to %d", MaxPerPage)
	}
	return n, nil
}

// nextURL is the absolute URL of the next page.
// MaxCursor bounds a cursor's length: every cursor the service makes is
// shorter (its filters and key are bounded), and a longer one is refused
// before it is opened.
const MaxCursor = 8192

func nextURL(r *http.Request, cursor string, perPage int) string {
	q := url.Values{"cursor": {cursor}}
	if perPage != DefaultPerPage {
		q.Set("per_page", strconv.Itoa(perPage))
	}
	return AbsoluteURL(r, r.URL.Path) + "?" + q.Encode()
}
