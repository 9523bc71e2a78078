package e2e

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTheGuidesPythonWalkthroughRuns runs docs/guide.md as a reader
// would: its import block, then its Python-receiver block, as written
// (bash, curl, jq, python3), with a fresh organisation's key, against the
// server under test. Only the receiver's port (a free one it binds itself)
// and secrets file change. The receiver must print the verified matter.created: the
// walkthrough captures the secret from the subscription's answer.
func TestTheGuidesPythonWalkthroughRuns(t *testing.T) {
	if api.local == nil {
		t.Skip("the receiver listens on loopback: it needs a server this suite started")
	}
	needTools(t, os.Getenv("RECEIVERS_REQUIRED") == "1", "the guide's walkthrough", "bash", "curl", "jq", "python3")
	raw, err := os.ReadFile(filepath.Join(api.root, "docs", "guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	imports := shBlock(t, string(raw), `H="Authorization: Bearer $KEY"`)
	receiver := shBlock(t, string(raw), "# A Python receiver")
	dir := t.TempDir()
	receiver = strings.ReplaceAll(receiver, "/tmp/secrets", filepath.Join(dir, "secrets"))
	// PORT=0: the receiver binds a free port and names it on stderr; the
	// block waits for that line and subscribes that port (a port picked
	// here could be taken before the receiver binds it).
	listen := filepath.Join(dir, "listen")
	for _, r := range []struct{ old, new string }{
		{"PORT=9000 python3 docs/receivers/receiver.py &", "PORT=0 python3 docs/receivers/receiver.py 2>" + listen + " &\n" +
			"for i in $(seq 300); do grep -q '^listening on' " + listen + " && break; sleep 0.1; done\n" +
			"RPORT=$(sed -n 's|^listening on http://127.0.0.1:\\([0-9]*\\)/$|\\1|p' " + listen + ")"},
		{"127.0.0.1:9000", `127.0.0.1:'"$RPORT"'`},
	} {
		if strings.Count(receiver, r.old) != 1 {
			t.Fatalf("the guide's receiver block no longer holds %q once: %s", r.old, receiver)
		}
		receiver = strings.Replace(receiver, r.old, r.new, 1)
	}
	_, key, _ := newOrg(t, "parties:write,clients:write,matters:write,time:write,webhooks:manage")
	script := "set -euo pipefail\nKEY=" + key + "\nBASE=" + api.base + "\n" + imports + "\n" + receiver +
		"\nfor i in $(seq 100); do grep -q '\"event\": \"matter.created\"' " + filepath.Join(dir, "out") + " && break; sleep 0.1; done\nkill $!\n"
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir, cmd.Stdout, cmd.Stderr = api.root, out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, stderr.String())
	}
	printed, _ := os.ReadFile(filepath.Join(dir, "out"))
	if !strings.Contains(string(printed), `"event": "matter.created"`) || !strings.Contains(string(printed), `"duplicate": false`) {
		t.Fatalf("the receiver printed no verified matter.created:\n%s\nstderr:\n%s", printed, stderr.String())
	}
}

// shBlock is the ```sh block of a guide that holds marker.
func shBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	for _, part := range strings.Split(doc, "```sh\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		if strings.Contains(block, marker) {
			return block
		}
	}
	t.Fatalf("no sh block of the guide holds %q", marker)
	return ""
}

// TestTheGuidesCatchUpRuns runs the guide's catch-up loop as written
// after its import block, from a mark before the imports: every record the
// import made must come out of its list, the time entry and the matter
// among them, and nothing of another organisation. Then, from a mark after
// them, the lists hold nothing that did not change since.
func TestTheGuidesCatchUpRuns(t *testing.T) {
	needTools(t, false, "the guide's catch-up loop", "bash", "curl", "jq")
	raw, err := os.ReadFile(filepath.Join(api.root, "docs", "guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	imports := shBlock(t, string(raw), `H="Authorization: Bearer $KEY"`)
	catchUp := shBlock(t, string(raw), "MARK=")
	mark, _, ok := strings.Cut(catchUp, "\n")
	if !strings.HasPrefix(mark, "MARK=") || !ok {
		t.Fatalf("the catch-up block does not begin with its MARK line: %q", mark)
	}
	_, key, _ := newOrg(t, "parties:write,clients:write,matters:write,time:write,clients:read,matters:read,time:read,invoices:read,documents:read")
	_, otherKey, _ := newOrg(t, "parties:write,clients:write,matters:write,time:write")
	run := func(script string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+script)
		cmd.Dir, cmd.Stdout, cmd.Stderr = api.root, &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("the guide's block failed: %v\n%s", err, stderr.String())
		}
		return stdout.String()
	}
	env := func(k string) string { return "KEY=" + k + "\nBASE=" + api.base + "\n" }
	before := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	run(env(otherKey) + imports) // another organisation's records must not come out
	run(env(key) + imports)
	lines := strings.Split(strings.TrimSpace(run(env(key)+`H="Authorization: Bearer $KEY"`+"\nMARK="+before+"\n"+strings.TrimPrefix(catchUp, mark+"\n"))), "\n")
	kinds := map[string]int{}
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("the loop printed %q, not a record: %v", l, err)
		}
		switch {
		case rec["cvr"] != nil:
			kinds["company"]++
		case rec["company_id"] != nil || rec["person_id"] != nil:
			kinds["client"]++
		case rec["matter_number"] != nil:
			kinds["matter"]++
		case rec["duration_minutes"] != nil:
			kinds["time_entry"]++
		}
	}
	// /clients lists engagements, /companies the company: one of each, a
	// matter and a time entry, and nothing twice.
	want := map[string]int{"company": 1, "client": 1, "matter": 1, "time_entry": 1}
	if !maps.Equal(kinds, want) || len(lines) != 4 {
		t.Fatalf("catching up from before the imports gave %v in %d lines, want %v:\n%s", kinds, len(lines), want, strings.Join(lines, "\n"))
	}
	// From after them, nothing: but the company, whose enrichment (the
	// register's answer or its failure) may land later and is a change.
	after := time.Now().UTC().Add(time.Second).Format(time.RFC3339)
	out := run(env(key) + `H="Authorization: Bearer $KEY"` + "\nMARK=" + after + "\n" + strings.TrimPrefix(catchUp, mark+"\n"))
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" && !strings.Contains(l, `"cvr"`) {
			t.Fatalf("catching up from after the imports gave a record that did not change:\n%s", l)
		}
	}
}

// needTools skips the test (or, when required, fails it) unless every
// tool is on the PATH.
func needTools(t *testing.T, required bool, what string, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if required {
				t.Fatalf("%s is not installed, and RECEIVERS_REQUIRED=1", tool)
			}
			t.Skipf("%s is not installed here: %s is not run", tool, what)
		}
	}
}
