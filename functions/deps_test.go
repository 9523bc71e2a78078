// Package functions_test holds the dependency test of the Lambdas under
// functions/: in the manner of tailscale's tstest/deptest, each function
// lists the packages of this module it may link, and the test fails on any
// other (and on a listed one it no longer links, so the table stays the
// true picture). STYLE.md: a family's Lambda links only its own domain
// package and the middleware, so a change to invoices cannot break or
// bloat the matters Lambda. It runs go list (one call for every function,
// built as the Makefile builds them), whose reads go test's cache does not
// see: run it with -count=1, as make test does.
package functions_test

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/practice-api/practice-api/"

// The sets the table is made of, each a layer of STYLE.md's house.
var (
	// edge is what every HTTP API function links, meta included: its
	// settings, the middleware and its route table, logs, metrics and
	// the Lambda adapter (lambdahttp), clock (the edge's: Config.Clock,
	// the standard library's time alone), the domain errors (apperr)
	// the middleware maps to answers, the body reader (body), whose date
	// rule the query parameters share, and the small packages of what
	// the middleware knows of keys (apikey), Idempotency-Keys (idemkey)
	// and list requests (listing), none of which imports the store or an
	// AWS SDK. The meta function is this and its document: no store, no
	// key store, no idempotency records (and no SDK service: noService).
	edge = []string{
		"shared/apperr", "shared/body", "shared/config", "shared/cpr", "shared/httpapi", "shared/httpapi/routes",
		"shared/apikey", "shared/idemkey", "shared/listing", "shared/logs", "shared/metrics", "shared/lambdahttp", "shared/clock",
	}
	// family is what every function of a family on the store links
	// besides: the store wiring (apiapp), the store, the key store and
	// the idempotency records behind the middleware's interfaces, the
	// outbox its writes go through (with its queue interface), and awsenv (the SDK's
	// configuration from the environment, as Lambda gives it, instead of
	// the SDK's whole default chain: sdkChain).
	family = join(edge, "shared/apiapp", "shared/store", "shared/auth", "shared/idempotency", "shared/outbox", "shared/queue", "shared/awsenv")
	// partyDomain is party with what it links.
	partyDomain = []string{"shared/party", "shared/party/engagement", "shared/netguard", "shared/workflow"}
	// matterDomain is matter with what it links: a matter needs its
	// client's KYC, so every family that reads a matter links the
	// engagement (the client item), not the parties family.
	matterDomain = []string{"shared/matter", "shared/party/engagement", "shared/workflow"}
	// workers is what the worker functions link: package app wires every
	// worker, so each links them all (the files that wire them are not
	// split per worker yet).
	workers = join(family, partyDomain, "shared/app", "shared/smoke", "shared/webhook", "shared/webhook/signature", "shared/webhookwire",
		"shared/queue/sqsqueue", "shared/secretkey")
)

// mayLink is, per function, every package of the module it may link.
var mayLink = map[string][]string{
	"meta":        join(edge, "shared/openapi"),
	"parties":     join(family, partyDomain),
	"matters":     join(family, matterDomain),
	"timeentries": join(family, matterDomain, "shared/timeentry"),                                    // an entry is logged on a matter
	"documents":   join(family, matterDomain, "shared/document"),                                     // a document is filed on a matter
	"invoices":    join(family, matterDomain, "shared/timeentry", "shared/billing"),                  // bills a matter's time entries
	"reports":     join(family, matterDomain, "shared/timeentry", "shared/billing", "shared/report"), // reads time and invoices
	// Webhooks: the endpoints' API, and delivery alone (webhookwire) for
	// manual retries and replays; no party, no other worker.
	"webhooks":     join(family, "shared/netguard", "shared/webhook", "shared/webhook/signature", "shared/webhookwire", "shared/queue/sqsqueue"),
	"configseed":   workers,
	"delivery":     workers,
	"dispatcher":   workers,
	"enrichment":   workers,
	"releasecheck": workers,
	"synthetic":    workers,
}

// The SDK clients of the workers and the deploy, which no API function
// needs; each API function lists those it may link all the same.
var (
	workerClients = []string{
		"github.com/aws/aws-sdk-go-v2/service/kms",
		"github.com/aws/aws-sdk-go-v2/service/sqs",
		"github.com/aws/aws-sdk-go-v2/service/secretsmanager",
		"github.com/aws/aws-sdk-go-v2/service/codedeploy",
		"github.com/aws/aws-sdk-go-v2/service/lambda",
		"github.com/aws/aws-sdk-go-v2/service/cloudwatch",
	}
	// mayLinkClients is, per API function, which of workerClients it may
	// link; a function missing here is a worker and may link any. The
	// families link none: the SQS adapter (shared/queue/sqsqueue) and
	// the Secrets Manager key (shared/secretkey) are packages of their
	// own, which only the workers wire.
	mayLinkClients = map[string][]string{
		"meta":        nil,
		"parties":     nil,
		"matters":     nil,
		"timeentries": nil,
		"documents":   nil,
		"invoices":    nil,
		"reports":     nil,
		// Secrets sealed with KMS, retries and replays queued on SQS.
		"webhooks": {"github.com/aws/aws-sdk-go-v2/service/kms", "github.com/aws/aws-sdk-go-v2/service/sqs"},
	}
	// sdkChain is the SDK's default configuration chain (shared files,
	// profiles, SSO, STS, web identity): about 1.9 MB that no API
	// function uses (they read the environment: shared/awsenv).
	sdkChain = []string{
		"github.com/aws/aws-sdk-go-v2/config",
		"github.com/aws/aws-sdk-go-v2/service/sts",
		"github.com/aws/aws-sdk-go-v2/service/sso",
		"github.com/aws/aws-sdk-go-v2/service/ssooidc",
		"github.com/aws/aws-sdk-go-v2/service/signin",
	}
	// foldingTables are Unicode's case folding and IDNA (party's e-mail
	// rule, party.NormalizeEmail), 197-262 KB of each function that
	// links them, which only the parties family (and the workers, which
	// wire every family) may link; mayFold lists those functions.
	foldingTables = []string{"golang.org/x/text/cases", "golang.org/x/net/idna"}
	mayFold       = join("parties", "configseed", "delivery", "dispatcher", "enrichment", "releasecheck", "synthetic")
	// noService lists the functions that link no AWS SDK service
	// package at all (no DynamoDB client): meta serves its document and
	// the 404/405 tables, and touches no store.
	noService = []string{"meta"}
)

const sdkServices = "github.com/aws/aws-sdk-go-v2/service/"

func join(sets ...any) []string {
	var out []string
	for _, s := range sets {
		switch s := s.(type) {
		case string:
			out = append(out, s)
		case []string:
			out = append(out, s...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// linked is, per function, every package it links, as built for Lambda
// (the Makefile's GOOS, GOARCH, CGO_ENABLED and tags): one go list for all.
func linked(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "lambda.norpc", "-json=ImportPath,Deps", "./...")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if name, ok := strings.CutPrefix(p.ImportPath, module+"functions/"); ok && !strings.Contains(name, "/") {
			deps[name] = p.Deps
		}
	}
	return deps
}

func TestEachFunctionLinksOnlyItsFamily(t *testing.T) {
	t.Parallel()
	deps := linked(t)
	for name := range mayLink {
		if _, ok := deps[name]; !ok {
			t.Errorf("functions/%s is in the table but not under functions/", name)
		}
	}
	for name, all := range deps {
		t.Run(name, func(t *testing.T) {
			allowed, ok := mayLink[name]
			if !ok {
				t.Fatalf("functions/%s is not in the table: list the packages of the module it may link (mayLink)", name)
			}
			var own []string
			for _, d := range all {
				if p, ok := strings.CutPrefix(d, module); ok {
					own = append(own, p)
				}
			}
			for _, p := range own {
				if !slices.Contains(allowed, p) {
					t.Errorf("links %s, which it may not (see go list -deps ./functions/%s; if it must, add it to mayLink with why)", p, name)
				}
			}
			for _, p := range allowed {
				if !slices.Contains(own, p) {
					t.Errorf("no longer links %s: remove it from mayLink", p)
				}
			}
			if slices.Contains(noService, name) {
				for _, d := range all {
					if strings.HasPrefix(d, sdkServices) {
						t.Errorf("links %s, an AWS SDK service package, and may link none", d)
					}
				}
			}
			if !slices.Contains(mayFold, name) {
				for _, p := range foldingTables {
					if slices.Contains(all, p) {
						t.Errorf("links %s (party's e-mail folding), which only the parties family may link: read a client through shared/party/engagement", p)
					}
				}
			}
			clients, api := mayLinkClients[name]
			if !api {
				return
			}
			for _, c := range sdkChain {
				if slices.Contains(all, c) {
					t.Errorf("an API function links %s, of the SDK's default chain (build its configuration with shared/awsenv)", c)
				}
			}
			for _, c := range workerClients {
				if slices.Contains(all, c) && !slices.Contains(clients, c) {
					t.Errorf("an API function links %s, a client of the workers", c)
				}
			}
		})
	}
}
