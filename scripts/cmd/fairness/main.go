// Command fairness measures whether one organisation can slow down the
// others' webhooks (make fairness; not in make test). It starts a local
// runtime (FAIRNESS_TARGET=devserver, the default, or localcloud) built
// from this repository (or -root's), and on loopback only:
//
//  1. organisations B–E each subscribe a fast receiver and create a
//     matter a second: the unloaded run, for -baseline;
//  2. organisation A subscribes -endpoints endpoints (each its own URL) on
//     a receiver that answers after -slow, replays -replay events of its
//     feed to each, and keeps creating a matter a second, while B–E go on:
//     the loaded run, for -load;
//  3. everyone stops creating; live events get -drain to arrive.
//
// It prints A's load against the runtime's delivery capacity (endpoints ×
// events × response time ÷ concurrency), and per organisation and phase
// the delivery latency (event commit, its sequence, to the receiver)
// p50/p99, the jobs in flight at its receiver (mean, max), and the live
// deliveries not made by the end of the drain (lost, or still stuck in the
// queue: must be 0), then one JSON line. Every phase is bounded in time.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/scripts/internal/gobin"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fairness:", err)
		os.Exit(1)
	}
}

type options struct {
	mode                        string
	rate                        int
	streamFor                   time.Duration
	streamEndpoint              bool
	target, root                string
	endpoints, replay, quiet    int
	slow, baseline, load, drain time.Duration
	concurrency, replaysPerHour int
	aRate, quietRate            float64
	quietLatencyGoal, aLiveGoal time.Duration
	failOnGoal, keepFolder      bool
}

func run() error {
	o, err := parseOptions()
	if err != nil {
		return err
	}
	root := o.root
	if root == "" {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
		if err != nil {
			return fmt.Errorf("find the repository: %w", err)
		}
		root = strings.TrimSpace(string(out))
	}
	work, err := os.MkdirTemp("", "fairness")
	if err != nil {
		return err
	}
	keep := o.keepFolder
	defer func() {
		if !keep {
			os.RemoveAll(work)
		}
	}()
	logf("building the %s and the admin tool from %s", o.target, root)
	for _, name := range []string{o.target, "admin"} {
		// Out of go's cache of executables: a second run links nothing.
		if err := gobin.Build(context.Background(), root, "./scripts/cmd/"+name, filepath.Join(work, name), nil); err != nil {
			return fmt.Errorf("build %s: %w", name, err)
		}
	}
	rcv, err := newReceiver(filepath.Join(work, "ca.pem"), o.slow)
	if err != nil {
		return err
	}
	defer rcv.srv.Close()
	srv := &server{name: o.target, root: root, bin: filepath.Join(work, o.target), listen: freeAddr(), dynamo: freeAddr(), logPath: filepath.Join(work, o.target+".log"),
		env: []string{"TABLE_NAME=fairness", "SEED_DEMO=0", "DYNAMODB_ENDPOINT=", "LOCAL_DYNAMODB_DIR=", "RATE_LIMIT_PER_MINUTE=1000000",
			"WEBHOOK_CA_FILE=" + rcv.caFile, "EVENT_FEED_SETTLE=1s", "WEBHOOK_REPLAYS_PER_HOUR=" + strconv.Itoa(o.replaysPerHour),
			"LOCAL_DYNAMODB_LOG=" + filepath.Join(work, "engine.log")}}
	if err := srv.start(); err != nil {
		keep = true
		return fmt.Errorf("%w (its log: %s)", err, srv.logPath)
	}
	defer srv.stop()
	base := "http://" + srv.listen + "/api/v1"
	hc := &http.Client{Timeout: 2 * time.Minute}
	admin := func(args ...string) (map[string]any, error) {
		cmd := exec.Command(filepath.Join(work, "admin"), args...)
		cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT=http://"+srv.dynamo, "TABLE_NAME=fairness")
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("admin %v: %v", args, err)
		}
		var m map[string]any
		return m, json.Unmarshal(out, &m)
	}
	if o.mode == "stream" {
		return streamRun(o, srv, rcv, admin, base, hc)
	}
	orgs, err := setupOrgs(o, admin, base, hc, rcv)
	if err != nil {
		return err
	}
	a, quiet := orgs[0], orgs[1:]

	// A's feed: -replay matters, created before it has any endpoint (no
	// deliveries), for the replays.
	feedStart := time.Now().UTC().Add(-time.Second)
	logf("organisation A creates %d matters for its feed", o.replay)
	if err := a.createMany(o.replay, 8); err != nil {
		return err
	}
	// Their dispatch (no endpoint yet: nothing to deliver) is over before
	// the unloaded run starts.
	time.Sleep(30 * time.Second)

	rep := report{Target: o.target, Root: root, Endpoints: o.endpoints, Replay: o.replay, SlowSeconds: o.slow.Seconds(), Quiet: o.quiet}
	rep.Concurrency = o.concurrency
	if rep.Concurrency == 0 {
		rep.Concurrency = defaultConcurrency(o.target, srv)
	}

	// 1. Unloaded.
	logf("the unloaded run: %d quiet organisations, a matter a second each, for %s", o.quiet, o.baseline)
	base0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), o.baseline)
	runCreates(ctx, quiet, o.quietRate)
	cancel()
	baseEnd := time.Now()

	// 2. Loaded.
	logf("the loaded run: A subscribes %d endpoints on a receiver answering after %s and replays %d events to each", o.endpoints, o.slow, o.replay)
	var aEndpoints []string
	for i := range o.endpoints {
		id, err := a.subscribe(fmt.Sprintf("%s/a/%d", rcv.srv.URL, i))
		if err != nil {
			return err
		}
		aEndpoints = append(aEndpoints, id)
	}
	loadStart := time.Now()
	for _, id := range aEndpoints {
		status, m := a.do("POST", "/webhooks/"+id+"/replay", "", fmt.Sprintf(`{"since":%q}`, feedStart.Format(time.RFC3339)))
		if status == 202 {
			q, _ := m["data"].(map[string]any)["queued"].(float64)
			rep.ReplayQueued += int(q)
			rep.ReplaysAccepted++
		} else {
			rep.ReplaysRefused = append(rep.ReplaysRefused, fmt.Sprintf("%d %v", status, m["message"]))
		}
	}
	rep.LoadRatio = float64(rep.ReplayQueued) * o.slow.Seconds() / (float64(rep.Concurrency) * o.load.Seconds())
	logf("A's replays: %d accepted, %d events queued; its load: %d × %s = %.0f s of delivery against %d concurrent for %s: %.1f× capacity",
		rep.ReplaysAccepted, rep.ReplayQueued, rep.ReplayQueued, o.slow, float64(rep.ReplayQueued)*o.slow.Seconds(), rep.Concurrency, o.load, rep.LoadRatio)
	ctx, cancel = context.WithTimeout(context.Background(), o.load)
	sampler := make(chan struct{})
	go func() { defer close(sampler); rcv.sampleEvery(ctx, time.Second) }()
	var wg sync.WaitGroup
	wg.Go(func() { runCreates(ctx, quiet, o.quietRate) })
	wg.Go(func() { runCreates(ctx, []*org{a}, o.aRate) })
	wg.Wait()
	cancel()
	<-sampler
	loadEnd := time.Now()

	// 3. Drain: every live event to every endpoint.
	logf("the creates stopped; live events get %s to arrive", o.drain)
	rep.collect(rcv, o, orgs, [4]time.Time{base0, baseEnd, loadStart, loadEnd})
	rep.ReplayDelivered = rcv.replayed()
	rep.Duplicates = rcv.duplicates()
	rep.goals(o)
	rep.print()
	if rep.Lost > 0 {
		keep = true
		return fmt.Errorf("%d live deliveries not made by the end of the drain (lost, or stuck in the queue); the runtime's log is in %s", rep.Lost, work)
	}
	if o.failOnGoal && len(rep.Missed) > 0 {
		keep = true
		return fmt.Errorf("goals missed: %s; the runtime's log is in %s", strings.Join(rep.Missed, "; "), work)
	}
	return nil
}

// parseOptions reads the command line.
func parseOptions() (options, error) {
	o := options{}
	flag.StringVar(&o.mode, "mode", "fairness", "fairness (the runs above) or stream: one organisation raises -rate events a second for -stream-for, written straight into the table as its creates write them, and the dispatcher's iterator age is read from its log (localcloud)")
	flag.IntVar(&o.rate, "rate", 300, "stream mode: events a second")
	flag.DurationVar(&o.streamFor, "stream-for", 30*time.Second, "stream mode: how long")
	flag.BoolVar(&o.streamEndpoint, "stream-endpoint", true, "stream mode: the organisation has an endpoint (a fast receiver), so each event is fanned out")
	flag.StringVar(&o.target, "target", envOr("FAIRNESS_TARGET", "devserver"), "devserver or localcloud (FAIRNESS_TARGET)")
	flag.StringVar(&o.root, "root", "", "the repository whose runtime to build and run (default: this one)")
	flag.IntVar(&o.endpoints, "endpoints", 16, "organisation A's endpoints, each its own URL on the slow receiver")
	flag.IntVar(&o.replay, "replay", 1000, "events of A's feed replayed to each endpoint")
	flag.IntVar(&o.quiet, "quiet", 4, "quiet organisations (B, C, …), each with a fast receiver")
	flag.DurationVar(&o.slow, "slow", 6*time.Second, "how long A's receiver takes to answer 200")
	flag.DurationVar(&o.baseline, "baseline", 30*time.Second, "the unloaded run")
	flag.DurationVar(&o.load, "load", 90*time.Second, "the loaded run")
	flag.DurationVar(&o.drain, "drain", 60*time.Second, "how long live events get to arrive after the creates stop")
	flag.IntVar(&o.concurrency, "concurrency", 0, "the runtime's delivery concurrency, for the load's ratio (default: the devserver's WEBHOOK_DELIVERY_WORKERS default, or localcloud's template: maximum concurrency × batch size)")
	flag.IntVar(&o.replaysPerHour, "replays-per-hour", 20000, "WEBHOOK_REPLAYS_PER_HOUR for the run, so that the whole replay is accepted")
	flag.Float64Var(&o.aRate, "a-rate", 1, "A's matters per second during the load")
	flag.Float64Var(&o.quietRate, "quiet-rate", 1, "each quiet organisation's matters per second")
	flag.DurationVar(&o.quietLatencyGoal, "quiet-goal", 2*time.Second, "quiet organisations' p99 may exceed their unloaded p99 by at most this")
	flag.DurationVar(&o.aLiveGoal, "a-goal", 10*time.Second, "A's own live events' p99 goal")
	flag.BoolVar(&o.failOnGoal, "fail", false, "exit 1 when a goal is missed (events lost always fail)")
	flag.BoolVar(&o.keepFolder, "keep", false, "keep the run's folder (the runtime's log) even when it passes")
	flag.Parse()
	if o.target != "devserver" && o.target != "localcloud" {
		return o, fmt.Errorf("target must be devserver or localcloud, got %q", o.target)
	}
	if o.quiet < 1 || o.quiet > 20 || o.endpoints < 1 || o.endpoints > 50 || o.replay < 0 || o.replay > 1000 {
		return o, fmt.Errorf("-quiet 1–20, -endpoints 1–50, -replay 0–1000")
	}
	return o, nil
}

// setupOrgs makes organisation A and the quiet ones, each with a key and
// its clients; each quiet one subscribes its fast receiver.
func setupOrgs(o options, admin func(...string) (map[string]any, error), base string, hc *http.Client, rcv *receiver) ([]*org, error) {
	var orgs []*org
	for i := range o.quiet + 1 {
		name := string(rune('A' + i))
		created, err := admin("org", "create", "--name", "Fairness "+name)
		if err != nil {
			return nil, err
		}
		key, err := admin("key", "create", "--org", created["id"].(string), "--mode", "test",
			"--scopes", "matters:read,matters:write,clients:read,clients:write,parties:write,webhooks:manage")
		if err != nil {
			return nil, err
		}
		g := &org{name: name, id: created["id"].(string), key: key["key"].(string), base: base, hc: hc}
		if err := g.setup(); err != nil {
			return nil, fmt.Errorf("organisation %s: %w", name, err)
		}
		orgs = append(orgs, g)
	}
	quiet := orgs[1:]
	for _, g := range quiet {
		if _, err := g.subscribe(rcv.srv.URL + "/q/" + g.id); err != nil {
			return nil, err
		}
	}
	return orgs, nil
}

// collect waits, at most o.drain, for every live event to reach every
// endpoint, and fills in each organisation's row: its latencies unloaded
// (at[0] to at[1]) and loaded (at[2] to at[3]), what it had in flight, and
// what was lost.
func (rep *report) collect(rcv *receiver, o options, orgs []*org, at [4]time.Time) {
	expected := map[string]int{} // event id -> deliveries expected (live)
	for _, g := range orgs[1:] {
		for _, id := range g.liveEvents() {
			expected[id] = 1
		}
	}
	for _, id := range orgs[0].liveEvents() {
		expected[id] = o.endpoints
	}
	for deadline := time.Now().Add(o.drain); time.Now().Before(deadline); time.Sleep(time.Second) {
		if rcv.missing(expected) == 0 {
			break
		}
	}

	for _, g := range orgs {
		row := orgRow{Org: g.name}
		if g != orgs[0] {
			row.Unloaded = rcv.latencies(g.id, at[0], at[1])
		}
		row.Loaded = rcv.latencies(g.id, at[2], at[3])
		row.InFlightMean, row.InFlightMax = rcv.inFlight(g.id)
		row.Lost = rcv.missing(subset(expected, g.liveEvents()))
		row.Created = len(g.liveEvents())
		rep.Orgs = append(rep.Orgs, row)
		rep.Lost += row.Lost
	}
}

// defaultConcurrency is the runtime's delivery concurrency: localcloud's
// from its template (the delivery mapping's maximum concurrency × batch
// size), the devserver's from its setting's default.
func defaultConcurrency(target string, srv *server) int {
	if target == "localcloud" {
		if n := srv.templateConcurrency(); n > 0 {
			return n
		}
		return 200
	}
	return 200 // WEBHOOK_DELIVERY_WORKERS' default
}

func subset(m map[string]int, ids []string) map[string]int {
	out := map[string]int{}
	for _, id := range ids {
		out[id] = m[id]
	}
	return out
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+" "+format+"\n", args...)
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runCreates makes each organisation create a matter every 1/rate seconds
// until ctx ends.
func runCreates(ctx context.Context, orgs []*org, rate float64) {
	var wg sync.WaitGroup
	for _, g := range orgs {
		wg.Go(func() {
			t := time.NewTicker(time.Duration(float64(time.Second) / rate))
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if id := g.matter(); id != "" {
						g.mu.Lock()
						g.live = append(g.live, id)
						g.mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
}

// org is one organisation's API client.
type org struct {
	name, id, key, base, client string
	hc                          *http.Client
	n                           atomic.Int64
	mu                          sync.Mutex
	live                        []string // matters created while it had endpoints: their events must arrive
	events                      map[string]string
}

func (g *org) do(method, path, idem, body string) (int, map[string]any) {
	req, _ := http.NewRequest(method, g.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.key)
	req.Header.Set("Content-Type", "application/json")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

// create posts until answered 201 or 200 (retrying what a loaded runtime
// may answer), and returns the resource's id.
func (g *org) create(path, body string) string {
	idem := fmt.Sprintf("fair-%s-%d", g.name, g.n.Add(1))
	for range 60 {
		status, m := g.do("POST", path, idem, body)
		switch {
		case status == 201 || status == 200:
			id, _ := m["data"].(map[string]any)["id"].(string)
			return id
		case status == 0 || status >= 500 || status == 409 || status == 429:
			time.Sleep(500 * time.Millisecond)
		default:
			logf("organisation %s: %s refused: %d %v", g.name, path, status, m)
			return ""
		}
	}
	return ""
}

func (g *org) setup() error {
	co := g.create("/companies", fmt.Sprintf(`{"name":"Fairness %s ApS","cvr":"%08d"}`, g.name, 20000000+int(g.name[0])))
	if co == "" {
		return fmt.Errorf("no company")
	}
	if g.client = g.create("/clients", fmt.Sprintf(`{"company_id":%q}`, co)); g.client == "" {
		return fmt.Errorf("no client")
	}
	return nil
}

func (g *org) matter() string {
	return g.create("/matters", fmt.Sprintf(`{"client_id":%q,"title":"Fairness %s %d"}`, g.client, g.name, g.n.Load()))
}

func (g *org) createMany(n, workers int) error {
	var made atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for made.Add(1) <= int64(n) {
				g.matter()
			}
		})
	}
	wg.Wait()
	return nil
}

func (g *org) subscribe(url string) (string, error) {
	status, m := g.do("POST", "/webhooks", "", fmt.Sprintf(`{"url":%q,"event_types":["matter.created"]}`, url))
	if status != 201 {
		return "", fmt.Errorf("organisation %s: subscribe %s: %d %v", g.name, url, status, m)
	}
	return m["data"].(map[string]any)["id"].(string), nil
}

// liveEvents are the ids of the matter.created events of the matters it
// created while subscribed: read from its feed (the event's data holds
// the matter's id).
func (g *org) liveEvents() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.events == nil {
		g.events = map[string]string{}
		after := "0"
		for range 1000 {
			status, m := g.do("GET", "/events?per_page=100&after="+after, "", "")
			if status != 200 {
				break
			}
			for _, e := range m["data"].([]any) {
				ev := e.(map[string]any)
				if mt, ok := ev["data"].(map[string]any)["matter"].(map[string]any); ok {
					g.events[mt["id"].(string)] = ev["id"].(string)
				}
			}
			meta := m["meta"].(map[string]any)
			after = strconv.FormatInt(int64(meta["next_after"].(float64)), 10)
			if meta["has_more"] != true {
				break
			}
		}
	}
	var out []string
	for _, matter := range g.live {
		if id := g.events[matter]; id != "" {
			out = append(out, id)
		}
	}
	return out
}

// receiver is every organisation's loopback HTTPS subscriber: /q/<org>
// answers at once, /a/<n> (organisation A's endpoints) after slow.
type receiver struct {
	srv    *httptest.Server
	caFile string
	slow   time.Duration

	mu      sync.Mutex
	got     []arrival
	seen    map[string]int // event#endpoint path#replay#attempt -> times
	current map[string]int // org (or "A") -> requests being served
	samples map[string][]int
	byEvent map[string]map[string]bool // event id -> endpoint paths that got it (live, 2xx)
	replays int
}

type arrival struct {
	org     string
	latency time.Duration
	at      time.Time
}

func newReceiver(caFile string, slow time.Duration) (*receiver, error) {
	r := &receiver{caFile: caFile, slow: slow, seen: map[string]int{}, current: map[string]int{}, samples: map[string][]int{}, byEvent: map[string]map[string]bool{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	r.srv.Config.ReadTimeout = time.Minute
	r.srv.StartTLS()
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	return r, os.WriteFile(caFile, pemBytes, 0o600)
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var env struct {
		ID       string `json:"id"`
		Org      string `json:"organization_id"`
		Sequence int64  `json:"sequence"`
	}
	_ = json.Unmarshal(body, &env)
	who := env.Org
	r.mu.Lock()
	r.current[who]++
	key := env.ID + "#" + req.URL.Path + "#" + req.Header.Get("Service-Replay-Id") + "#" + req.Header.Get("Service-Delivery-Attempt")
	r.seen[key]++
	replay := req.Header.Get("Service-Replay-Id") != ""
	if replay {
		r.replays++
	} else if env.Sequence > 0 {
		r.got = append(r.got, arrival{org: who, latency: at.Sub(time.UnixMicro(env.Sequence)), at: at})
	}
	r.mu.Unlock()
	if strings.HasPrefix(req.URL.Path, "/a/") {
		time.Sleep(r.slow)
	}
	r.mu.Lock()
	r.current[who]--
	if !replay {
		if r.byEvent[env.ID] == nil {
			r.byEvent[env.ID] = map[string]bool{}
		}
		r.byEvent[env.ID][req.URL.Path] = true
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// sampleEvery notes each organisation's requests being served, every d.
func (r *receiver) sampleEvery(ctx context.Context, d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.mu.Lock()
			for org, n := range r.current {
				r.samples[org] = append(r.samples[org], n)
			}
			r.mu.Unlock()
		}
	}
}

func (r *receiver) inFlight(org string) (mean float64, maxN int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.samples[org]
	for _, n := range s {
		mean += float64(n)
		maxN = max(maxN, n)
	}
	if len(s) > 0 {
		mean /= float64(len(s))
	}
	return mean, maxN
}

// latencies are the org's live deliveries' latencies that arrived in
// [from, to).
func (r *receiver) latencies(org string, from, to time.Time) stats {
	r.mu.Lock()
	var ds []time.Duration
	for _, a := range r.got {
		if a.org == org && !a.at.Before(from) && a.at.Before(to) {
			ds = append(ds, a.latency)
		}
	}
	r.mu.Unlock()
	return statsOf(ds)
}

// missing counts the expected live deliveries (event -> endpoints) not
// received.
func (r *receiver) missing(expected map[string]int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, want := range expected {
		n += max(0, want-len(r.byEvent[id]))
	}
	return n
}

func (r *receiver) replayed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replays
}

// duplicates counts attempts received more than once (the same event,
// endpoint, replay and attempt number).
func (r *receiver) duplicates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.seen {
		n += c - 1
	}
	return n
}

type stats struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_s"`
	P99 float64 `json:"p99_s"`
	Max float64 `json:"max_s"`
}

func statsOf(ds []time.Duration) stats {
	if len(ds) == 0 {
		return stats{}
	}
	slices.Sort(ds)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ds[max(0, min(i, len(ds)-1))].Seconds()
	}
	return stats{N: len(ds), P50: q(0.50), P99: q(0.99), Max: ds[len(ds)-1].Seconds()}
}

type orgRow struct {
	Org          string  `json:"org"`
	Created      int     `json:"live_events"`
	Unloaded     stats   `json:"unloaded"`
	Loaded       stats   `json:"loaded"`
	InFlightMean float64 `json:"in_flight_mean"`
	InFlightMax  int     `json:"in_flight_max"`
	Lost         int     `json:"undelivered"`
}

type report struct {
	Target          string   `json:"target"`
	Root            string   `json:"root"`
	Endpoints       int      `json:"endpoints"`
	Replay          int      `json:"replay_per_endpoint"`
	SlowSeconds     float64  `json:"slow_s"`
	Quiet           int      `json:"quiet_orgs"`
	Concurrency     int      `json:"delivery_concurrency"`
	ReplaysAccepted int      `json:"replays_accepted"`
	ReplaysRefused  []string `json:"replays_refused,omitempty"`
	ReplayQueued    int      `json:"replay_events_queued"`
	ReplayDelivered int      `json:"replay_deliveries_received"`
	LoadRatio       float64  `json:"a_load_over_capacity"`
	Orgs            []orgRow `json:"orgs"`
	Lost            int      `json:"live_deliveries_undelivered"`
	Duplicates      int      `json:"attempts_received_twice"`
	Missed          []string `json:"goals_missed,omitempty"`
}

func (rep *report) goals(o options) {
	if rep.LoadRatio < 2 {
		rep.Missed = append(rep.Missed, fmt.Sprintf("A's load is %.1f× capacity, under 2×", rep.LoadRatio))
	}
	for _, row := range rep.Orgs {
		if row.Org == "A" {
			if row.Loaded.P99 > o.aLiveGoal.Seconds() {
				rep.Missed = append(rep.Missed, fmt.Sprintf("A's live p99 %.2f s > %s", row.Loaded.P99, o.aLiveGoal))
			}
			continue
		}
		if row.Loaded.P99 > row.Unloaded.P99+o.quietLatencyGoal.Seconds() {
			rep.Missed = append(rep.Missed, fmt.Sprintf("%s's p99 %.2f s loaded vs %.2f s unloaded: more than %s apart", row.Org, row.Loaded.P99, row.Unloaded.P99, o.quietLatencyGoal))
		}
	}
}

func (rep *report) print() {
	fmt.Printf("target %s (%s)\n", rep.Target, rep.Root)
	fmt.Printf("A: %d endpoints × %d replayed events × %.1f s ÷ %d concurrent = %.0f s of delivery work (%d events queued by %d replays; %.1f× the load run's capacity)\n",
		rep.Endpoints, rep.Replay, rep.SlowSeconds, rep.Concurrency, float64(rep.ReplayQueued)*rep.SlowSeconds/float64(max(rep.Concurrency, 1)), rep.ReplayQueued, rep.ReplaysAccepted, rep.LoadRatio)
	if len(rep.ReplaysRefused) > 0 {
		fmt.Printf("replays refused: %v\n", rep.ReplaysRefused)
	}
	fmt.Printf("%-4s %6s  %-22s  %-22s  %-16s %s\n", "org", "events", "unloaded p50/p99 (n)", "loaded p50/p99 (n)", "in flight mean/max", "undelivered")
	for _, r := range rep.Orgs {
		un := "-"
		if r.Unloaded.N > 0 {
			un = fmt.Sprintf("%.2f/%.2f s (%d)", r.Unloaded.P50, r.Unloaded.P99, r.Unloaded.N)
		}
		fmt.Printf("%-4s %6d  %-22s  %-22s  %6.1f/%-9d %d\n", r.Org, r.Created, un,
			fmt.Sprintf("%.2f/%.2f s (%d)", r.Loaded.P50, r.Loaded.P99, r.Loaded.N), r.InFlightMean, r.InFlightMax, r.Lost)
	}
	fmt.Printf("replayed deliveries received: %d of %d queued; attempts received twice: %d; live deliveries lost or stuck: %d\n", rep.ReplayDelivered, rep.ReplayQueued, rep.Duplicates, rep.Lost)
	if len(rep.Missed) > 0 {
		fmt.Printf("goals missed: %s\n", strings.Join(rep.Missed, "; "))
	} else {
		fmt.Println("goals met")
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
}

// server is the runtime's process.
type server struct {
	name, root, bin, listen, dynamo, logPath string
	env                                      []string
	cmd                                      *exec.Cmd
	template                                 string
}

func (s *server) start() error {
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin)
	cmd.Dir = s.root
	cmd.Env = append(append(os.Environ(), s.env...), "LISTEN_ADDR="+s.listen, "LOCAL_DYNAMODB_ADDR="+s.dynamo)
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan bool, 1)
	var tplMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			var l struct{ Msg, Template string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "localcloud ready" {
				tplMu.Lock()
				s.template = l.Template
				tplMu.Unlock()
			}
			if !sent && strings.HasPrefix(line, "ready ") {
				ready <- true
				sent = true
			}
		}
		if !sent {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			_ = cmd.Wait()
			return fmt.Errorf("%s exited before ready", s.name)
		}
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		return fmt.Errorf("%s not ready after 5 minutes", s.name)
	}
	s.cmd = cmd
	return nil
}

// templateConcurrency reads the delivery mapping's maximum concurrency ×
// batch size from localcloud's template (0 when it cannot).
func (s *server) templateConcurrency() int {
	raw, err := os.ReadFile(s.template)
	if err != nil {
		return 0
	}
	var t struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				EventSourceArn any
				BatchSize      int
				ScalingConfig  struct{ MaximumConcurrency int }
			}
		}
	}
	if json.Unmarshal(raw, &t) != nil {
		return 0
	}
	var names []string
	for name := range t.Resources {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := t.Resources[name]
		if r.Type == "AWS::Lambda::EventSourceMapping" && strings.Contains(strings.ToLower(fmt.Sprint(r.Properties.EventSourceArn)), "delivery") {
			return max(r.Properties.BatchSize, 1) * r.Properties.ScalingConfig.MaximumConcurrency
		}
	}
	return 0
}

func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
	}
}

// streamRun is -mode stream: one organisation raises o.rate events a second
// (each its own transaction, as a create writes it) for o.streamFor, and
// the dispatcher's iterator age (the "outbox stream" lines' iterator_age_ms:
// the newest event's age when a stream batch reaches the dispatcher) is
// read from the runtime's log.
func streamRun(o options, srv *server, rcv *receiver, admin func(...string) (map[string]any, error), base string, hc *http.Client) error {
	created, err := admin("org", "create", "--name", "Fairness stream")
	if err != nil {
		return err
	}
	orgID := created["id"].(string)
	key, err := admin("key", "create", "--org", orgID, "--mode", "test", "--scopes", "webhooks:manage")
	if err != nil {
		return err
	}
	g := &org{name: "S", id: orgID, key: key["key"].(string), base: base, hc: hc}
	if o.streamEndpoint {
		if _, err := g.subscribe(rcv.srv.URL + "/q/" + orgID); err != nil {
			return err
		}
	}
	ctx := context.Background()
	db, err := store.New(ctx, store.Config{TableName: "fairness", Endpoint: "http://" + srv.dynamo})
	if err != nil {
		return err
	}
	logf("organisation S raises %d events a second for %s", o.rate, o.streamFor)
	start := time.Now()
	var written, failed atomic.Int64
	tick := time.NewTicker(time.Second / time.Duration(max(o.rate, 1)))
	defer tick.Stop()
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for time.Since(start) < o.streamFor {
		<-tick.C
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ev, err := outbox.New(orgID, outbox.MatterCreated, "matter", map[string]any{"id": uuid.NewString(), "status": "dormant"}, time.Now())
			if err == nil {
				tx := db.Tx()
				outbox.Add(tx, ev)
				err = tx.Commit(ctx)
			}
			if err != nil {
				failed.Add(1)
				return
			}
			written.Add(1)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	logf("%d events written in %s (%.0f a second), %d failed; waiting for the dispatcher", written.Load(), elapsed.Round(time.Millisecond), float64(written.Load())/elapsed.Seconds(), failed.Load())
	var ages []time.Duration
	dispatched := 0
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		ages, dispatched = streamLines(srv.logPath, start)
		if dispatched >= int(written.Load()) {
			break
		}
	}
	if o.streamEndpoint { // and every event delivered, or the drain's end
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && len(rcv.byEventSnapshot()) < int(written.Load()); {
			time.Sleep(2 * time.Second)
		}
	}
	st := statsOf(ages)
	delivered := len(rcv.byEventSnapshot())
	lat := rcv.latencies(orgID, start, time.Now())
	fmt.Printf("target %s: %d events in %s (%.0f/s) from one organisation; dispatched %d by the stream; delivered %d\n",
		o.target, written.Load(), elapsed.Round(time.Millisecond), float64(written.Load())/elapsed.Seconds(), dispatched, delivered)
	fmt.Printf("iterator age over %d stream batches: p50 %.2f s, p99 %.2f s, max %.2f s\n", st.N, st.P50, st.P99, st.Max)
	fmt.Printf("commit to receiver: p50 %.2f s, p99 %.2f s, max %.2f s (%d deliveries)\n", lat.P50, lat.P99, lat.Max, lat.N)
	b, _ := json.Marshal(map[string]any{"target": o.target, "events": written.Load(), "seconds": elapsed.Seconds(), "dispatched": dispatched, "delivered": delivered,
		"iterator_age": st, "delivery_latency": lat})
	fmt.Println(string(b))
	if st.Max > 5 {
		return fmt.Errorf("the iterator age reached %.1f s (goal: under 5 s)", st.Max)
	}
	return nil
}

// streamLines reads the dispatcher's "outbox stream" lines after since
// from a runtime's log: each batch's iterator age, and the events they
// dispatched.
func streamLines(path string, since time.Time) ([]time.Duration, int) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	var ages []time.Duration
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.IndexByte(line, '{')
		if i < 0 || !strings.Contains(line, `"outbox stream"`) {
			continue
		}
		var l struct {
			Time       time.Time `json:"time"`
			Age        *int64    `json:"iterator_age_ms"`
			Dispatched int       `json:"OutboxDispatched"`
		}
		if json.Unmarshal([]byte(line[i:]), &l) != nil || l.Time.Before(since) {
			continue
		}
		n += l.Dispatched
		if l.Age != nil && l.Dispatched > 0 {
			ages = append(ages, time.Duration(*l.Age)*time.Millisecond)
		}
	}
	return ages, n
}

func (r *receiver) byEventSnapshot() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for id := range r.byEvent {
		out[id] = true
	}
	return out
}
