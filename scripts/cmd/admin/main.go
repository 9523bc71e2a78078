// Command admin is the operator tool that stands in for the
// practice-management application's settings and workflows. Every command
// prints one JSON object on stdout and exits 0, or {"error": ...} on stderr
// and exits 1. Its surface is fixed by LOCAL-CONTRACT.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
)

func main() {
	out, err := run(context.Background(), os.Args[1:])
	if err != nil {
		b, _ := json.Marshal(map[string]string{"error": err.Error()})
		fmt.Fprintln(os.Stderr, string(b))
		os.Exit(1)
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}

const usage = `usage: admin <command> [flags]
  org create --name NAME
  org set-limit --org ORG --ceiling N             requests/minute all its keys' limits may add up to (0: the default, 18000)
  key create --org ORG --scopes s1,s2 [--mode live|test] [--expires RFC3339] [--name N] [--rate-limit N]
  key set-limit --client CLIENT --rate-limit N     the key's own requests/minute (0: the stage's RATE_LIMIT_PER_MINUTE)
  key list --org ORG                               the organisation's keys, live and revoked (never a secret)
  key rotate --client CLIENT
  key revoke-secret --client CLIENT --secret SECRET_ID
  key revoke --client CLIENT
  kyc set --org ORG --client CLIENT --status STATUS [--expires RFC3339]
  matter close --org ORG --matter MATTER
  matter set-status --org ORG --matter MATTER --status STATUS
  time-entry set-status --org ORG --entry ENTRY --status STATUS
  invoice create --org ORG --matter MATTER --issue-date YYYY-MM-DD --lines JSON [--status draft]
  invoice set-status --org ORG --invoice INVOICE --status STATUS
  document create --org ORG --matter MATTER --name N --filename F --mime M --size BYTES [--folder F]
  document seal --org ORG --document DOCUMENT
  seed --org ORG [--matters N] [--entries-per-matter N]
  outbox parked [--limit N]                      events the dispatcher gave up on, with why
  outbox replay (--event EVENT | --all)          put parked events back; the next sweep sends them
  enrichment resume [--org ORG]                   start again the enrichment of companies still pending
env: DYNAMODB_ENDPOINT (default http://127.0.0.1:8000; "aws" for the SDK's own), TABLE_NAME (default practice-api),
     RATE_LIMIT_PER_MINUTE (default 120: what a key without its own limit counts for against its organisation's ceiling)`

// hasCPR reports whether a JSON argument (--lines) names or holds a CPR.
func hasCPR(v any) bool {
	_, removed := cpr.Scrub(v)
	return removed > 0
}

func run(ctx context.Context, args []string) (any, error) {
	if len(args) == 0 {
		return nil, errors.New(usage)
	}
	// Every text the application writes passes the same CPR guard as the
	// API's bodies: no name, file name, folder or invoice line may carry one.
	for _, a := range args {
		var v any
		if _, removed := cpr.Scrub(a); removed > 0 || (json.Unmarshal([]byte(a), &v) == nil && hasCPR(v)) {
			return nil, errors.New("CPR numbers are never stored, in any field or form: remove it from the arguments")
		}
	}
	cmd, rest := args[0], args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") && (cmd == "org" || cmd == "key" || cmd == "kyc" || cmd == "matter" || cmd == "time-entry" || cmd == "invoice" || cmd == "document" || cmd == "outbox" || cmd == "enrichment") {
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		name     = fs.String("name", "", "name")
		org      = fs.String("org", "", "organisation id")
		scopes   = fs.String("scopes", "", "comma-separated scopes")
		mode     = fs.String("mode", auth.ModeLive, "live or test")
		expires  = fs.String("expires", "", "RFC 3339 expiry")
		client   = fs.String("client", "", "API client id")
		secret   = fs.String("secret", "", "secret id")
		status   = fs.String("status", "", "status")
		matterID = fs.String("matter", "", "matter id")
		entry    = fs.String("entry", "", "time entry id")
		invoice  = fs.String("invoice", "", "invoice id")
		docID    = fs.String("document", "", "document id")
		issue    = fs.String("issue-date", "", "YYYY-MM-DD")
		lines    = fs.String("lines", "", "JSON array of lines")
		filename = fs.String("filename", "", "file name")
		mimeType = fs.String("mime", "", "MIME type")
		size     = fs.Int64("size", -1, "size in bytes")
		folder   = fs.String("folder", "", "folder")
		matters  = fs.Int("matters", 20, "matters to create")
		perEntry = fs.Int("entries-per-matter", 0, "time entries per matter")
		event    = fs.String("event", "", "event id")
		all      = fs.Bool("all", false, "every parked event")
		limit    = fs.Int("limit", 100, "events to list")
		rate     = fs.Int("rate-limit", 0, "requests per minute")
		ceiling  = fs.Int("ceiling", -1, "requests per minute")
	)
	if err := fs.Parse(rest); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", cmd, err, usage)
	}
	need := func(flags ...string) error {
		for _, f := range flags {
			if fs.Lookup(f).Value.String() == "" {
				return fmt.Errorf("%s: --%s is required", cmd, f)
			}
		}
		return nil
	}
	cfg := app.StoreConfigFromEnv()
	if os.Getenv("DYNAMODB_ENDPOINT") == "" {
		cfg.Endpoint = "http://127.0.0.1:8000"
	}
	db, err := store.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	keys := auth.NewStore(db)
	if v := os.Getenv("RATE_LIMIT_PER_MINUTE"); v != "" {
		if keys.DefaultLimit, err = strconv.Atoi(v); err != nil || keys.DefaultLimit < 1 {
			return nil, fmt.Errorf("RATE_LIMIT_PER_MINUTE must be a positive integer, got %q", v)
		}
	}
	if err := app.OutboxFromEnv(); err != nil {
		return nil, err
	}
	now := time.Now()
	switch cmd {
	case "org create":
		if err := need("name"); err != nil {
			return nil, err
		}
		return keys.CreateOrg(ctx, "", *name, now)
	case "key create":
		if err := need("org", "scopes"); err != nil {
			return nil, err
		}
		sc, err := auth.ParseScopes(*scopes)
		if err != nil {
			return nil, err
		}
		exp, err := parseTime(*expires)
		if err != nil {
			return nil, err
		}
		if *rate < 0 {
			return nil, fmt.Errorf("%s: --rate-limit is a positive number of requests per minute", cmd)
		}
		c, tok, err := keys.CreateKey(ctx, auth.KeyRequest{OrgID: *org, Name: *name, Mode: *mode, Scopes: sc, Expires: exp, RateLimit: *rate}, now)
		if err != nil {
			return nil, err
		}
		return keyOut(c.ID, tok), nil
	case "key set-limit":
		if err := need("client", "rate-limit"); err != nil {
			return nil, err
		}
		return keys.SetLimit(ctx, *client, *rate)
	case "key list":
		if err := need("org"); err != nil {
			return nil, err
		}
		if _, err := keys.GetOrg(ctx, *org); err != nil {
			return nil, err
		}
		refs, err := keys.Keys(ctx, *org)
		if err != nil {
			return nil, err
		}
		return map[string]any{"organization_id": *org, "keys": refs, "count": len(refs)}, nil
	case "org set-limit":
		if err := need("org"); err != nil {
			return nil, err
		}
		if *ceiling < 0 {
			return nil, fmt.Errorf("%s: --ceiling is required (requests per minute; 0 for the default)", cmd)
		}
		o, err := keys.SetCeiling(ctx, *org, *ceiling)
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": o.ID, "name": o.Name, "rate_ceiling": o.Ceiling()}, nil
	case "enrichment resume":
		started := []string{}
		err := party.PendingCompanies(ctx, db, *org, func(org string, c party.Company) error {
			// An outbox event the dispatcher routes to the enrichment queue,
			// as it routes every company.created.
			ev, err := outbox.New(org, outbox.CompanyCreated, "company", map[string]string{"id": c.ID, "cvr": c.CVR}, now)
			if err != nil {
				return err
			}
			item, err := store.Marshal(ev)
			if err != nil {
				return err
			}
			started = append(started, c.ID)
			return db.PutNew(ctx, item)
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"companies": started, "count": len(started)}, nil
	case "key rotate":
		if err := need("client"); err != nil {
			return nil, err
		}
		tok, err := keys.Rotate(ctx, *client, now)
		if err != nil {
			return nil, err
		}
		return keyOut(*client, tok), nil
	case "key revoke-secret":
		if err := need("client", "secret"); err != nil {
			return nil, err
		}
		if err := keys.RevokeSecret(ctx, *client, *secret); err != nil {
			return nil, err
		}
		return map[string]any{"client_id": *client, "secret_id": *secret, "revoked": true}, nil
	case "key revoke":
		if err := need("client"); err != nil {
			return nil, err
		}
		if err := keys.Revoke(ctx, *client, now); err != nil {
			return nil, err
		}
		return map[string]any{"client_id": *client, "revoked": true}, nil
	case "kyc set":
		if err := need("org", "client", "status"); err != nil {
			return nil, err
		}
		exp, err := parseTime(*expires)
		if err != nil {
			return nil, err
		}
		return party.NewStore(db).SetKYC(ctx, *org, *client, *status, exp, now)
	case "matter close", "matter set-status":
		if cmd == "matter close" {
			*status = "closed"
		}
		if err := need("org", "matter", "status"); err != nil {
			return nil, err
		}
		return matter.NewStore(db).SetStatus(ctx, *org, *matterID, *status, now)
	case "time-entry set-status":
		if err := need("org", "entry", "status"); err != nil {
			return nil, err
		}
		return timeentry.NewStore(db).SetStatus(ctx, *org, *entry, *status, now)
	case "invoice create":
		if err := need("org", "matter", "issue-date", "lines"); err != nil {
			return nil, err
		}
		var ls []billing.Line
		dec := json.NewDecoder(strings.NewReader(*lines))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ls); err != nil {
			return nil, fmt.Errorf("--lines must be a JSON array of {\"description\", \"amount\" (integer minor units), \"time_entry_id\"?}: %v", err)
		}
		if *status == "" {
			*status = "draft"
		}
		return billing.NewStore(db).Create(ctx, *org, billing.NewInvoice{MatterID: *matterID, IssueDate: *issue, Lines: ls, Status: *status}, now)
	case "invoice set-status":
		if err := need("org", "invoice", "status"); err != nil {
			return nil, err
		}
		return billing.NewStore(db).SetStatus(ctx, *org, *invoice, *status, now)
	case "document create":
		if err := need("org", "matter", "name", "filename", "mime"); err != nil {
			return nil, err
		}
		if *size < 0 {
			return nil, fmt.Errorf("%s: --size is required (bytes)", cmd)
		}
		return document.NewStore(db).Create(ctx, *org, document.NewDocument{MatterID: *matterID, Name: *name, Filename: *filename,
			MimeType: *mimeType, SizeBytes: *size, Folder: *folder}, now)
	case "document seal":
		if err := need("org", "document"); err != nil {
			return nil, err
		}
		return document.NewStore(db).Seal(ctx, *org, *docID, now)
	case "outbox parked":
		evs, err := outbox.Parked(ctx, db, *limit)
		if err != nil {
			return nil, err
		}
		list := make([]map[string]any, 0, len(evs))
		for _, ev := range evs {
			list = append(list, map[string]any{"id": ev.ID, "organization_id": ev.OrgID, "type": ev.Type, "created_at": ev.CreatedAt,
				"dispatch_attempts": ev.DispatchAttempts, "reason": ev.ParkedReason, "parked_at": ev.ParkedAt, "key": ev.PK + " " + ev.SK})
		}
		return map[string]any{"events": list, "count": len(list)}, nil
	case "outbox replay":
		if (*event == "") == !*all {
			return nil, fmt.Errorf("%s: give --event EVENT or --all", cmd)
		}
		evs, err := outbox.Parked(ctx, db, 1_000_000)
		if err != nil {
			return nil, err
		}
		replayed := []string{}
		for _, ev := range evs {
			if !*all && ev.ID != *event {
				continue
			}
			ok, err := outbox.Replay(ctx, db, ev)
			if err != nil {
				return nil, err
			}
			if ok {
				replayed = append(replayed, ev.ID)
			}
		}
		if !*all && len(replayed) == 0 {
			return nil, fmt.Errorf("%s: no parked event %s (outbox parked lists them)", cmd, *event)
		}
		return map[string]any{"replayed": replayed, "count": len(replayed)}, nil
	case "seed":
		if err := need("org"); err != nil {
			return nil, err
		}
		if _, err := keys.GetOrg(ctx, *org); err != nil {
			return nil, err
		}
		return seed.Run(ctx, db, *org, seed.Options{Matters: *matters, EntriesPerMatter: *perEntry})
	}
	return nil, fmt.Errorf("unknown command %q\n%s", cmd, usage)
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
