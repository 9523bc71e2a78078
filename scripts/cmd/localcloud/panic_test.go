package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/internal/localproc"
	"github.com/practice-api/practice-api/shared/cpr"
)

// The CPR spellings and the panic's value the devserver's and localcloud's
// panic tests share.
var (
	cprSpellings = localproc.CPRSpellings
	panicValue   = localproc.PanicValue
)

// forcePanics forces handler panics in the parties function's warm
// bootstrap (#38, item 1): localcloud's table faults answer its calls to
// the table with store.LocalFaultPanic (honoured because localcloud runs
// its functions with LOCAL_FAULTS=1 on a loopback engine: see that
// constant for why the panic is forced so), with a value quoting a CPR,
// while key's client reads people by paths and queries holding a CPR in
// each spelling, one at a time (the warm process serves each: a new
// one's init would meet the fault outside any request), and the others
// list their matters from another function meanwhile. Each read is the
// spec's JSON 500 (a message with its request id, no stack, no CPR); its
// invocation ends ok (the function answered; a crash would be a REPORT
// with another status); once the fault is gone the same process (no
// new init) serves person; each panic is a line of the function's with
// its request id, (redacted) value and path. The caller's scan of every
// line for a CPR covers these lines too.
func forcePanics(t *testing.T, c *cloud, key, person string, others []string) {
	t.Helper()
	inits := func() int {
		n := 0
		for _, l := range c.Lines() {
			if strings.HasPrefix(l, "[parties] REPORT ") && strings.Contains(l, "\tInit Duration: ") {
				n++
			}
		}
		return n
	}
	warm, began := inits(), time.Now()
	callControl(t, c, "POST", "/localcloud/faults", map[string]any{"function": "parties", "store": "panic", "message": panicValue})
	var wg sync.WaitGroup
	for _, k := range others {
		wg.Go(func() {
			for range 3 {
				if code, _, body := hangSend(t, c.Base, "GET", "/matters?per_page=5", k, ""); code != 200 {
					t.Errorf("another client's list while parties panics: %d %v", code, body)
				}
			}
		})
	}
	ids := map[string]string{} // request id -> path
	for _, s := range cprSpellings {
		path := "/people/" + url.PathEscape(s) + "?email=" + url.QueryEscape(s)
		code, id, raw := panicSend(t, c.Base+path, key)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		msg, _ := body["message"].(string)
		if code != 500 || body["code"] != "internal_error" || id == "" || !strings.Contains(msg, id) {
			t.Errorf("GET %s with a panic forced: %d %s; want the JSON 500 with its request id %q", path, code, raw, id)
		}
		if s := string(raw); cpr.Find(s) || strings.Contains(s, "goroutine") || strings.Contains(s, ".go:") || strings.Contains(s, "local fault") {
			t.Errorf("GET %s: the 500's body shows a CPR or the panic: %s", path, raw)
		}
		ids[id] = path
	}
	wg.Wait()
	callControl(t, c, "POST", "/localcloud/faults", map[string]any{"function": "parties", "store": "none"})
	if code, _, body := hangSend(t, c.Base, "GET", "/people/"+person, key, ""); code != 200 {
		t.Errorf("the panicked client's read once the fault is gone: %d %v", code, body)
	}
	if n := inits(); n != warm {
		t.Errorf("parties started %d new processes meanwhile: the one that panicked did not serve on", n-warm)
	}

	// Each invocation's REPORT (written as it ends) and panic line.
	deadline := time.Now().Add(30 * time.Second)
	for {
		reported, panics := map[string]bool{}, map[string]bool{}
		var bad []string
		for _, l := range c.Lines() {
			if rest, ok := strings.CutPrefix(l, "[parties] REPORT RequestId: "); ok {
				id, _, _ := strings.Cut(rest, "\t")
				if ids[id] != "" {
					reported[id] = true
					if !strings.Contains(l, "\tStatus: ok") {
						bad = append(bad, "an invocation that panicked did not end ok: "+l)
					}
				}
				continue
			}
			var rec struct {
				Msg, Panic, Stack, Path string
				ID                      string `json:"request_id"`
			}
			if js, ok := strings.CutPrefix(l, "[parties] "); !ok || json.Unmarshal([]byte(js), &rec) != nil || rec.Msg != "panic" {
				continue
			}
			if ids[rec.ID] == "" || rec.Stack == "" || !strings.Contains(rec.Panic, "local fault") || !strings.Contains(rec.Panic, cpr.Marker) || !strings.Contains(rec.Path, cpr.Marker) {
				bad = append(bad, "a panic line without a forced request's id, its stack, its (redacted) value or path: "+l[:min(len(l), 600)])
			}
			panics[rec.ID] = true
		}
		if len(reported) == len(ids) || time.Now().After(deadline) {
			for _, b := range bad {
				t.Error(b)
			}
			if len(reported) != len(ids) || len(panics) != len(ids) {
				t.Errorf("of %d forced panics, %d REPORT lines and %d panic lines", len(ids), len(reported), len(panics))
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d panics forced in parties' warm process in %v", len(ids), time.Since(began).Round(100*time.Millisecond))
}

func panicSend(t *testing.T, u, key string) (int, string, []byte) {
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Errorf("GET %s: %v", u, err)
		return 0, "", nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Request-Id"), raw
}
