package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// cryptoActions are the KMS actions that encrypt, decrypt, make data keys
// or hand them on: what no administrator of the stage's keys gets.
var cryptoActions = []string{"kms:*", "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKey*", "kms:GenerateDataKeyWithoutPlaintext",
	"kms:ReEncrypt*", "kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:CreateGrant"}

// keyStatements are the statements of a key's policy, by Sid.
func keyStatements(t *testing.T, key map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, st := range props(key)["KeyPolicy"].(map[string]any)["Statement"].([]any) {
		m := st.(map[string]any)
		sid, _ := m["Sid"].(string)
		if sid == "" || out[sid] != nil {
			t.Fatalf("a key statement without a Sid of its own: %v", m)
		}
		out[sid] = m
	}
	return out
}

func listOf(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			} else {
				b, _ := json.Marshal(e)
				out = append(out, string(b))
			}
		}
		return out
	}
	return nil
}

// TestKeyPoliciesLetAdministratorsManageButNotDecrypt: prod's two keys
// have policies written out, not the CDK's default kms:* for the account
// (which hands every use to IAM, so an administrator's or the deploy
// role's kms:Decrypt on * opens every webhook secret). The account keeps
// the key's management, PutKeyPolicy included (KMS's lockout safety check
// passes for CloudFormation and whoever deploys), and no crypto action;
// the table key is usable only through DynamoDB or AWS Backup
// (kms:ViaService); the webhook-secrets key only by the webhooks role
// (data keys and Decrypt) and the delivery role (Decrypt), each only under
// an encryption context naming the organisation and the endpoint. Each
// function's own statement on either key says the same.
func TestKeyPoliciesLetAdministratorsManageButNotDecrypt(t *testing.T) {
	var tableKey, secretsKey string
	roles := map[string]string{} // function name -> role logical id
	for id, name := range functionIDs("prod") {
		roles[name] = props(templates["prod"]["Resources"].(map[string]any)[id].(map[string]any))["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	}
	for id, k := range resources("prod", "AWS::KMS::Key") {
		sts := keyStatements(t, k)
		admin := sts["KeyAdministration"]
		if admin == nil {
			t.Fatalf("key %s has no KeyAdministration statement", id)
		}
		if got := listOf(admin["Action"]); !slices.Equal(got, sortedCopy(KeyAdministrationActions)) || admin["Condition"] != nil {
			t.Errorf("key %s: administration %v %v, want %v unconditioned", id, got, admin["Condition"], KeyAdministrationActions)
		}
		if !slices.Contains(listOf(admin["Action"]), "kms:PutKeyPolicy") {
			t.Errorf("key %s: the account cannot put the key's policy: KMS's lockout check would refuse it", id)
		}
		for sid, st := range sts {
			for _, a := range listOf(st["Action"]) {
				if slices.Contains(cryptoActions, a) && st["Condition"] == nil {
					t.Errorf("key %s, statement %s: %s without a condition", id, sid, a)
				}
				if a == "kms:*" {
					t.Errorf("key %s, statement %s: kms:*", id, sid)
				}
			}
		}
		if strings.Contains(props(k)["Description"].(string), "webhook") {
			secretsKey = id
			for sid, fn := range map[string]string{"SealAndOpenWebhookSecrets": "webhooks", "OpenWebhookSecrets": "delivery"} {
				st := sts[sid]
				if st == nil {
					t.Fatalf("the secrets key has no %s statement", sid)
				}
				cond, _ := json.Marshal(st["Condition"])
				want := `"aws:PrincipalArn":{"Fn::GetAtt":["` + roles[fn] + `","Arn"]}`
				if !strings.Contains(string(cond), want) || !strings.Contains(string(cond), `"kms:EncryptionContext:org":"?*"`) ||
					!strings.Contains(string(cond), `"kms:EncryptionContext:endpoint":"?*"`) || !strings.Contains(string(cond), `"kms:EncryptionContextKeys":["org","endpoint"]`) {
					t.Errorf("secrets key, %s: condition %s, want the %s role and the organisation and endpoint as context", sid, cond, fn)
				}
				if got := listOf(st["Action"]); !slices.Equal(got, secretsKeyActions(fn)) {
					t.Errorf("secrets key, %s: %v, want %v", sid, got, secretsKeyActions(fn))
				}
			}
			if len(sts) != 3 {
				t.Errorf("the secrets key's policy has %d statements, want administration and the two functions'", len(sts))
			}
		} else {
			tableKey = id
			use := sts["UseThroughDynamoDB"]
			cond, _ := json.Marshal(use["Condition"])
			if use == nil || !strings.Contains(string(cond), `"kms:ViaService":[`+viaService("dynamodb")+`,`+viaService("backup")+`]`) ||
				!strings.Contains(string(cond), `"kms:CallerAccount"`) || len(sts) != 2 {
				t.Errorf("the table key's use: %v (of %d statements)", use, len(sts))
			}
		}
	}
	if tableKey == "" || secretsKey == "" {
		t.Fatal("prod has not both keys")
	}
	for id, name := range functionIDs("prod") {
		for _, st := range statementsOf("prod", id) {
			res, _ := json.Marshal(st["Resource"])
			cond, _ := json.Marshal(st["Condition"])
			switch {
			case strings.Contains(string(res), secretsKey):
				if !strings.Contains(string(cond), "kms:EncryptionContext:org") || !strings.Contains(string(cond), "kms:EncryptionContextKeys") {
					t.Errorf("%s's role may use the secrets key without the endpoint's context: %s", name, cond)
				}
			case strings.Contains(string(res), tableKey):
				if !strings.Contains(string(cond), `"kms:ViaService":`+viaService("dynamodb")) {
					t.Errorf("%s's role may use the table key outside DynamoDB (its stream included): %s", name, cond)
				}
			}
		}
	}
}

// viaService is a service's kms:ViaService name in the stack's region, as
// the template spells it (the region is the deploy's: a reference).
func viaService(service string) string {
	return `{"Fn::Join":["",["` + service + `.",{"Ref":"AWS::Region"},".amazonaws.com"]]}`
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// writeActions are DynamoDB's item writes.
var writeActions = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:*"}

var roleWritesTable = regexp.MustCompile(`(?s)<!-- role-writes:begin -->\n.*?<!-- role-writes:end -->`)

// TestRolesHoldTheTenantBoundary reads each function's role in the dev and
// prod templates: every write it may make is confined to partitions
// (dynamodb:LeadingKeys); none but configseed's may write the stage's
// secrets (CONFIG); every write to an API client is limited to its counts
// (dynamodb:Attributes PK, SK, rl_*, with ReturnValues held to NONE or
// UPDATED_*, as AWS requires for that limit to hold); a write allowed on
// the organisations' partitions (O#*) and not on their endpoints' is
// denied there. docs/deploying.md's table of what each role may write is
// this test's (UPDATE_ROLE_WRITES=1 rewrites it); scripts/cmd/localcloud's
// TestWhatEachRoleMayWrite sends each write as each function through the
// guard that enforces these statements.
func TestRolesHoldTheTenantBoundary(t *testing.T) {
	for _, stage := range []string{"dev", "prod"} {
		rows := map[string]string{}
		for id, name := range functionIDs(stage) {
			var writes []string
			denied := map[string]bool{}
			for _, st := range statementsOf(stage, id) {
				acts := listOf(st["Action"])
				var w []string
				for _, a := range acts {
					if slices.Contains(writeActions, a) {
						w = append(w, a)
					}
				}
				if len(w) == 0 {
					continue
				}
				cond, _ := st["Condition"].(map[string]any)
				if st["Effect"] == "Deny" {
					anyOf, _ := cond["ForAnyValue:StringLike"].(map[string]any)
					if slices.Equal(listOf(anyOf["dynamodb:LeadingKeys"]), []string{"O#*#*"}) {
						for _, a := range w {
							denied[a] = true
						}
					}
					continue
				}
				all, _ := cond["ForAllValues:StringLike"].(map[string]any)
				keys, attrs := listOf(all["dynamodb:LeadingKeys"]), listOf(all["dynamodb:Attributes"])
				if len(keys) == 0 {
					t.Errorf("%s: %s may %v on any partition", stage, name, w)
					continue
				}
				for _, k := range keys {
					if strings.Contains(k, "*") && !strings.HasSuffix(k, "#*") || k == "*" {
						t.Errorf("%s: %s writes on the partition pattern %q", stage, name, k)
					}
				}
				if slices.Contains(keys, "CONFIG") && name != "configseed" {
					t.Errorf("%s: %s may write the stage's secrets (CONFIG)", stage, name)
				}
				if slices.Contains(keys, "APICLIENT#*") {
					eq, _ := cond["StringEqualsIfExists"].(map[string]any)
					if !slices.Equal(attrs, []string{"PK", "SK", "rl_*"}) || len(keys) != 1 || !slices.Equal(w, []string{"dynamodb:UpdateItem"}) ||
						!slices.Equal(listOf(eq["dynamodb:ReturnValues"]), []string{"NONE", "UPDATED_OLD", "UPDATED_NEW"}) {
						t.Errorf("%s: %s may write API clients beyond their counts: %v", stage, name, st)
					}
				}
				if len(attrs) > 0 {
					eq, _ := cond["StringEqualsIfExists"].(map[string]any)
					if eq["dynamodb:ReturnValues"] == nil {
						t.Errorf("%s: %s's attribute limit without a ReturnValues limit: %v", stage, name, st)
					}
				}
				what := strings.Join(keys, ", ")
				if len(attrs) > 0 {
					what += " (only " + strings.Join(attrs, ", ") + ")"
				}
				for _, a := range w {
					writes = append(writes, strings.TrimPrefix(a, "dynamodb:")+" "+what)
				}
			}
			for i, w := range writes {
				a, rest, _ := strings.Cut(w, " ")
				if denied["dynamodb:"+a] && strings.Contains(rest, "O#*") {
					if strings.Contains(rest, "O#*#WH#*") {
						t.Errorf("%s: %s may %s on the endpoints' partitions and is denied them", stage, name, a)
					}
					writes[i] = w + " but not O#*#*"
				} else if strings.HasPrefix(rest, "O#*") && !strings.Contains(rest, "O#*#WH#*") {
					t.Errorf("%s: %s may %s in the endpoints' partitions (O#* matches them) with no deny", stage, name, a)
				}
			}
			sort.Strings(writes)
			rows[name] = strings.Join(writes, "; ")
			if len(writes) == 0 {
				rows[name] = "nothing"
			}
		}
		if stage != "prod" {
			continue
		}
		var b strings.Builder
		b.WriteString("<!-- role-writes:begin -->\n| function | may write (action on partitions, dynamodb:LeadingKeys) |\n|---|---|\n")
		for _, fn := range Functions {
			fmt.Fprintf(&b, "| %s | %s |\n", fn.Name, rows[fn.Name])
		}
		b.WriteString("<!-- role-writes:end -->")
		const doc = "../docs/deploying.md"
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		switch cur := roleWritesTable.Find(raw); {
		case cur == nil:
			t.Fatalf("%s has no table between <!-- role-writes:begin --> and <!-- role-writes:end -->", doc)
		case string(cur) == b.String():
		case os.Getenv("UPDATE_ROLE_WRITES") == "1":
			if err := os.WriteFile(doc, roleWritesTable.ReplaceAllLiteral(raw, []byte(b.String())), 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s's table of what each role may write differs from the template; UPDATE_ROLE_WRITES=1 go test ./infra -run TestRolesHoldTheTenantBoundary\nwant:\n%s", doc, b.String())
		}
	}
}

// TestStageSecretsAreSeededBeforeAnyFunction: the stage's secrets are a
// custom resource whose handler is configseed, with the secrets' names
// (so a new name updates it and the next deploy seeds it), answering
// within five minutes; every other function with a table waits for it
// (DependsOn), so none starts before its secrets exist.
func TestStageSecretsAreSeededBeforeAnyFunction(t *testing.T) {
	for _, stage := range []string{"dev", "prod"} {
		all := templates[stage]["Resources"].(map[string]any)
		var seedID string
		for id, r := range all {
			if r.(map[string]any)["Type"] == "Custom::StageSecrets" {
				p := props(r.(map[string]any))
				fn := p["ServiceToken"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
				if functionIDs(stage)[fn] != "configseed" || !slices.Equal(listOf(p["Secrets"]), []string{"cursor", "ids", "webhook-secrets"}) || p["ServiceTimeout"] != "300" {
					t.Errorf("%s: StageSecrets %v", stage, p)
				}
				seedID = id
			}
		}
		if seedID == "" {
			t.Fatalf("%s: no StageSecrets custom resource", stage)
		}
		for id, name := range functionIDs(stage) {
			var fn Function
			for _, f := range Functions {
				if f.Name == name {
					fn = f
				}
			}
			deps := listOf(all[id].(map[string]any)["DependsOn"])
			if waits := slices.Contains(deps, seedID); waits != (len(fn.Table) > 0 && !fn.Deploy) {
				t.Errorf("%s: %s waits for the stage's secrets: %v", stage, name, waits)
			}
		}
	}
}

// TestMetricLinesDoNotDependOnTheLogLevel: the stage's logLevel goes to
// the functions (LOG_LEVEL), which drop lines below it but keep every
// line that carries metrics (metrics.KeepMetrics); Lambda's own filter is
// set no higher than INFO, so at WARN or ERROR it drops neither the INFO
// request line (each version's Requests, errors and latency) nor the WARN
// OutboxDispatchFailures line their alarms read.
func TestMetricLinesDoNotDependOnTheLogLevel(t *testing.T) {
	for level, lambda := range map[string]string{"DEBUG": "DEBUG", "INFO": "INFO", "WARN": "INFO", "ERROR": "INFO"} {
		if got := LambdaAppLevel(level); got != lambda {
			t.Errorf("logLevel %s: Lambda filters at %s, want %s", level, got, lambda)
		}
	}
	for _, stage := range []string{"dev", "prod"} {
		for id, r := range resources(stage, "AWS::Lambda::Function") {
			p := props(r)
			env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			lc := p["LoggingConfig"].(map[string]any)
			if env["LOG_LEVEL"] != "INFO" || lc["ApplicationLogLevel"] != LambdaAppLevel("INFO") {
				t.Errorf("%s: %s: LOG_LEVEL %v, Lambda's level %v", stage, functionIDs(stage)[id], env["LOG_LEVEL"], lc["ApplicationLogLevel"])
			}
		}
	}
}

// TestDocsSayHowLongLogsAreKept: docs/deploying.md says how long a stage
// keeps its logs (the access log's source addresses among them) as the
// templates do: a year on protected stages, a month on dev. It once said
// both "a year" and "30 days".
func TestDocsSayHowLongLogsAreKept(t *testing.T) {
	days := map[string]float64{}
	for _, stage := range []string{"dev", "prod"} {
		for id, g := range resources(stage, "AWS::Logs::LogGroup") {
			d, _ := props(g)["RetentionInDays"].(float64)
			if days[stage] != 0 && days[stage] != d {
				t.Errorf("%s: log group %s keeps %v days, another %v", stage, id, d, days[stage])
			}
			days[stage] = d
		}
	}
	if days["dev"] != 30 || days["prod"] != 365 {
		t.Fatalf("retention dev %v, prod %v days", days["dev"], days["prod"])
	}
	raw, err := os.ReadFile("../docs/deploying.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	if !strings.Contains(doc, "keep their logs for a year") || !strings.Contains(doc, "dev keeps them a month") {
		t.Error("docs/deploying.md does not say protected stages keep logs a year and dev a month")
	}
	if regexp.MustCompile(`(?i)logs[^.]*kept 30 days`).MatchString(doc) {
		t.Error("docs/deploying.md still says logs are kept 30 days")
	}
}
