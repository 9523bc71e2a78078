package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// controlOf reads the control endpoint from localcloud's ready line.
func controlOf(t *testing.T, c *cloud) string {
	t.Helper()
	for _, line := range c.log() {
		var l struct {
			Msg     string `json:"msg"`
			Control string `json:"control_endpoint"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "localcloud ready" {
			return l.Control
		}
	}
	t.Fatal("no control_endpoint in the ready line")
	return ""
}

// callControl sends one request to localcloud's release API.
func callControl(t *testing.T, c *cloud, method, path string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, controlOf(t, c)+path, rd)
	req.Header.Set("X-Localcloud-Key", c.sqsKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, out)
	}
	return out
}

// buildBootstrap builds a function's bootstrap for this machine.
func buildBootstrap(t *testing.T, pkg string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "lambda.norpc", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// tally is what the traffic saw.
type tally struct {
	mu                   sync.Mutex
	get, get500, list    int
	other, transportErrs int
	examples             []string
}

// traffic sends GET /matters/{id} and GET /matters in turn from workers
// until stop is closed, counting answers.
func traffic(t *testing.T, c *cloud, id string, workers int, stop <-chan struct{}, tl *tally) *sync.WaitGroup {
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 40 * time.Second}
	for w := range workers {
		wg.Go(func() {
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				path := "/matters?per_page=1"
				if i%2 == 0 {
					path = "/matters/" + id
				}
				req, _ := http.NewRequest("GET", c.Base+path, nil)
				req.Header.Set("Authorization", "Bearer "+c.DemoKey)
				resp, err := client.Do(req)
				tl.mu.Lock()
				switch {
				case err != nil:
					tl.transportErrs++
					tl.examples = append(tl.examples, err.Error())
				default:
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					switch {
					case path != "/matters?per_page=1" && resp.StatusCode == 200:
						tl.get++
					case path != "/matters?per_page=1" && resp.StatusCode == 500 && strings.Contains(string(b), "broken on purpose"):
						tl.get++
						tl.get500++
					case path == "/matters?per_page=1" && resp.StatusCode == 200:
						tl.list++
					default:
						tl.other++
						tl.examples = append(tl.examples, fmt.Sprintf("%s: %d %.100s", path, resp.StatusCode, b))
					}
				}
				tl.mu.Unlock()
			}
		})
	}
	return &wg
}

// release publishes bootstrap as the matters function's next version,
// deploys it with config, and waits for the deployment to end.
func release(t *testing.T, c *cloud, bootstrap, config string) map[string]any {
	t.Helper()
	d := callControl(t, c, "POST", "/localcloud/releases", map[string]string{"function": "matters", "bootstrap": bootstrap, "deployment": config})
	t.Logf("release %v: version %v → %v, %v", d["deployment_id"], d["from"], d["to"], d["config"])
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		st := callControl(t, c, "GET", "/localcloud/releases/"+d["deployment_id"].(string), nil)
		if st["status"] != "InProgress" {
			return st
		}
	}
	t.Fatalf("the deployment did not end in 90 s")
	return nil
}

// TestABadReleaseRollsBackAndAGoodOneGoesOut rehearses a release on one
// localcloud whose clocks run 60 times faster (LOCALCLOUD_TIME_SCALE=60:
// a one-minute alarm period is a second, the ten-minute canary ten
// seconds): under steady traffic, a build of the matters function that
// answers 500 on GET /matters/{matter} goes out behind the canary
// (canary10Percent10Minutes), serves at most the canary's tenth of the
// requests, its version's 5xx alarm (the template's, per version, from the
// functions' EMF lines) fires, CodeDeploy moves the alias back, and no
// request is lost; then a good build goes out linearly
// (linear10PercentEvery1Minute) to all of the traffic.
// make local-cloud-release runs it with its narrative (-v).
func TestABadReleaseRollsBackAndAGoodOneGoesOut(t *testing.T) {
	t.Parallel() // one stack of its own; it overlaps the alarm campaign
	c := start(t, "LOCALCLOUD_TIME_SCALE=60")
	bad := buildBootstrap(t, "./scripts/cmd/localcloud/testdata/brokenmatters")
	good := buildBootstrap(t, "./functions/matters")
	_, body := c.do(t, "GET", "/matters?per_page=1", "")
	var page struct {
		Data []struct{ ID string } `json:"data"`
	}
	if json.Unmarshal(body, &page) != nil || len(page.Data) == 0 {
		t.Fatalf("no demo matter: %s", body)
	}
	id := page.Data[0].ID

	// The bad build, behind the canary.
	var tl tally
	stop := make(chan struct{})
	wg := traffic(t, c, id, 8, stop, &tl)
	time.Sleep(2 * time.Second) // the old version's steady state
	began := time.Now()
	st := release(t, c, bad, "canary10Percent10Minutes")
	took := time.Since(began)
	tl.mu.Lock()
	get, get500 := tl.get, tl.get500
	tl.mu.Unlock()
	time.Sleep(time.Second)
	tl.mu.Lock()
	after500 := tl.get500 - get500
	tl.mu.Unlock()
	close(stop)
	wg.Wait()
	t.Logf("bad build: %v after %v (%s); %d GET /matters/{matter} during it, %d of them 500 (%.1f%%); %d lists; %d other answers; %d transport errors",
		st["status"], took.Round(100*time.Millisecond), st["reason"], get, get500, 100*float64(get500)/float64(max(get, 1)), tl.list, tl.other, tl.transportErrs)
	if st["status"] != "Stopped" || !strings.Contains(fmt.Sprint(st["reason"]), "mattersversion5xx") || !strings.Contains(fmt.Sprint(st["reason"]), "rolled back to version 1") {
		t.Errorf("the bad release: %v", st)
	}
	if get500 == 0 || float64(get500) > 0.1*float64(get)+2 {
		t.Errorf("the bad build answered %d of %d GETs: want some, and at most the canary's tenth", get500, get)
	}
	if after500 != 0 || tl.other != 0 || tl.transportErrs != 0 {
		t.Errorf("after the rollback %d 500s; %d unexpected answers, %d lost requests: %v", after500, tl.other, tl.transportErrs, tl.examples[:min(3, len(tl.examples))])
	}
	alarmed := false
	for _, l := range c.log() {
		alarmed = alarmed || (strings.Contains(l, `"msg":"cloudwatch alarm"`) && strings.Contains(l, `mattersversion5xx`) && strings.Contains(l, `"to":"ALARM"`))
	}
	if !alarmed {
		t.Error("no ALARM of the version's 5xx alarm in the log")
	}

	// Wait for the version alarms to settle back on version 1, then the good build.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		al := callControl(t, c, "GET", "/localcloud/alarms", nil)
		if s, _ := al[alarmID(al, "mattersversion5xx")].(map[string]any); s["state"] != "ALARM" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the version's 5xx alarm stayed in ALARM after the rollback")
		}
	}
	var tl2 tally
	stop2 := make(chan struct{})
	wg2 := traffic(t, c, id, 4, stop2, &tl2)
	began = time.Now()
	st = release(t, c, good, "linear10PercentEvery1Minute")
	took = time.Since(began)
	time.Sleep(500 * time.Millisecond)
	close(stop2)
	wg2.Wait()
	t.Logf("good build: %v after %v; %d GETs, %d lists, %d other, %d lost", st["status"], took.Round(100*time.Millisecond), tl2.get, tl2.list, tl2.other, tl2.transportErrs)
	if st["status"] != "Succeeded" || tl2.get500 != 0 || tl2.other != 0 || tl2.transportErrs != 0 {
		t.Errorf("the good release: %v; %d 500s, %d other, %d lost: %v", st, tl2.get500, tl2.other, tl2.transportErrs, tl2.examples[:min(3, len(tl2.examples))])
	}
	resp, _ := c.do(t, "GET", "/matters/"+id, "")
	if got := c.servedVersion(resp.Header.Get("X-Request-Id")); resp.StatusCode != 200 || got != fmt.Sprint(st["to"]) {
		t.Errorf("after the good release, GET /matters/{matter}: %d from version %q, want 200 from %v", resp.StatusCode, got, st["to"])
	}
	// Each release ran its pre-traffic hook first: the release check
	// passed both builds (the broken route needs a key, which the local
	// stage's checks do not have) and CodeDeploy went on.
	passed, hooked := 0, 0
	for _, l := range c.log() {
		if strings.Contains(l, `"msg":"release check passed"`) {
			passed++
		}
		if strings.Contains(l, `"msg":"codedeploy lifecycle hook succeeded"`) {
			hooked++
		}
	}
	if passed != 2 || hooked != 2 {
		t.Errorf("%d release checks passed and %d hooks succeeded, want 2 of each (one per release)", passed, hooked)
	}
}

// alarmID is the logical id of the alarm whose id starts with prefix.
func alarmID(alarms map[string]any, prefix string) string {
	for id := range alarms {
		if strings.HasPrefix(id, prefix) {
			return id
		}
	}
	return ""
}

// servedVersion is the version whose REPORT line names the request id.
func (c *cloud) servedVersion(id string) string {
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, l := range c.log() {
			if strings.Contains(l, "REPORT RequestId: "+id) {
				if _, v, ok := strings.Cut(l, "\tVersion: "); ok {
					return v
				}
			}
		}
	}
	return ""
}
