package main

import (
	"context"

	"encoding/json"
	"fmt"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/migrate"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// tool runs the admin tool's commands on an API's table, as an operator
// would, and records which commands ran.
type tool struct {
	t    *testing.T
	e    *apitest.Env
	mu   sync.Mutex
	used map[string]bool
}

func newTool(t *testing.T) *tool {
	return &tool{t: t, e: apitest.New(t, apitest.Options{RateLimit: 100000}), used: map[string]bool{}}
}

func (tl *tool) open(context.Context) (*env, error) {
	return &env{db: tl.e.DB, keys: auth.NewStore(tl.e.DB, 0), now: time.Now()}, nil
}

// run runs argv and returns its JSON answer decoded, or the error.
func (tl *tool) run(argv ...string) (map[string]any, error) {
	tl.t.Helper()
	if c, _, ok := lookup(argv); ok {
		tl.mu.Lock()
		tl.used[c.name] = true
		tl.mu.Unlock()
	}
	out, err := run(context.Background(), argv, tl.open, func(q string) (bool, error) {
		tl.t.Errorf("asked %q on a local engine", q)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(out)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m, nil
}

func (tl *tool) must(argv ...string) map[string]any {
	tl.t.Helper()
	m, err := tl.run(argv...)
	if err != nil {
		tl.t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	return m
}

func (tl *tool) refused(words string, argv ...string) {
	tl.t.Helper()
	if _, err := tl.run(argv...); err == nil || !strings.Contains(err.Error(), words) {
		tl.t.Errorf("%s: %v, want an error saying %q", strings.Join(argv, " "), err, words)
	}
}

func id(m map[string]any) string { s, _ := m["id"].(string); return s }

// TestEveryCommand runs each command of the table on the same table the
// API serves, with what it needs made through the API, and the mistakes
// an operator makes (a missing flag, an unknown command or state, a CPR in
// an argument). Every command in the table must be exercised here.
func TestEveryCommand(t *testing.T) {
	tl := newTool(t)
	org := id(tl.must("org", "create", "--name", "Advokat A/S"))
	tl.must("org", "set-limit", "--org", org, "--ceiling", "600")
	second := id(tl.must("org", "create", "--name", "Advokat B/S"))
	all := tl.must("org", "list", "--limit", "1000")
	listed := fmt.Sprint(all["organizations"])
	if !strings.Contains(listed, org) || !strings.Contains(listed, second) || !strings.Contains(listed, "rate_ceiling:600") || all["more"] != false {
		t.Fatalf("org list: %v", all)
	}
	if one := tl.must("org", "list", "--limit", "1"); one["count"] != 1.0 || one["more"] != true {
		t.Fatalf("org list --limit 1: %v", one)
	}
	tl.refused("--limit must be at least 1", "org", "list", "--limit", "0")
	k := tl.must("key", "create", "--org", org, "--scopes", "matters:read,matters:write,clients:read,clients:write,parties:write,time:read,time:write", "--mode", "test")
	client, key := k["client_id"].(string), k["key"].(string)
	if !strings.HasPrefix(key, "pa_test_") {
		t.Fatalf("key create: %v", k)
	}
	tl.must("key", "set-limit", "--client", client, "--rate-limit", "60")
	if l := tl.must("key", "list", "--org", org); l["count"] != 1.0 || strings.Contains(fmt.Sprint(l), key) {
		t.Fatalf("key list: %v", l)
	}
	// What the application would hold: a company client, a matter, a time entry.
	e := tl.e
	co := e.Post("/api/v1/companies", key, "co", `{"name":"Kunde ApS","cvr":"12345678"}`).Body["data"].(map[string]any)["id"].(string)
	cl := e.Post("/api/v1/clients", key, "cl", `{"company_id":"`+co+`"}`).Body["data"].(map[string]any)["id"].(string)
	m := e.Post("/api/v1/matters", key, "m", `{"client_id":"`+cl+`","hourly_rate":100000}`).Body["data"].(map[string]any)["id"].(string)
	te := e.Post("/api/v1/time-entries", key, "te", `{"matter_id":"`+m+`","date":"2025-03-01","duration_minutes":60}`).Body["data"].(map[string]any)["id"].(string)

	tl.must("kyc", "set", "--org", org, "--client", cl, "--status", "approved")
	if got := tl.must("matter", "set-status", "--org", org, "--matter", m, "--status", "active"); got["status"] != "active" {
		t.Fatalf("matter set-status: %v", got)
	}
	tl.refused("cannot move from active to archived", "matter", "set-status", "--org", org, "--matter", m, "--status", "archived")
	tl.refused("is not a matter status", "matter", "set-status", "--org", org, "--matter", m, "--status", "closd")
	for _, st := range []string{"submitted", "approved"} {
		tl.must("time-entry", "set-status", "--org", org, "--entry", te, "--status", st)
	}
	inv := tl.must("invoice", "create", "--org", org, "--matter", m, "--issue-date", "2025-03-31",
		"--lines", `[{"description":"Rådgivning","amount":100000,"time_entry_id":"`+te+`"}]`)
	if inv["status"] != "draft" {
		t.Fatalf("invoice create: %v", inv)
	}
	tl.must("invoice", "set-status", "--org", org, "--invoice", id(inv), "--status", "sent")
	doc := tl.must("document", "create", "--org", org, "--matter", m, "--name", "Skøde", "--filename", "skoede.pdf", "--mime", "application/pdf", "--size", "1024")
	tl.must("document", "seal", "--org", org, "--document", id(doc))
	if got := tl.must("matter", "close", "--org", org, "--matter", m); got["status"] != "closed" {
		t.Fatalf("matter close: %v", got)
	}
	if s := tl.must("seed", "--org", org, "--matters", "3", "--entries-per-matter", "2"); s["matters"] != 3.0 {
		t.Fatalf("seed: %v", s)
	}
	if r := tl.must("enrichment", "resume", "--org", org); r["count"] != 1.0 {
		t.Fatalf("enrichment resume (the company has not been enriched here): %v", r)
	}
	if p := tl.must("outbox", "parked"); p["count"] != 0.0 {
		t.Fatalf("outbox parked: %v", p)
	}
	tl.refused("no parked event", "outbox", "replay", "--event", "nope")
	if r := tl.must("outbox", "replay", "--all"); r["count"] != 0.0 {
		t.Fatalf("outbox replay: %v", r)
	}
	rot := tl.must("key", "rotate", "--client", client)
	tl.must("key", "revoke-secret", "--client", client, "--secret", rot["secret_id"].(string))
	tl.must("key", "revoke", "--client", client)

	tl.refused("--name is required", "org", "create")
	tl.refused("--ceiling is required", "org", "set-limit", "--org", org)
	tl.refused("--size is required", "document", "create", "--org", org, "--matter", m, "--name", "N", "--filename", "f", "--mime", "text/plain")
	tl.refused("--lines must be a JSON array", "invoice", "create", "--org", org, "--matter", m, "--issue-date", "2025-03-31", "--lines", `{"x":1}`)
	tl.refused("give --event EVENT or --all", "outbox", "replay")
	if out := tl.must("migrate", "--dry-run"); out["applied"] == nil {
		t.Errorf("migrate --dry-run: %v", out)
	}
	tl.refused("unknown command", "matter", "reopen")
	tl.refused("unknown command", "key")
	tl.refused("usage: admin", "matter", "close", "--nope")
	tl.refused("unexpected argument", "org", "create", "--name", "A", "stray")
	tl.refused("CPR numbers are never stored", "org", "create", "--name", "Anne 010190-1234")
	tl.refused("CPR numbers are never stored", "invoice", "create", "--org", org, "--matter", m, "--issue-date", "2025-03-31",
		"--lines", `[{"description":"0101901234","amount":1}]`)

	for _, c := range commands {
		if !tl.used[c.name] {
			t.Errorf("command %q is not exercised by this test", c.name)
		}
		if !strings.Contains(usage(), "  "+c.name+" ") {
			t.Errorf("usage lacks %q", c.name)
		}
	}
}

// TestParkedEventsReplay: an event the dispatcher parked is listed with
// why, and replayed once.
func TestParkedEventsReplay(t *testing.T) {
	tl := newTool(t)
	org := id(tl.must("org", "create", "--name", "B"))
	ev, err := outbox.New(org, outbox.MatterClosed, "matter", map[string]string{"id": "m1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// As the dispatcher parks an event it gave up on.
	item, err := store.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	item["GSI6PK"] = &ddbtypes.AttributeValueMemberS{Value: outbox.ParkedPK}
	item["parked_reason"] = &ddbtypes.AttributeValueMemberS{Value: "receiver gone"}
	if err := tl.e.DB.PutNew(context.Background(), item); err != nil {
		t.Fatal(err)
	}
	p := tl.must("outbox", "parked")
	if p["count"] != 1.0 || !strings.Contains(fmt.Sprint(p["events"]), "receiver gone") {
		t.Fatalf("outbox parked: %v", p)
	}
	if r := tl.must("outbox", "replay", "--event", ev.ID); r["count"] != 1.0 {
		t.Fatalf("outbox replay: %v", r)
	}
	if p := tl.must("outbox", "parked"); p["count"] != 0.0 {
		t.Fatalf("still parked after a replay: %v", p)
	}
}

// TestOperatorsAtOnce: several operators' tools on one table at once, each
// on its own organisation, some of their commands wrong: every good one
// lands, every bad one is refused, and nothing of one shows up in another.
func TestOperatorsAtOnce(t *testing.T) {
	tl := newTool(t)
	var wg sync.WaitGroup
	orgs := make([]string, 6)
	for i := range orgs {
		wg.Go(func() {
			org, err := tl.run("org", "create", "--name", fmt.Sprintf("Org %d", i))
			if err != nil {
				t.Error(err)
				return
			}
			orgs[i] = id(org)
			for j := range 3 {
				if _, err := tl.run("key", "create", "--org", orgs[i], "--scopes", "matters:read", "--name", fmt.Sprint(j)); err != nil {
					t.Error(err)
				}
				if _, err := tl.run("key", "create", "--org", orgs[i], "--scopes", "no:such"); err == nil {
					t.Error("an unknown scope was accepted")
				}
			}
		})
	}
	wg.Wait()
	for _, org := range orgs {
		if l := tl.must("key", "list", "--org", org); l["count"] != 3.0 {
			t.Errorf("%s: %v keys, want 3", org, l["count"])
		}
	}
}

// TestHelpIsText: an operator asking for help reads text, not a JSON
// error; a flag's value that happens to be "help" is a value.
func TestHelpIsText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		argv []string
		want string // "" when it is not a request for help
	}{
		{[]string{"--help"}, "usage: admin <command> [flags]\n  org create --name NAME\n"},
		{[]string{"-h"}, "outbox replay"},
		{[]string{"help"}, "env: DYNAMODB_ENDPOINT"},
		{[]string{"key", "create", "--help"}, "usage: admin key create --org ORG --scopes"},
		{[]string{"matter", "--help"}, "usage: admin <command> [flags]\n  matter close --org ORG --matter MATTER\n  matter set-status"},
		{[]string{"time-entry", "-h"}, "time-entry set-status --org ORG --entry ENTRY --status STATUS"},
		{[]string{"org", "create", "--name", "help"}, ""},
		{[]string{"org", "create", "--name", "x"}, ""},
		{nil, ""},
		{[]string{"nosuch", "--help"}, ""},
	} {
		text, ok := help(c.argv)
		if ok != (c.want != "") || !strings.Contains(text, c.want) || (ok && strings.HasPrefix(text, "{")) {
			t.Errorf("%q: %v %q", c.argv, ok, text)
		}
	}
}

// TestAskBeforeWritingToAWS: against AWS (an env with a target), a command
// that writes says where and asks first; "no" writes nothing, --yes does
// not ask, and reading commands never ask. --client takes a key's 32 hex
// digits as well as the UUID, and nothing else.
func TestAskBeforeWritingToAWS(t *testing.T) {
	tl := newTool(t)
	org := tl.must("org", "create", "--name", "Advokathuset")["id"].(string)
	remote := func(context.Context) (*env, error) {
		e, err := tl.open(context.Background())
		e.target = "table practice-api of account 123456789012 in region eu-north-1"
		return e, err
	}
	var asked []string
	answer := false
	confirm := func(q string) (bool, error) { asked = append(asked, q); return answer, nil }
	_, err := run(context.Background(), []string{"key", "create", "--org", org, "--scopes", "matters:read"}, remote, confirm)
	if err == nil || !strings.Contains(err.Error(), "not confirmed, nothing was written") || len(asked) != 1 ||
		!strings.Contains(asked[0], "account 123456789012 in region eu-north-1") {
		t.Fatalf("declined: %v, asked %q", err, asked)
	}
	if keys := tl.must("key", "list", "--org", org)["keys"]; keys != nil && len(keys.([]any)) != 0 {
		t.Fatalf("a declined create wrote a key: %v", keys)
	}
	answer = true
	out, err := run(context.Background(), []string{"key", "create", "--org", org, "--scopes", "matters:read"}, remote, confirm)
	if err != nil || len(asked) != 2 {
		t.Fatalf("confirmed: %v, asked %d times", err, len(asked))
	}
	client := out.(map[string]string)["client_id"]
	asked = nil
	if _, err := run(context.Background(), []string{"key", "set-limit", "--client", strings.ReplaceAll(client, "-", ""), "--rate-limit", "60", "--yes"}, remote, confirm); err != nil || len(asked) != 0 {
		t.Fatalf("--yes with the key's hex form: %v, asked %q", err, asked)
	}
	if _, err := run(context.Background(), []string{"key", "list", "--org", org}, remote, confirm); err != nil || len(asked) != 0 {
		t.Fatalf("a listing asked: %v %q", err, asked)
	}
	if _, err := tl.run("key", "revoke", "--client", "pa_test_nope"); err == nil || !strings.Contains(err.Error(), "is not a client id") {
		t.Fatalf("a malformed client id: %v", err)
	}
	for _, c := range []struct {
		endpoint string
		remote   bool
	}{{"aws", true}, {"", true}, {"https://dynamodb.eu-north-1.amazonaws.com", true},
		{"http://127.0.0.1:8000", false}, {"http://localhost:8000", false}, {"http://[::1]:8000", false}} {
		if remoteEndpoint(c.endpoint) != c.remote {
			t.Errorf("remoteEndpoint(%q) = %v", c.endpoint, !c.remote)
		}
	}
}

// TestMigrate: admin migrate lists the releases' data changes and applies
// the pending ones, once; --dry-run changes nothing.
func TestMigrate(t *testing.T) {
	tl := newTool(t)
	tl.must("migrate", "--dry-run") // the command as shipped: no step yet
	e, _ := tl.open(context.Background())
	n := 0
	steps := []migrate.Step{{ID: "2026-11-24-example", What: "an example", Run: func(context.Context, *store.DB) error { n++; return nil }}}
	dry, _ := parseArgs("migrate", []string{"--dry-run"})
	out, err := migrateSteps(context.Background(), e, dry, steps)
	if err != nil || n != 0 || out.(map[string]any)["steps"].([]migrate.Status)[0].AppliedAt != "" {
		t.Fatalf("--dry-run: %v %v, ran %d", out, err, n)
	}
	wet, _ := parseArgs("migrate", nil)
	for range 2 {
		if _, err := migrateSteps(context.Background(), e, wet, steps); err != nil {
			t.Fatal(err)
		}
	}
	if n != 1 {
		t.Fatalf("the step ran %d times", n)
	}
}

// TestErrorsReadAsWritten: the JSON error of an unknown command holds the
// usage with its <command> as written, not \u003c escapes.
func TestErrorsReadAsWritten(t *testing.T) {
	t.Parallel()
	_, err := run(context.Background(), []string{"matter"}, nil, nil)
	if err == nil {
		t.Fatal("admin matter: no error")
	}
	var b strings.Builder
	if err := printJSON(&b, map[string]string{"error": err.Error()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "admin <command> [flags]") || strings.Contains(b.String(), `\u003c`) {
		t.Errorf("the error reads %s", b.String())
	}
}
