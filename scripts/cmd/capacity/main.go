// Command capacity is make capacity: a load run on the local stage as
// deployed (scripts/localcloud), loopback only, bounded in time. Many
// organisations, each with its own key, one webhook endpoint and a little
// data, send the traffic model's mix of requests (routes.Traffic), the
// organisations chosen by a Zipf law whose top organisation takes a set
// share (the model's 300 of 1,000 requests a second). A proxy in front of
// DynamoDB Local records what every store call of every function
// consumed, by partition key. It prints per-route latency (p50, p99), the
// capacity per request by route (docs/cost-model.md, held to measurement
// by TestCapacityPerRoute) beside the run's own total, the busiest
// partition keys and their share of writes, and the projection of all of
// it to 1,000 requests a second.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/practice-api/practice-api/scripts/internal/ddbproxy"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/ddblocal"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(1)
	}
}

type options struct {
	duration time.Duration
	orgs     int
	top      float64
	rate     float64
	workers  int
}

func run() error {
	var o options
	flag.DurationVar(&o.duration, "duration", 3*time.Minute, "how long the load runs")
	flag.IntVar(&o.orgs, "orgs", 100, "organisations")
	flag.Float64Var(&o.top, "top", 0.3, "the busiest organisation's share of requests (the Zipf law is fitted to it)")
	flag.Float64Var(&o.rate, "rate", 40, "requests a second")
	flag.IntVar(&o.workers, "workers", 16, "clients at once")
	flag.Parse()
	if o.orgs < 2 || o.top <= 1/float64(o.orgs) || o.top >= 1 || o.rate <= 0 || o.workers < 1 {
		return errors.New("-orgs must be at least 2, -top between 1/orgs and 1, -rate and -workers positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	engine, err := ddblocal.Start(ctx, ddblocal.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer engine.Stop()
	direct, err := store.New(ctx, store.Config{TableName: "practice-api", Endpoint: engine.Endpoint})
	if err != nil {
		return err
	}
	proxy := &ddbproxy.Proxy{Target: engine.Endpoint, Reader: direct.Client}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(pln, proxy) }()
	receiver, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var delivered atomic.Int64
	go func() {
		_ = http.Serve(receiver, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			delivered.Add(1)
			w.WriteHeader(http.StatusNoContent)
		}))
	}()

	fmt.Fprintln(os.Stderr, "capacity: starting scripts/localcloud on the recording proxy")
	base, cloud, err := startLocalcloud(ctx, "http://"+pln.Addr().String())
	if err != nil {
		return err
	}
	defer func() {
		_ = cloud.Process.Signal(syscall.SIGTERM)
		_, _ = cloud.Process.Wait()
	}()

	fmt.Fprintf(os.Stderr, "capacity: %d organisations, each with a key, an endpoint and seeded data\n", o.orgs)
	tenants, err := setup(ctx, direct, base, "http://"+receiver.Addr().String(), o.orgs)
	if err != nil {
		return err
	}
	weights, s := zipf(o.orgs, o.top)
	proxy.Reset()
	fmt.Fprintf(os.Stderr, "capacity: %s of load at %.0f requests/s (Zipf s=%.2f, top organisation %.0f%%)\n", o.duration, o.rate, s, 100*weights[0])
	res := load(ctx, base, tenants, weights, o)
	time.Sleep(5 * time.Second) // the dispatcher and deliveries behind the last requests
	report(os.Stdout, res, proxy.Report(8), delivered.Load(), o, s, weights[0])
	if res.serverErrors > 0 {
		return fmt.Errorf("%d answers were 5xx", res.serverErrors)
	}
	return nil
}

// startLocalcloud runs scripts/localcloud on the proxy's endpoint and
// returns its base URL once ready.
func startLocalcloud(ctx context.Context, dynamo string) (string, *exec.Cmd, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, "scripts/localcloud")
	cmd.Env = append(os.Environ(), "LISTEN_ADDR="+addr, "DYNAMODB_ENDPOINT="+dynamo, "SEED_DEMO=0",
		"RATE_LIMIT_PER_MINUTE=1000000", "WEBHOOK_RETRY_SCHEDULE=1s,1s,1s,1s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if b, ok := strings.CutPrefix(line, "ready "); ok {
				ready <- b
			}
			if strings.Contains(line, `"level":"ERROR"`) {
				fmt.Fprintln(os.Stderr, "localcloud:", line)
			}
		}
	}()
	select {
	case b := <-ready:
		return b, cmd, nil
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		return "", nil, errors.New("scripts/localcloud was not ready within 3 minutes")
	}
}

// tenant is one organisation of the run and the ids its requests name.
type tenant struct {
	key                                                 string
	matters, clients, people, companies, invoices, docs []string
	endpoint                                            string
	n                                                   atomic.Int64 // creates so far, for unique bodies

	mu   sync.Mutex
	free []string // parties created in the run and not engaged yet ("company_id:<id>")
}

func (t *tenant) push(party string) {
	t.mu.Lock()
	t.free = append(t.free, party)
	t.mu.Unlock()
}

func (t *tenant) pop() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.free) == 0 {
		return ""
	}
	p := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	return p
}

// load reads the ids the tenant's requests pick from: a page of each list
// (time is logged on open matters only).
func (t *tenant) load(ctx context.Context, base string) error {
	t.matters, t.clients, t.people, t.companies, t.invoices, t.docs = nil, nil, nil, nil, nil, nil
	for _, l := range []struct {
		path string
		ids  *[]string
	}{{"/matters", &t.matters}, {"/clients", &t.clients}, {"/people", &t.people}, {"/companies", &t.companies},
		{"/invoices", &t.invoices}, {"/documents", &t.docs}} {
		var page struct {
			Data []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"data"`
		}
		if err := call(ctx, base, t.key, "GET", l.path+"?per_page=100", "", "", &page); err != nil {
			return err
		}
		for _, d := range page.Data {
			if l.path != "/matters" || matter.Status(d.Status).Open() {
				*l.ids = append(*l.ids, d.ID)
			}
		}
	}
	return nil
}

// setup makes the organisations: a key each (the store's own admin path),
// seeded data, and one webhook endpoint subscribed to every event.
func setup(ctx context.Context, db *store.DB, base, receiver string, n int) ([]*tenant, error) {
	keys := auth.NewStore(db, 0)
	out := make([]*tenant, n)
	for i := range out {
		org, err := keys.CreateOrg(ctx, "", fmt.Sprintf("Kapacitet %d", i), time.Now())
		if err != nil {
			return nil, err
		}
		_, tok, err := keys.CreateKey(ctx, auth.KeyRequest{OrgID: org.ID, Mode: auth.ModeLive, Scopes: auth.Catalogue}, time.Now())
		if err != nil {
			return nil, err
		}
		t := &tenant{key: tok.String()}
		// Seeded statuses are random: seed more until the organisation has
		// an open matter to log time on.
		for round := 0; len(t.matters) == 0 && round < 5; round++ {
			if _, err := seed.Run(ctx, db, org.ID, seed.Options{Matters: 6, EntriesPerMatter: 6}); err != nil {
				return nil, err
			}
			if err := t.load(ctx, base); err != nil {
				return nil, err
			}
		}
		var hook struct {
			Data struct{ ID string } `json:"data"`
		}
		body := fmt.Sprintf(`{"url":%q,"event_types":["matter.created","time_entry.created"]}`, receiver+"/hook")
		if err := call(ctx, base, t.key, "POST", "/webhooks", body, "", &hook); err != nil {
			return nil, err
		}
		t.endpoint = hook.Data.ID
		if len(t.matters) == 0 || len(t.clients) == 0 {
			return nil, fmt.Errorf("organisation %d: no open matter or client seeded", i)
		}
		out[i] = t
	}
	return out, nil
}

// call sends one request and decodes a 2xx answer into v.
func call(ctx context.Context, base, key, method, path, body, idem string, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if v != nil {
		return json.Unmarshal(raw, v)
	}
	return nil
}

// zipf returns weights 1/i^s of n organisations, s fitted so that the
// first takes top of the whole.
func zipf(n int, top float64) ([]float64, float64) {
	share := func(s float64) float64 {
		sum := 0.0
		for i := 1; i <= n; i++ {
			sum += math.Pow(float64(i), -s)
		}
		return 1 / sum
	}
	lo, hi := 0.0, 10.0
	for range 60 {
		mid := (lo + hi) / 2
		if share(mid) < top {
			lo = mid
		} else {
			hi = mid
		}
	}
	s := (lo + hi) / 2
	w := make([]float64, n)
	sum := 0.0
	for i := range w {
		w[i] = math.Pow(float64(i+1), -s)
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w, s
}

// results of the load.
type results struct {
	mu           sync.Mutex
	latency      map[string][]time.Duration
	errors       map[string]int
	statuses     map[string]map[int]int    // route -> status of a refused request -> count
	why          map[string]map[string]int // route -> message of a refusal -> count
	serverErrors int
	requests     int
	elapsed      time.Duration
}

// load sends the mix at the rate for the duration.
func load(ctx context.Context, base string, tenants []*tenant, weights []float64, o options) *results {
	res := &results{latency: map[string][]time.Duration{}, errors: map[string]int{}, statuses: map[string]map[int]int{}, why: map[string]map[string]int{}}
	var names []string
	var cum []float64
	total := 0.0
	for _, name := range slices.Sorted(maps.Keys(routes.Traffic)) {
		total += routes.Traffic[name]
		names, cum = append(names, name), append(cum, total)
	}
	orgCum := make([]float64, len(weights))
	acc := 0.0
	for i, w := range weights {
		acc += w
		orgCum[i] = acc
	}
	pick := func(r *rand.Rand, c []float64) int {
		x := r.Float64() * c[len(c)-1]
		return min(sort.SearchFloat64s(c, x), len(c)-1)
	}
	ticks := make(chan struct{})
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	go func() {
		defer close(ticks)
		t := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case ticks <- struct{}{}:
				default: // the workers are behind: the rate is what they can take
				}
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 24))
			do := func(route string, t *tenant) {
				method, path, body, idem := request(route, t, r)
				t0 := time.Now()
				status, id, message, err := send(base, t.key, method, path, body, idem)
				took := time.Since(t0)
				switch {
				case status == 201 && route == "companies.create":
					t.push(`"company_id":"` + id + `"`)
				case status == 201 && route == "people.create":
					t.push(`"person_id":"` + id + `"`)
				}
				res.mu.Lock()
				res.requests++
				res.latency[route] = append(res.latency[route], took)
				if err != nil || status >= 400 {
					res.errors[route]++
					if res.statuses[route] == nil {
						res.statuses[route] = map[int]int{}
					}
					res.statuses[route][status]++ // 0: no answer
					if res.why[route] == nil {
						res.why[route] = map[string]int{}
					}
					res.why[route][message]++
				}
				if err != nil || status >= 500 {
					res.serverErrors++
				}
				res.mu.Unlock()
			}
			for range ticks {
				route := names[pick(r, cum)]
				t := tenants[pick(r, orgCum)]
				if route == "clients.create" && len(t.free) == 0 {
					do("companies.create", t) // a party to engage first: the import order
				}
				do(route, t)
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// request is one request of route for t.
func request(route string, t *tenant, r *rand.Rand) (method, path, body, idem string) {
	one := func(ids []string) string { return ids[r.IntN(len(ids))] }
	n := t.n.Add(1)
	uniq := strconv.FormatInt(n, 10) + "-" + strconv.FormatUint(r.Uint64()%1e6, 10)
	switch route {
	case "matters.get":
		return "GET", "/matters/" + one(t.matters), "", ""
	case "clients.get":
		return "GET", "/clients/" + one(t.clients), "", ""
	case "people.get":
		return "GET", "/people/" + one(t.people), "", ""
	case "companies.get":
		return "GET", "/companies/" + one(t.companies), "", ""
	case "invoices.get":
		return "GET", "/invoices/" + one(t.invoices), "", ""
	case "documents.get":
		return "GET", "/documents/" + one(t.docs), "", ""
	case "webhooks.get":
		return "GET", "/webhooks/" + t.endpoint, "", ""
	case "reports.get":
		return "GET", "/reports/wip", "", ""
	case "webhooks.deliveries":
		return "GET", "/webhooks/" + t.endpoint + "/deliveries", "", ""
	case "events.list": // a poller a minute behind
		return "GET", fmt.Sprintf("/events?per_page=100&after=%d", time.Now().Add(-time.Minute).UnixMicro()), "", ""
	case "companies.create":
		return "POST", "/companies", fmt.Sprintf(`{"name":"Last %s ApS","cvr":"%08d"}`, uniq, r.IntN(1e8)), "co-" + uniq
	case "people.create":
		return "POST", "/people", fmt.Sprintf(`{"name":"Last %s","email":"last-%s@example.dk"}`, uniq, uniq), "p-" + uniq
	case "clients.create":
		party := t.pop()
		if party == "" { // taken by another worker meanwhile: the rule's 422, counted as such
			party = `"company_id":"` + one(t.companies) + `"`
		}
		return "POST", "/clients", "{" + party + "}", "cl-" + uniq
	case "matters.create":
		return "POST", "/matters", fmt.Sprintf(`{"client_id":%q,"status":"dormant","hourly_rate":150000,"title":"Last %s"}`, one(t.clients), uniq), "m-" + uniq
	case "time_entries.create":
		return "POST", "/time-entries", fmt.Sprintf(`{"matter_id":%q,"date":"2026-0%d-1%d","duration_minutes":%d,"description":"Møde med klient"}`,
			one(t.matters), 1+r.IntN(9), r.IntN(10), 6+r.IntN(120)), "te-" + uniq
	}
	list := map[string]string{"matters.list": "/matters", "clients.list": "/clients", "people.list": "/people", "companies.list": "/companies",
		"time_entries.list": "/time-entries", "invoices.list": "/invoices", "documents.list": "/documents", "webhooks.list": "/webhooks"}
	return "GET", list[route] + "?per_page=100", "", ""
}

// send sends one request; id is a created resource's.
func send(base, key, method, path, body, idem string) (status int, id, message string, err error) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	var answer struct {
		Data    struct{ ID string } `json:"data"`
		Message string              `json:"message"`
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode < 400 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, "", "", nil
	}
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	return resp.StatusCode, answer.Data.ID, answer.Message, nil
}

// budgets reads docs/cost-model.md's capacity table: WRU and RRU per
// request of each route's main form, as TestCapacityPerRoute holds them.
func budgets() (map[string][2]float64, error) {
	doc, err := os.ReadFile("docs/cost-model.md")
	if err != nil {
		return nil, err
	}
	out := map[string][2]float64{}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([0-9.]+) \\| ([0-9.]+) \\|")
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		w, _ := strconv.ParseFloat(m[2], 64)
		r, _ := strconv.ParseFloat(m[3], 64)
		out[m[1]] = [2]float64{w, r}
	}
	if len(out) == 0 {
		return nil, errors.New("docs/cost-model.md has no capacity table")
	}
	return out, nil
}

// budgetOf is the table's row for what the run sent as route.
func budgetOf(b map[string][2]float64, route string) [2]float64 {
	if route == "reports.get" {
		return b["reports.get wip"]
	}
	return b[route]
}

// Prices of on-demand DynamoDB per million request units (us-east-1 and
// eu-north-1, 2026).
const (
	pricePerMWRU = 0.625
	pricePerMRRU = 0.125
)

func report(w io.Writer, res *results, rep ddbproxy.Report, delivered int64, o options, s, top float64) {
	b, err := budgets()
	if err != nil {
		fmt.Fprintln(w, "capacity:", err)
	}
	rate := float64(res.requests) / res.elapsed.Seconds()
	fmt.Fprintf(w, "\n%d requests in %s (%.1f/s), %d webhook deliveries received\n\n", res.requests, res.elapsed.Round(time.Second), rate, delivered)
	fmt.Fprintf(w, "%-22s %7s %9s %9s %7s %7s %7s\n", "route", "n", "p50 ms", "p99 ms", "4xx5xx", "WRU/req", "RRU/req")
	expW, expR := 0.0, 0.0
	for _, route := range slices.Sorted(maps.Keys(res.latency)) {
		d := res.latency[route]
		slices.Sort(d)
		bu := budgetOf(b, route)
		expW += bu[0] * float64(len(d))
		expR += bu[1] * float64(len(d))
		fmt.Fprintf(w, "%-22s %7d %9.1f %9.1f %7d %7.1f %7.1f\n", route, len(d), ms(d[len(d)/2]), ms(d[min(len(d)-1, len(d)*99/100)]),
			res.errors[route], bu[0], bu[1])
	}
	for _, route := range slices.Sorted(maps.Keys(res.statuses)) {
		fmt.Fprintf(w, "refused %s:", route)
		for _, st := range slices.Sorted(maps.Keys(res.statuses[route])) {
			fmt.Fprintf(w, " %d×%d", res.statuses[route][st], st)
		}
		fmt.Fprintln(w)
		for _, m := range slices.Sorted(maps.Keys(res.why[route])) {
			fmt.Fprintf(w, "    %d× %s\n", res.why[route][m], m)
		}
	}
	n := float64(res.requests)
	fmt.Fprintf(w, "\nper request, the routes' table: %.2f WRU, %.2f RRU; measured by the proxy, the store calls of every function "+
		"(the dispatcher, deliveries and enrichment behind the requests included): %.2f WRU, %.2f RRU in %d calls\n",
		expW/n, expR/n, rep.Total.WRU/n, rep.Total.RRU/n, rep.Total.Calls)
	fmt.Fprintf(w, "by operation:")
	for _, op := range slices.Sorted(maps.Keys(rep.ByOp)) {
		c := rep.ByOp[op]
		fmt.Fprintf(w, " %s %d calls %.0f WRU %.0f RRU;", op, c.Calls, c.WRU, c.RRU)
	}
	fmt.Fprintf(w, "\n\nbusiest partition keys (share of the run's write units):\n")
	for _, k := range rep.Hottest {
		fmt.Fprintf(w, "  %5.1f%%  %.0f WRU  %s\n", 100*k.WRU/rep.KeyWRU, k.WRU, k.Key)
	}
	scale := 1000 / rate
	wps, rps := rep.Total.WRU/res.elapsed.Seconds()*scale, rep.Total.RRU/res.elapsed.Seconds()*scale
	fmt.Fprintf(w, "\nprojected to 1,000 requests/s with the same mix and spread (top organisation %.0f%%, Zipf s=%.2f):\n", 100*top, s)
	fmt.Fprintf(w, "  DynamoDB: %.0f WRU/s and %.0f RRU/s: $%.2f an hour, $%.0f a month of 730 hours\n", wps, rps,
		(wps*pricePerMWRU+rps*pricePerMRRU)*3600/1e6, (wps*pricePerMWRU+rps*pricePerMRRU)*3600*730/1e6)
	if len(rep.Hottest) > 0 {
		hot := rep.Hottest[0]
		fmt.Fprintf(w, "  the busiest partition key (%s) would take %.0f WCU/s of the 1,000 one key can take\n",
			hot.Key, hot.WRU/res.elapsed.Seconds()*scale)
	}
	var sum time.Duration
	for _, d := range res.latency {
		for _, x := range d {
			sum += x
		}
	}
	fmt.Fprintf(w, "  Lambda: a mean request of %.1f ms here: about %.0f executions at once at 1,000/s (local latency, an upper bound)\n",
		ms(sum/time.Duration(max(res.requests, 1))), float64(sum.Seconds())/float64(max(res.requests, 1))*1000)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
