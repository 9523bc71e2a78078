package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/listing"
)

// Page size rules of the spec.
const (
	DefaultPerPage = 50
	MaxPerPage     = 100
)

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

// Filter is a list's filters, which can say whether an item matches them
// (a batch read by ids combines with the other filters: AND).
type Filter[T any] interface {
	comparable
	Matches(T) bool
}

// ByIDs reads the items of org with the given ids (canonical, distinct,
// at most MaxIDs) in one round to the store, in the order of ids; ids
// that name nothing of org (absent, or another organisation's) are left
// out.
type ByIDs[T any] func(ctx context.Context, org string, ids []string) ([]T, error)

// MaxIDs is the most ids one list request takes (BatchGetItem's limit).
const MaxIDs = listing.MaxBatchRead

// ServeList is the one pagination helper: it validates per_page, parses the
// filters, opens the cursor (which carries the filters of the first page
// forward), calls fetch and writes {data, meta, links}. A filter sent
// alongside a cursor must equal the cursor's. With ids (when byIDs is not
// nil), it answers the items of those ids that match the other filters,
// read by byIDs, in one page (serveIDs).
func ServeList[F Filter[T], T any](w http.ResponseWriter, r *http.Request, resource string,
	parse func(url.Values) (F, error),
	fetch func(ctx context.Context, org string, req listing.Request[F]) ([]T, listing.StartKey, error),
	byIDs ByIDs[T],
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
	req := listing.Request[F]{Filter: filter, PerPage: perPage}
	raw, err := QueryValue(q, "cursor")
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if byIDs != nil {
		ids, err := IDsParam(q)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		if len(ids) > 0 {
			if raw != "" {
				WriteError(w, r, Invalid("cursor", "ids answers in one page, so it takes no cursor: send ids without it"))
				return
			}
			serveIDs(w, r, env.client.OrgID, filter, ids, byIDs)
			return
		}
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

// serveIDs answers a list with ids: the items of those ids that match the
// other filters, in the order of ids, in one page (meta.per_page is the
// number of ids; has_more false, links.next null).
func serveIDs[F Filter[T], T any](w http.ResponseWriter, r *http.Request, org string, filter F, ids []string, byIDs ByIDs[T]) {
	items, err := byIDs(r.Context(), org, ids)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		if filter.Matches(it) {
			out = append(out, it)
		}
	}
	WriteJSON(w, http.StatusOK, ListResponse[T]{Data: out, Meta: Meta{PerPage: len(ids), Count: len(out)}})
}

// IDsParam is ids: comma-separated UUIDs, at most MaxIDs, in canonical
// (lower-case) form, each once in the order first sent; none when absent
// or empty.
func IDsParam(q url.Values) ([]string, error) {
	v, err := QueryValue(q, "ids")
	if err != nil || v == "" {
		return nil, err
	}
	if len(v) > MaxIDs*37 {
		return nil, Invalid("ids", "ids holds at most %d ids (comma-separated UUIDs)", MaxIDs)
	}
	parts := strings.Split(v, ",")
	if len(parts) > MaxIDs {
		return nil, Invalid("ids", "ids holds at most %d ids, not %d: ask in several requests", MaxIDs, len(parts))
	}
	var ids []string
	for i, p := range parts {
		id, err := uuid.Parse(p)
		if err != nil || len(p) != 36 {
			return nil, Invalid("ids", "ids must be comma-separated UUIDs such as 0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10,6d4f2e1a-9b8c-4d7e-8f6a-5b4c3d2e1f0a; its entry %d (%q) is not one", i+1, Clip(p, 40))
		}
		if !slices.Contains(ids, id.String()) {
			ids = append(ids, id.String())
		}
	}
	return ids, nil
}

// Since reports whether a record changed at updatedAt matches the filter
// updated_since (listing.FormatTime; "" for none).
func Since(updatedAt, since string) bool { return since == "" || updatedAt >= since }

// Between reports whether v lies in the inclusive range [from, to] (either
// "" for no bound).
func Between(v, from, to string) bool { return (from == "" || v >= from) && (to == "" || v <= to) }

// Is reports whether v equals the filter want ("" for any).
func Is[S ~string](v, want S) bool { return want == "" || v == want }
