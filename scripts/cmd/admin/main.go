// Command admin is the operator tool that stands in for the
// practice-management application's settings and workflows. Every command
// prints one JSON object on stdout and exits 0, or {"error": ...} on stderr
// and exits 1. Its surface is fixed by LOCAL-CONTRACT.md.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/migrate"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
)

func main() {
	if text, ok := help(os.Args[1:]); ok {
		fmt.Print(text)
		return
	}
	out, err := run(context.Background(), os.Args[1:], openFromEnv, terminalConfirm)
	if err != nil {
		_ = printJSON(os.Stderr, map[string]string{"error": err.Error()})
		os.Exit(1)
	}
	_ = printJSON(os.Stdout, out)
}

// printJSON writes v as one line of JSON, with <, > and & as they are (the
// usage's <command> reads as written, not as \u003c).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// env is what every command works on.
type env struct {
	db   *store.DB
	keys *auth.Store
	now  time.Time
	// target names where a write would land, when that is AWS ("table T
	// of account A in region R"); "" for a local engine, where the tool
	// never asks (the local runtimes' suites drive it).
	target string
}

// confirmer asks the operator whether to go on; false stops the command
// before it writes anything.
type confirmer func(question string) (bool, error)

// terminalConfirm asks on the terminal. Without one (a script, a pipe) it
// refuses: a script says --yes.
func terminalConfirm(question string) (bool, error) {
	if fi, err := os.Stdin.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false, errors.New("this command writes to AWS and stdin is not a terminal to ask on: pass --yes to confirm")
	}
	fmt.Fprint(os.Stderr, question+" [y/N] ")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

// opener opens the store a command works on.
type opener func(ctx context.Context) (*env, error)

// openFromEnv reads the environment once (config.Vars: DYNAMODB_ENDPOINT,
// default here http://127.0.0.1:8000, "aws" for the SDK's own; TABLE_NAME;
// RATE_LIMIT_PER_MINUTE; OUTBOX_SHARDS) and opens the store it names.
func openFromEnv(ctx context.Context) (*env, error) {
	cfg, err := config.Load(config.With(os.LookupEnv, map[string]string{"DYNAMODB_ENDPOINT": "http://127.0.0.1:8000"}))
	if err != nil {
		return nil, err
	}
	sc := app.StoreConfig(cfg)
	if remoteEndpoint(sc.Endpoint) {
		// An operator's shell: the SDK's whole chain (a profile, SSO),
		// which the store, built for functions, does not read itself.
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, err
		}
		sc.AWS = &awsCfg
	}
	db, err := store.New(ctx, sc)
	if err != nil {
		return nil, err
	}
	// Keys without a limit of their own count against their organisation's
	// ceiling at the stage's default as the stage stored it (apiapp.Load), not
	// at this shell's RATE_LIMIT_PER_MINUTE.
	limit, stored, err := auth.StoredDefaultLimit(ctx, db)
	if err != nil {
		return nil, err
	}
	keys := auth.NewStore(db, limit) // not stored: 0, the built-in default
	if shell, set := os.LookupEnv("RATE_LIMIT_PER_MINUTE"); set && shell != strconv.Itoa(keys.DefaultLimit()) {
		fmt.Fprintf(os.Stderr, "note: RATE_LIMIT_PER_MINUTE=%s in this shell is not the stage's default (%d, %s): keys without a limit of their own count at %d\n",
			shell, keys.DefaultLimit(), map[bool]string{true: "stored in the table", false: "none stored yet: the built-in default"}[stored], keys.DefaultLimit())
	}
	e := &env{db: db, keys: keys, now: time.Now()}
	if remoteEndpoint(cfg.DynamoDBEndpoint) {
		e.target = describeTarget(ctx, cfg.TableName)
	}
	return e, nil
}

// remoteEndpoint reports whether the store is AWS's (or anything but an
// engine on this machine).
func remoteEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil || u.Host == "" {
		return true // "aws", or the SDK's own resolution
	}
	ip := net.ParseIP(u.Hostname())
	return !(u.Hostname() == "localhost" || ip != nil && ip.IsLoopback())
}

// describeTarget names the table, the account and the region a write
// would land in (sts:GetCallerIdentity; the region from the SDK's chain).
func describeTarget(ctx context.Context, table string) string {
	account, region := "an unknown account", "an unknown region"
	if awsCfg, err := awsconfig.LoadDefaultConfig(ctx); err == nil {
		if awsCfg.Region != "" {
			region = awsCfg.Region
		}
		if id, err := sts.NewFromConfig(awsCfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); err == nil {
			account = "account " + aws.ToString(id.Account)
		}
	}
	return fmt.Sprintf("table %s of %s in region %s", table, account, region)
}

// args are every command's flags, parsed by one flag set.
type args struct {
	fs                                                                    *flag.FlagSet
	cmd                                                                   string
	name, org, scopes, mode, expires, client, secret, status, matter      string
	entry, invoice, document, issue, lines, filename, mime, folder, event string
	size                                                                  int64
	matters, perEntry, limit, rate, ceiling                               int
	all, yes, dryRun                                                      bool
}

func parseArgs(cmd string, rest []string) (*args, error) {
	a := &args{cmd: cmd, fs: flag.NewFlagSet(cmd, flag.ContinueOnError)}
	fs := a.fs
	fs.SetOutput(io.Discard)
	for _, f := range []struct {
		p    *string
		name string
		def  string
	}{{&a.name, "name", ""}, {&a.org, "org", ""}, {&a.scopes, "scopes", ""}, {&a.mode, "mode", auth.ModeLive},
		{&a.expires, "expires", ""}, {&a.client, "client", ""}, {&a.secret, "secret", ""}, {&a.status, "status", ""},
		{&a.matter, "matter", ""}, {&a.entry, "entry", ""}, {&a.invoice, "invoice", ""}, {&a.document, "document", ""},
		{&a.issue, "issue-date", ""}, {&a.lines, "lines", ""}, {&a.filename, "filename", ""}, {&a.mime, "mime", ""},
		{&a.folder, "folder", ""}, {&a.event, "event", ""}} {
		fs.StringVar(f.p, f.name, f.def, f.name)
	}
	fs.Int64Var(&a.size, "size", -1, "size in bytes")
	fs.IntVar(&a.matters, "matters", 20, "matters to create")
	fs.IntVar(&a.perEntry, "entries-per-matter", 0, "time entries per matter")
	fs.IntVar(&a.limit, "limit", 100, "events to list")
	fs.IntVar(&a.rate, "rate-limit", 0, "requests per minute")
	fs.IntVar(&a.ceiling, "ceiling", -1, "requests per minute")
	fs.BoolVar(&a.all, "all", false, "every parked event")
	fs.BoolVar(&a.yes, "yes", false, "write to AWS without asking")
	fs.BoolVar(&a.dryRun, "dry-run", false, "list, change nothing")
	if err := fs.Parse(rest); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", cmd, err, usage())
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected argument %q\n%s", cmd, fs.Arg(0), usage())
	}
	// A client id in either form: a UUID, or the 32 hex digits a key
	// carries (pa_<mode>_<these>_…).
	if a.client != "" {
		id, err := uuid.Parse(a.client)
		if err != nil || (len(a.client) != 32 && len(a.client) != 36) {
			return nil, fmt.Errorf("%s: --client %q is not a client id: a UUID, or the 32 hex digits after a key's mode", cmd, a.client)
		}
		a.client = id.String()
	}
	return a, nil
}

// need fails unless every named flag was given a value.
func (a *args) need(flags ...string) error {
	for _, f := range flags {
		if a.fs.Lookup(f).Value.String() == "" {
			return fmt.Errorf("%s: --%s is required", a.cmd, f)
		}
	}
	return nil
}

// command is one subcommand: its words, its flags as usage shows them, and
// what it does.
type command struct {
	name  string
	flags string
	run   func(ctx context.Context, e *env, a *args) (any, error)
}

// readOnly are the commands that write nothing: the tool asks before any
// other writes to AWS.
var readOnly = []string{"org list", "key list", "outbox parked"}

var commands = []command{
	{"org create", "--name NAME", orgCreate},
	{"org list", "[--limit N]                               organisations, oldest first (at most N, default 100)", orgList},
	{"org set-limit", "--org ORG --ceiling N             requests/minute all its keys' limits may add up to (0: the default: 18000, or 150 keys at the stage's default limit if more)", orgSetLimit},
	{"key create", "--org ORG --scopes s1,s2 [--mode live|test] [--expires RFC3339] [--name N] [--rate-limit N]", keyCreate},
	{"key set-limit", "--client CLIENT --rate-limit N     the key's own requests/minute (0: the stage's RATE_LIMIT_PER_MINUTE)", keySetLimit},
	{"key list", "--org ORG                               the organisation's keys, live and revoked (never a secret)", keyList},
	{"key rotate", "--client CLIENT", keyRotate},
	{"key revoke-secret", "--client CLIENT --secret SECRET_ID", keyRevokeSecret},
	{"key revoke", "--client CLIENT", keyRevoke},
	{"kyc set", "--org ORG --client CLIENT --status STATUS [--expires RFC3339]", kycSet},
	{"matter close", "--org ORG --matter MATTER", matterClose},
	{"matter set-status", "--org ORG --matter MATTER --status STATUS", matterSetStatus},
	{"time-entry set-status", "--org ORG --entry ENTRY --status STATUS", timeEntrySetStatus},
	{"invoice create", "--org ORG --matter MATTER --issue-date YYYY-MM-DD --lines JSON [--status draft]", invoiceCreate},
	{"invoice set-status", "--org ORG --invoice INVOICE --status STATUS", invoiceSetStatus},
	{"document create", "--org ORG --matter MATTER --name N --filename F --mime M --size BYTES [--folder F]", documentCreate},
	{"document seal", "--org ORG --document DOCUMENT", documentSeal},
	{"seed", "--org ORG [--matters N] [--entries-per-matter N]", seedOrg},
	{"outbox parked", "[--limit N]                      events the dispatcher gave up on, with why", outboxParked},
	{"outbox replay", "(--event EVENT | --all)          put parked events back; the next sweep sends them", outboxReplay},
	{"enrichment resume", "[--org ORG]                   start again the enrichment of companies still pending", enrichmentResume},
	{"migrate", "[--dry-run]                                the data changes releases need (shared/migrate): list them, apply the pending ones", migrateRun},
}

func usage() string {
	var b strings.Builder
	b.WriteString("usage: admin <command> [flags]\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %s %s\n", c.name, c.flags)
	}
	b.WriteString(`env: DYNAMODB_ENDPOINT (default http://127.0.0.1:8000; "aws" for the SDK's own), TABLE_NAME (default practice-api),
     RATE_LIMIT_PER_MINUTE (default 120: what a key without its own limit counts for against its organisation's ceiling)
On AWS (DYNAMODB_ENDPOINT=aws) every command that writes says which table, account and region it is about to
write to and asks first; --yes skips the question (scripts). --client takes a UUID or a key's 32 hex digits.`)
	return b.String()
}

// hasCPR reports whether a JSON argument (--lines) names or holds a CPR.
func hasCPR(v any) bool {
	_, removed := cpr.Scrub(v)
	return removed > 0
}

// run finds the command args name, parses its flags, opens the store and
// runs it.
func run(ctx context.Context, argv []string, open opener, confirm confirmer) (any, error) {
	if len(argv) == 0 {
		return nil, errors.New(usage())
	}
	// Every text the application writes passes the same CPR guard as the
	// API's bodies: no name, file name, folder or invoice line may carry one.
	for _, a := range argv {
		var v any
		if _, removed := cpr.Scrub(a); removed > 0 || (json.Unmarshal([]byte(a), &v) == nil && hasCPR(v)) {
			return nil, errors.New("CPR numbers are never stored, in any field or form: remove it from the arguments")
		}
	}
	c, rest, ok := lookup(argv)
	if !ok {
		return nil, fmt.Errorf("unknown command %q\n%s", strings.Join(argv[:min(2, len(argv))], " "), usage())
	}
	a, err := parseArgs(c.name, rest)
	if err != nil {
		return nil, err
	}
	e, err := open(ctx)
	if err != nil {
		return nil, err
	}
	if e.target != "" && !a.yes && !slices.Contains(readOnly, c.name) {
		ok, err := confirm(fmt.Sprintf("admin %s: about to write to %s. Go on?", c.name, e.target))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%s: not confirmed, nothing was written (--yes confirms in a script)", c.name)
		}
	}
	return c.run(ctx, e, a)
}

// help is the text an operator asking for help reads (admin --help, -h or
// help; admin <command> --help), as text rather than a JSON error: the
// commands, or the one named with its flags.
func help(argv []string) (string, bool) {
	flagHelp := func(a string) bool { return a == "--help" || a == "-h" }
	switch c, rest, ok := lookup(argv); {
	case len(argv) == 0:
		return "", false
	case ok && slices.ContainsFunc(rest, flagHelp):
		return fmt.Sprintf("usage: admin %s %s\n", c.name, c.flags), true
	case flagHelp(argv[0]) || argv[0] == "help":
		return usage() + "\n", true
	case !ok && slices.ContainsFunc(argv[1:], flagHelp):
		// A group's word and --help (admin matter --help): its commands.
		var b strings.Builder
		for _, c := range commands {
			if strings.HasPrefix(c.name, argv[0]+" ") {
				fmt.Fprintf(&b, "  %s %s\n", c.name, c.flags)
			}
		}
		if b.Len() > 0 {
			return "usage: admin <command> [flags]\n" + b.String(), true
		}
	}
	return "", false
}

// lookup finds the command named by the first one or two words of argv.
func lookup(argv []string) (command, []string, bool) {
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(argv) >= len(words) && strings.Join(argv[:len(words)], " ") == c.name {
			return c, argv[len(words):], true
		}
	}
	return command{}, nil, false
}

// migrateRun lists the data changes of every release and whether the table
// has each; without --dry-run it applies the pending ones, in order.
func migrateRun(ctx context.Context, e *env, a *args) (any, error) {
	return migrateSteps(ctx, e, a, migrate.Steps)
}

func migrateSteps(ctx context.Context, e *env, a *args, steps []migrate.Step) (any, error) {
	var applied []string
	if !a.dryRun {
		var err error
		if applied, err = migrate.Apply(ctx, e.db, steps); err != nil {
			return nil, err
		}
	}
	status, err := migrate.List(ctx, e.db, steps)
	if err != nil {
		return nil, err
	}
	if applied == nil {
		applied = []string{}
	}
	return map[string]any{"steps": status, "applied": applied}, nil
}

func orgCreate(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("name"); err != nil {
		return nil, err
	}
	return e.keys.CreateOrg(ctx, "", a.name, e.now)
}

func orgList(ctx context.Context, e *env, a *args) (any, error) {
	if a.limit < 1 {
		return nil, fmt.Errorf("%s: --limit must be at least 1", a.cmd)
	}
	type row struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		CreatedAt   string `json:"created_at"`
		RateCeiling int    `json:"rate_ceiling"`
	}
	orgs := []row{}
	var after store.StartKey
	for len(orgs) < a.limit {
		page, next, err := e.keys.Orgs(ctx, min(a.limit-len(orgs), 1000), after)
		if err != nil {
			return nil, err
		}
		for _, o := range page {
			orgs = append(orgs, row{o.ID, o.Name, o.CreatedAt, e.keys.CeilingOf(o)})
		}
		if after = next; next == nil {
			return map[string]any{"organizations": orgs, "count": len(orgs), "more": false}, nil
		}
	}
	return map[string]any{"organizations": orgs, "count": len(orgs), "more": true}, nil
}

func orgSetLimit(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org"); err != nil {
		return nil, err
	}
	if a.ceiling < 0 {
		return nil, fmt.Errorf("%s: --ceiling is required (requests per minute; 0 for the default)", a.cmd)
	}
	o, err := e.keys.SetCeiling(ctx, a.org, a.ceiling)
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": o.ID, "name": o.Name, "rate_ceiling": e.keys.CeilingOf(o)}, nil
}

func keyCreate(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org", "scopes"); err != nil {
		return nil, err
	}
	sc, err := auth.ParseScopes(a.scopes)
	if err != nil {
		return nil, err
	}
	exp, err := parseTime(a.expires)
	if err != nil {
		return nil, err
	}
	if a.rate < 0 {
		return nil, fmt.Errorf("%s: --rate-limit is a positive number of requests per minute", a.cmd)
	}
	c, tok, err := e.keys.CreateKey(ctx, auth.KeyRequest{OrgID: a.org, Name: a.name, Mode: a.mode, Scopes: sc, Expires: exp, RateLimit: a.rate}, e.now)
	if err != nil {
		return nil, err
	}
	return keyOut(c.ID, tok), nil
}

func keySetLimit(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("client", "rate-limit"); err != nil {
		return nil, err
	}
	return e.keys.SetLimit(ctx, a.client, a.rate)
}

func keyList(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org"); err != nil {
		return nil, err
	}
	if _, err := e.keys.GetOrg(ctx, a.org); err != nil {
		return nil, err
	}
	refs, err := e.keys.Keys(ctx, a.org)
	if err != nil {
		return nil, err
	}
	return map[string]any{"organization_id": a.org, "keys": refs, "count": len(refs)}, nil
}

func keyRotate(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("client"); err != nil {
		return nil, err
	}
	tok, err := e.keys.Rotate(ctx, a.client, e.now)
	if err != nil {
		return nil, err
	}
	return keyOut(a.client, tok), nil
}

func keyRevokeSecret(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("client", "secret"); err != nil {
		return nil, err
	}
	if err := e.keys.RevokeSecret(ctx, a.client, a.secret); err != nil {
		return nil, err
	}
	return map[string]any{"client_id": a.client, "secret_id": a.secret, "revoked": true}, nil
}

func keyRevoke(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("client"); err != nil {
		return nil, err
	}
	if err := e.keys.Revoke(ctx, a.client, e.now); err != nil {
		return nil, err
	}
	return map[string]any{"client_id": a.client, "revoked": true}, nil
}

func kycSet(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org", "client", "status"); err != nil {
		return nil, err
	}
	exp, err := parseTime(a.expires)
	if err != nil {
		return nil, err
	}
	return party.NewStore(e.db).SetKYC(ctx, a.org, a.client, party.KYCStatus(a.status), exp, e.now)
}

func matterClose(ctx context.Context, e *env, a *args) (any, error) {
	a.status = string(matter.Closed)
	return matterSetStatus(ctx, e, a)
}

func matterSetStatus(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org", "matter"); err != nil {
		return nil, err
	}
	if a.status == "" {
		return nil, fmt.Errorf("%s: --status is required", a.cmd)
	}
	return matter.NewStore(e.db).SetStatus(ctx, a.org, a.matter, matter.Status(a.status), e.now)
}

func timeEntrySetStatus(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org", "entry", "status"); err != nil {
		return nil, err
	}
	return timeentry.NewStore(e.db).SetStatus(ctx, a.org, a.entry, timeentry.Status(a.status), e.now)
}

func invoiceCreate(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org", "matter", "issue-date", "lines"); err != nil {
		return nil, err
	}
	var ls []billing.Line
	dec := json.NewDecoder(strings.NewReader(a.lines))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ls); err != nil {
		return nil, fmt.Errorf("--lines must be a JSON array of {\"description\", \"amount\" (integer minor units), \"time_entry_id\"?}: %v", err)
	}
	status := billing.Status(cmpOr(a.status, string(billing.Draft)))
	return billing.NewStore(e.db).Create(ctx, a.org, billing.NewInvoice{MatterID: a.matter, IssueDate: a.issue, Lines: ls, Status: status}, e.now)
}

func invoiceSetStatus(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org", "invoice", "status"); err != nil {
		return nil, err
	}
	return billing.NewStore(e.db).SetStatus(ctx, a.org, a.invoice, billing.Status(a.status), e.now)
}

func documentCreate(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org", "matter", "name", "filename", "mime"); err != nil {
		return nil, err
	}
	if a.size < 0 {
		return nil, fmt.Errorf("%s: --size is required (bytes)", a.cmd)
	}
	return document.NewStore(e.db).Create(ctx, a.org, document.NewDocument{MatterID: a.matter, Name: a.name, Filename: a.filename,
		MimeType: a.mime, SizeBytes: a.size, Folder: a.folder}, e.now)
}

func documentSeal(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org", "document"); err != nil {
		return nil, err
	}
	return document.NewStore(e.db).Seal(ctx, a.org, a.document, e.now)
}

func seedOrg(ctx context.Context, e *env, a *args) (any, error) {
	if err := a.need("org"); err != nil {
		return nil, err
	}
	if _, err := e.keys.GetOrg(ctx, a.org); err != nil {
		return nil, err
	}
	return seed.Run(ctx, e.db, a.org, seed.Options{Matters: a.matters, EntriesPerMatter: a.perEntry})
}

func outboxParked(ctx context.Context, e *env, a *args) (any, error) {
	evs, err := outbox.Parked(ctx, e.db, a.limit)
	if err != nil {
		return nil, err
	}
	list := make([]map[string]any, 0, len(evs))
	for _, ev := range evs {
		list = append(list, map[string]any{"id": ev.ID, "organization_id": ev.OrgID, "type": ev.Type, "created_at": ev.CreatedAt,
			"dispatch_attempts": ev.DispatchAttempts, "reason": ev.ParkedReason, "parked_at": ev.ParkedAt, "key": ev.PK + " " + ev.SK})
	}
	return map[string]any{"events": list, "count": len(list)}, nil
}

func outboxReplay(ctx context.Context, e *env, a *args) (any, error) {
	if (a.event == "") == !a.all {
		return nil, fmt.Errorf("%s: give --event EVENT or --all", a.cmd)
	}
	evs, err := outbox.Parked(ctx, e.db, 1_000_000)
	if err != nil {
		return nil, err
	}
	replayed := []string{}
	for _, ev := range evs {
		if !a.all && ev.ID != a.event {
			continue
		}
		ok, err := outbox.Replay(ctx, e.db, ev)
		if err != nil {
			return nil, err
		}
		if ok {
			replayed = append(replayed, ev.ID)
		}
	}
	if !a.all && len(replayed) == 0 {
		return nil, fmt.Errorf("%s: no parked event %s (outbox parked lists them)", a.cmd, a.event)
	}
	return map[string]any{"replayed": replayed, "count": len(replayed)}, nil
}

func enrichmentResume(ctx context.Context, e *env, a *args) (any, error) {
	started := []string{}
	err := party.PendingCompanies(ctx, e.db, a.org, func(org string, c party.Company) error {
		// An internal outbox event the dispatcher routes to the enrichment
		// queue (company.enrich: no subscriber sees it).
		ev, err := outbox.New(org, outbox.CompanyEnrich, "company", map[string]string{"id": c.ID, "cvr": c.CVR}, e.now)
		if err != nil {
			return err
		}
		item, err := store.Marshal(outbox.Pending(e.db, ev))
		if err != nil {
			return err
		}
		started = append(started, c.ID)
		return e.db.PutNew(ctx, item)
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"companies": started, "count": len(started)}, nil
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func parseTime(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--expires must be RFC 3339, e.g. 2027-01-31T00:00:00Z")
	}
	return t, nil
}

func keyOut(client string, tok auth.Token) map[string]string {
	return map[string]string{"client_id": client, "secret_id": tok.SecretID, "key": tok.String()}
}
