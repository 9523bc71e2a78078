// Package smoke checks a stage of the API from outside, read-only: the
// public document and page, authentication, a list with its rate-limit and
// caching headers, and the error shapes an integrator relies on. It writes
// nothing and leaves nothing behind. make smoke runs it by hand
// (scripts/cmd/smoke); the stage's synthetic check runs it every minute
// (functions/synthetic).
package smoke

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// check is one request and what its answer must be.
type check struct {
	name   string
	path   string
	key    string
	verify func(status int, h http.Header, body []byte) error
}

// Run checks the stage at base with key and reports each check to out; it
// returns how many failed. A base URL that is not https is refused unless
// it is on loopback (a local runtime). Without a key, the checks that need
// one are skipped (and said so): the public ones and the 401 still run.
func Run(ctx context.Context, base, key string, out io.Writer) (int, error) {
	return RunWith(ctx, &http.Client{Timeout: 15 * time.Second}, base, key, out)
}

// RunWith is Run with client's transport (a release's pre-traffic check
// sends the requests to the new version itself) and timeout.
func RunWith(ctx context.Context, client *http.Client, base, key string, out io.Writer) (int, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return 0, fmt.Errorf("SMOKE_BASE_URL %q is not a URL", base)
	}
	if ip := net.ParseIP(u.Hostname()); u.Scheme != "https" && !(u.Hostname() == "localhost" || ip != nil && ip.IsLoopback()) {
		return 0, fmt.Errorf("SMOKE_BASE_URL must be https (a key travels with it): %s", base)
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &c
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	absent := hex.EncodeToString(nonce[:4]) + "-0000-4000-8000-" + hex.EncodeToString(nonce[4:10])
	failed := 0
	for _, c := range checks(key, absent) {
		if key == "" && c.path != "/no-such-thing" && c.path != "/matters" && !strings.HasPrefix(c.path, "/docs") && c.path != "/openapi.json" {
			fmt.Fprintf(out, "skip  %-50s %6s  (no key)\n", c.name, "")
			continue
		}
		start := time.Now()
		err := c.run(ctx, client, base)
		took := time.Since(start).Round(time.Millisecond)
		if err != nil {
			failed++
			fmt.Fprintf(out, "FAIL  %-50s %6s  %v\n", c.name, took, err)
			continue
		}
		fmt.Fprintf(out, "ok    %-50s %6s\n", c.name, took)
	}
	return failed, nil
}

// checks are the smoke checks, read-only, with key (none: the public
// ones only) and a matter id that does not exist.
func checks(key, absent string) []check {
	return []check{
		{"the OpenAPI document is public", "/openapi.json", "", func(st int, h http.Header, b []byte) error {
			var doc struct {
				OpenAPI string `json:"openapi"`
				Info    struct{ Version string }
			}
			if err := want(st, 200); err != nil {
				return err
			}
			if json.Unmarshal(b, &doc) != nil || !strings.HasPrefix(doc.OpenAPI, "3.1") || doc.Info.Version == "" {
				return fmt.Errorf("not an OpenAPI 3.1 document: %.120s", b)
			}
			return nil
		}},
		{"the reference page is public, under its policy", "/docs", "", func(st int, h http.Header, b []byte) error {
			if err := want(st, 200); err != nil {
				return err
			}
			if !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
				return fmt.Errorf("Content-Type %q, Content-Security-Policy %q", h.Get("Content-Type"), h.Get("Content-Security-Policy"))
			}
			return nil
		}},
		{"no key is 401", "/matters", "", func(st int, h http.Header, b []byte) error {
			return errorAnswer(st, h, b, 401, "unauthenticated", "")
		}},
		{"the key lists matters, with its limits", "/matters?per_page=1", key, func(st int, h http.Header, b []byte) error {
			var page struct {
				Data  []map[string]any `json:"data"`
				Meta  map[string]any   `json:"meta"`
				Links map[string]any   `json:"links"`
			}
			if err := want(st, 200); err != nil {
				return fmt.Errorf("%w: %.200s", err, b)
			}
			if json.Unmarshal(b, &page) != nil || page.Data == nil || page.Meta == nil || page.Links == nil {
				return fmt.Errorf("not a page {data, meta, links}: %.200s", b)
			}
			for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit", "RateLimit-Policy", "X-Request-Id"} {
				if h.Get(name) == "" {
					return fmt.Errorf("no %s header", name)
				}
			}
			if h.Get("Cache-Control") != "no-store" {
				return fmt.Errorf("Cache-Control %q, want no-store", h.Get("Cache-Control"))
			}
			return nil
		}},
		{"an absent matter is 404", "/matters/" + absent, key, func(st int, h http.Header, b []byte) error {
			return errorAnswer(st, h, b, 404, "not_found", "")
		}},
		{"a bad filter is 422 on its field", "/matters?status=bogus", key, func(st int, h http.Header, b []byte) error {
			return errorAnswer(st, h, b, 422, "invalid_request", "status")
		}},
		{"an unknown path is a JSON 404", "/no-such-thing", key, func(st int, h http.Header, b []byte) error {
			return errorAnswer(st, h, b, 404, "no_such_endpoint", "")
		}},
	}
}

func (c check) run(ctx context.Context, client *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+c.path, nil)
	if err != nil {
		return err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	return c.verify(resp.StatusCode, resp.Header, body)
}

func want(status, code int) error {
	if status != code {
		return fmt.Errorf("status %d, want %d", status, code)
	}
	return nil
}

// errorAnswer checks an error answer: its status, its JSON code and
// message, and the field when one is named.
func errorAnswer(status int, h http.Header, body []byte, code int, errCode, field string) error {
	if err := want(status, code); err != nil {
		return fmt.Errorf("%w: %.200s", err, body)
	}
	var e struct{ Code, Message, Field string }
	if json.Unmarshal(body, &e) != nil || e.Code != errCode || e.Message == "" || e.Field != field {
		return fmt.Errorf("want {code: %s, message, field: %q}, got %.200s", errCode, field, body)
	}
	if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		return fmt.Errorf("Content-Type %q", h.Get("Content-Type"))
	}
	return nil
}
