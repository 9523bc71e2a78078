package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/client"
)

// The client trusts nothing a server says (#38, item 6): each answer below
// is what a misbehaving server or a proxy in the way sent the probe, and
// every case runs at once, each on a server of its own.

// A Retry-After longer than MaxWait (2147483647 seconds, an HTTP date
// years away, a number too large for a time.Duration) is not slept: the
// error says how long it asked and the cap. One within the cap is slept and
// retried.
func TestRetryAfterIsCapped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, retryAfter string
		status           int
		maxWait          time.Duration
		wantWait         string // in the error; "" when it is retried
	}{
		{"int32 max", "2147483647", 429, 0, "596523h14m7s"},
		{"beyond a Duration", "99999999999999999", 503, 0, "2562047h47m16.854775807s"},
		{"an HTTP date years away", time.Now().AddDate(30, 0, 0).UTC().Format(http.TimeFormat), 429, 0, "h"},
		{"a second over a smaller cap", "61", 429, time.Minute, "1m1s"},
		{"in-flight key", "3600", 409, 0, "1h0m0s"},
		{"within the cap", "900", 429, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) > 1 {
					fmt.Fprint(w, `{"data":{"id":"m1"}}`)
					return
				}
				w.Header().Set("Retry-After", tc.retryAfter)
				w.WriteHeader(tc.status)
				fmt.Fprint(w, `{"code":"rate_limited","message":"slow down"}`)
			}))
			t.Cleanup(srv.Close)
			c := client.New(srv.URL, "pa_live_secret")
			if tc.maxWait > 0 {
				c.MaxWait = tc.maxWait
			}
			var slept []time.Duration
			c.Sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
			_, err := c.Do(context.Background(), "GET", "/matters/m1", nil, nil, nil)
			if tc.wantWait == "" {
				if err != nil || len(slept) != 1 || slept[0] != 15*time.Minute {
					t.Fatalf("within the cap: err %v, slept %v; want one wait of 15m", err, slept)
				}
				return
			}
			var long *client.WaitTooLongError
			var apiErr *client.Error
			if !errors.As(err, &long) || !errors.As(err, &apiErr) || apiErr.Status != tc.status || len(slept) != 0 || calls.Load() != 1 {
				t.Fatalf("err %v (%T), slept %v, %d calls: want a WaitTooLongError, no sleep, one call", err, err, slept, calls.Load())
			}
			cap := cmpOr(tc.maxWait, client.DefaultMaxWait).String()
			if msg := err.Error(); !strings.Contains(msg, tc.wantWait) || !strings.Contains(msg, cap) || !strings.Contains(msg, "MaxWait") {
				t.Fatalf("the error %q should name the wait (%s) and the cap (%s, MaxWait)", msg, tc.wantWait, cap)
			}
		})
	}
}

func cmpOr(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

// An answer longer than MaxBodyBytes is not read into memory: 300 MB
// streamed (the probe's answer, which took 641 MB) ends in a TooLargeError
// after about the cap, a 2xx and an error answer alike, and the heap does
// not grow by anything like the answer.
func TestAnswersAreReadThroughALimit(t *testing.T) {
	t.Parallel()
	for _, status := range []int{200, 500} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			var sent atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(status)
				chunk := []byte(`{"data":[` + strings.Repeat(`"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",`, 2000))
				for sent.Load() < 300<<20 {
					n, err := w.Write(chunk)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			t.Cleanup(srv.Close)
			c := client.New(srv.URL, "k")
			c.MaxBodyBytes = 1 << 20
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var out any
			_, err := c.Do(context.Background(), "GET", "/matters", nil, nil, &out)
			var tooLarge *client.TooLargeError
			if !errors.As(err, &tooLarge) || tooLarge.Limit != 1<<20 || !strings.Contains(err.Error(), "1048576 bytes") {
				t.Fatalf("err %v (%T), want a TooLargeError naming 1048576 bytes", err, err)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > 64<<20 {
				t.Fatalf("allocated %d MB reading an answer capped at 1 MiB", grew>>20)
			}
		})
	}
	// The default cap holds an ordinary page with room to spare.
	if client.DefaultMaxBodyBytes < 1<<20 {
		t.Fatalf("DefaultMaxBodyBytes %d is smaller than a page of 100 records", client.DefaultMaxBodyBytes)
	}
}

// A redirect is refused, with the client from New and with an
// *http.Client of the caller's (whose default policy follows): a 307 to
// another port does not reach it, so neither the key nor the body leave.
func TestRedirectsAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		own    bool
	}{{"307", 307, false}, {"308 with the caller's http.Client", 308, true}, {"302", 302, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var leaked atomic.Value
			elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				leaked.Store(r.Header.Get("Authorization") + " " + string(body))
			}))
			t.Cleanup(elsewhere.Close)
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+"/steal", tc.status)
			}))
			t.Cleanup(api.Close)
			c := client.New(api.URL, "pa_live_secret")
			if tc.own {
				c.HTTP = &http.Client{}
			}
			_, err := c.Do(context.Background(), "POST", "/matters", nil, map[string]string{"title": "Lejekontrakt"}, nil)
			var redirect *client.RedirectError
			if !errors.As(err, &redirect) || redirect.Status != tc.status || !strings.Contains(err.Error(), elsewhere.URL) {
				t.Fatalf("err %v (%T), want a RedirectError naming %s", err, err, elsewhere.URL)
			}
			if l := leaked.Load(); l != nil {
				t.Fatalf("the redirect was followed: the other server got %q", l)
			}
			if tc.own && c.HTTP.CheckRedirect != nil {
				t.Fatal("the caller's http.Client was changed")
			}
		})
	}
}

// A page whose links.next names another server is asked of the client's
// own (its cursor is what matters): the key goes only to the BaseURL's
// server. Do refuses a full URL to another server.
func TestNextLinksStayOnTheServer(t *testing.T) {
	t.Parallel()
	var leaked atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(true)
		fmt.Fprint(w, `{"data":[{"id":"stolen"}],"links":{"next":null}}`)
	}))
	t.Cleanup(elsewhere.Close)
	var api *httptest.Server
	api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("cursor") {
		case "":
			fmt.Fprintf(w, `{"data":[{"id":"m1"}],"links":{"next":%q}}`, api.URL+"/api/v1/matters?cursor=2")
		case "2":
			fmt.Fprintf(w, `{"data":[{"id":"m2"}],"links":{"next":%q}}`, elsewhere.URL+"/api/v1/matters?cursor=3")
		case "3":
			fmt.Fprint(w, `{"data":[{"id":"m3"}],"links":{"next":null}}`)
		}
	}))
	t.Cleanup(api.Close)
	c := client.New(api.URL+"/api/v1", "pa_live_secret")
	var ids []string
	for m, err := range c.Matters(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "m1,m2,m3" {
		t.Fatalf("read %v, want m1, m2, m3 (page 3 asked of the client's own server)", ids)
	}
	_, err := c.Do(context.Background(), "GET", elsewhere.URL+"/api/v1/matters", nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("Do with another server's URL: %v", err)
	}
	if leaked.Load() {
		t.Fatal("the other server was called")
	}
}
