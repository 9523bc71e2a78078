// Package client is a Go client of the Practice API (/api/v1) for
// integrators: typed resources, cursor iteration, idempotency keys, and
// rate limits handled by honouring Retry-After. It depends on nothing of
// the service's own.
package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one base URL (ending in /api/v1) with one API key.
type Client struct {
	BaseURL string
	Key     string
	HTTP    *http.Client
	// MaxRetries bounds the retries of a rate-limited (429), unavailable
	// (503) or still-running (409 with Retry-After: the same Idempotency-Key
	// is in flight) request; each waits for the server's Retry-After.
	MaxRetries int
	// MaxWait caps one wait for the server's Retry-After (0: DefaultMaxWait).
	// An answer asking for longer is not waited for: Do returns a
	// *WaitTooLongError saying how long it asked and this cap, so a
	// misbehaving server or proxy (Retry-After: 2147483647) cannot park the
	// caller for decades.
	MaxWait time.Duration
	// MaxBodyBytes caps the answer the client reads (0: DefaultMaxBodyBytes):
	// a longer one is not read into memory; Do returns an error naming the
	// cap. A page of 100 records is well under 1 MiB.
	MaxBodyBytes int64
	// Sleep waits (tests replace it); default time.Sleep honouring ctx.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Defaults of New.
const (
	// DefaultMaxWait is the longest the client waits for one Retry-After.
	DefaultMaxWait = 15 * time.Minute
	// DefaultMaxBodyBytes is the largest answer the client reads.
	DefaultMaxBodyBytes = 16 << 20
)

// New returns a client with sensible defaults: 30 s a request, 5 retries,
// waits of at most DefaultMaxWait, answers of at most DefaultMaxBodyBytes.
// It follows no redirect (Do refuses one, with any *http.Client): a 3xx
// would carry the API key and the body to wherever it points.
func New(baseURL, key string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Key: key, HTTP: &http.Client{Timeout: 30 * time.Second},
		MaxRetries: 5, MaxWait: DefaultMaxWait, MaxBodyBytes: DefaultMaxBodyBytes}
}

// WaitTooLongError is an answer whose Retry-After asked for a longer wait
// than the client's MaxWait: the client did not wait. Err is the answer
// (a 429, 503 or 409).
type WaitTooLongError struct {
	Wait, MaxWait time.Duration
	Err           *Error
}

func (e *WaitTooLongError) Error() string {
	return fmt.Sprintf("%v; the server asked to wait %s before retrying, longer than the %s this client waits at most (MaxWait): not retried", e.Err, e.Wait, e.MaxWait)
}

// Unwrap is the answer's *Error.
func (e *WaitTooLongError) Unwrap() error { return e.Err }

// RedirectError is a 3xx answer: the client follows no redirect (it would
// send the API key and the body to the address it names).
type RedirectError struct {
	Status   int
	Location string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("%d: the server redirected to %q; the client follows no redirect (it would send the API key there): set BaseURL to the API's address", e.Status, e.Location)
}

// TooLargeError is an answer longer than the client's MaxBodyBytes: it was
// not read.
type TooLargeError struct {
	Status int
	Limit  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%d: the answer is longer than %d bytes, the most this client reads (MaxBodyBytes): not read", e.Status, e.Limit)
}

func (c *Client) maxWait() time.Duration { return cmp.Or(c.MaxWait, DefaultMaxWait) }

func (c *Client) maxBody() int64 { return cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes) }

// httpClient is c.HTTP (or a default) with redirects turned into answers:
// Do refuses them.
func (c *Client) httpClient() *http.Client {
	hc := http.Client{Timeout: 30 * time.Second}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &hc
}

// sameOrigin reports whether two URLs have the same scheme, host and port.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host) && ua.User == nil
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date. ok is
// false when there is none (or it cannot be read). A wait too long for a
// time.Duration is returned as the longest one.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > int64(math.MaxInt64/time.Second) {
			return math.MaxInt64, true
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// FieldError is one invalid field of a 422.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is an API error answer.
type Error struct {
	Status int `json:"-"`
	// Code is the stable kind of problem (the reference page lists them:
	// invalid_request, already_exists, not_found, rate_limited, …): branch
	// on it, not on Message.
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Field   string       `json:"field,omitempty"`
	Errors  []FieldError `json:"errors,omitempty"`
	// ErrorsTotal is, when Errors lists only the first 50 problems, how
	// many there were.
	ErrorsTotal   int    `json:"errors_total,omitempty"`
	RequiredScope string `json:"required_scope,omitempty"`
	// ExistingID is, for already_exists, the record that holds the unique
	// value (a duplicate CVR's company, e-mail's person, party's
	// engagement, matter number's matter).
	ExistingID string `json:"existing_id,omitempty"`
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Field, e.Message)
	}
	return fmt.Sprintf("%d: %s", e.Status, e.Message)
}

// RateLimit is what the last answer said about the client's budget.
type RateLimit struct {
	Limit, Remaining int
	Reset            time.Time
}

// Response is an answer's status and headers.
type Response struct {
	Status    int
	Replayed  bool // Idempotent-Replayed: true
	Location  string
	RateLimit RateLimit
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Do sends a request (path below the base URL, or a full URL) and decodes a
// 2xx body into out. It retries 429 and 503 after Retry-After, unless that
// is longer than MaxWait (*WaitTooLongError). It reads at most
// MaxBodyBytes of an answer (*TooLargeError) and follows no redirect
// (*RedirectError), nor a full URL (links.next) to another server.
func (c *Client) Do(ctx context.Context, method, path string, headers map[string]string, body, out any) (Response, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return Response{}, err
		}
	}
	u := path
	if !strings.HasPrefix(path, "http") {
		u = c.BaseURL + path
	} else if !sameOrigin(path, c.BaseURL) {
		// A full URL comes from an answer (links.next): one naming another
		// server would get the API key, as a redirect would.
		return Response{}, fmt.Errorf("%s %s: the answer pointed to another server than %s; the client sends the API key only to its BaseURL's", method, path, c.BaseURL)
	}
	hc := c.httpClient()
	for attempt := 0; ; attempt++ {
		r, data, h, err := c.send(ctx, hc, method, u, raw, headers)
		if err != nil {
			return r, err
		}
		if r.Status >= 200 && r.Status < 300 {
			if out != nil && len(data) > 0 {
				if err := json.Unmarshal(data, out); err != nil {
					return r, fmt.Errorf("decode %s %s: %w", method, path, err)
				}
			}
			return r, nil
		}
		apiErr := &Error{Status: r.Status}
		_ = json.Unmarshal(data, apiErr)
		apiErr.RetryAfter, _ = retryAfter(h.Get("Retry-After"), time.Now())
		retryable := r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable ||
			r.Status == http.StatusConflict && apiErr.RetryAfter > 0
		if retryable && apiErr.RetryAfter > c.maxWait() {
			return r, &WaitTooLongError{Wait: apiErr.RetryAfter, MaxWait: c.maxWait(), Err: apiErr}
		}
		if retryable && attempt < c.MaxRetries {
			if err := c.sleep(ctx, max(apiErr.RetryAfter, time.Second)); err != nil {
				return r, err
			}
			continue
		}
		return r, apiErr
	}
}

// send makes one attempt of a request: its answer (status, replay,
// location, rate limit), body and headers; an error is one no retry
// mends (the connection, a body over MaxBody, a redirect).
func (c *Client) send(ctx context.Context, hc *http.Client, method, u string, raw []byte, headers map[string]string) (Response, []byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(raw))
	if err != nil {
		return Response{}, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Response{}, nil, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody()+1))
	resp.Body.Close()
	if err != nil {
		return Response{}, nil, nil, err
	}
	if int64(len(data)) > c.maxBody() {
		return Response{Status: resp.StatusCode}, nil, nil, &TooLargeError{Status: resp.StatusCode, Limit: c.maxBody()}
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
		return Response{Status: resp.StatusCode}, nil, nil, &RedirectError{Status: resp.StatusCode, Location: resp.Header.Get("Location")}
	}
	r := Response{Status: resp.StatusCode, Replayed: resp.Header.Get("Idempotent-Replayed") == "true", Location: resp.Header.Get("Location")}
	r.RateLimit.Limit, _ = strconv.Atoi(resp.Header.Get("X-RateLimit-Limit"))
	r.RateLimit.Remaining, _ = strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
	if s, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		r.RateLimit.Reset = time.Unix(s, 0)
	}
	return r, data, resp.Header, nil
}

// NewIdempotencyKey returns a random key, for creates without a source id.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type page[T any] struct {
	Data  []T `json:"data"`
	Links struct {
		Next *string `json:"next"`
	} `json:"links"`
}

// List iterates every item of a list endpoint, following links.next; the
// filters ride in the cursor after the first page. Only the link's query
// (cursor, per_page) is taken, asked of path on BaseURL's server: a link
// naming another server (a PUBLIC_BASE_URL other than the address called,
// or an answer that is not the API's) gets neither the key nor a request.
func List[T any](ctx context.Context, c *Client, path string, filters url.Values) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		next := path
		if len(filters) > 0 {
			next += "?" + filters.Encode()
		}
		for next != "" {
			var p page[T]
			if _, err := c.Do(ctx, http.MethodGet, next, nil, nil, &p); err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Data {
				if !yield(it, nil) {
					return
				}
			}
			next = ""
			if p.Links.Next != nil {
				link, err := url.Parse(*p.Links.Next)
				if err != nil || link.RawQuery == "" {
					var zero T
					yield(zero, fmt.Errorf("GET %s: links.next %q is not a link to a next page", path, *p.Links.Next))
					return
				}
				next = path + "?" + link.RawQuery
			}
		}
	}
}

// Get reads one resource.
func Get[T any](ctx context.Context, c *Client, path string) (T, error) {
	var out struct{ Data T }
	_, err := c.Do(ctx, http.MethodGet, path, nil, nil, &out)
	return out.Data, err
}

// Create posts body under idempotencyKey (a fresh one when empty) and
// returns the resource, and whether the answer was a replay.
func Create[T any](ctx context.Context, c *Client, path, idempotencyKey string, body any) (T, Response, error) {
	if idempotencyKey == "" {
		idempotencyKey = NewIdempotencyKey()
	}
	var out struct{ Data T }
	r, err := c.Do(ctx, http.MethodPost, path, map[string]string{"Idempotency-Key": idempotencyKey}, body, &out)
	return out.Data, r, err
}
