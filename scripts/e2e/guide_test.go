package e2e

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheGuidesPythonWalkthroughRuns runs docs/guide.md as a reader
// would: its import block, then its Python-receiver block, as written
// (bash, curl, jq, python3), with a fresh organisation's key, against the
// server under test. Only the receiver's port and secrets file change
// (free ones). The receiver must print the verified matter.created: the
// walkthrough captures the secret from the subscription's answer.
func TestTheGuidesPythonWalkthroughRuns(t *testing.T) {
	if api.local == nil {
		t.Skip("the receiver listens on loopback: it needs a server this suite started")
	}
	for _, tool := range []string{"bash", "curl", "jq", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("RECEIVERS_REQUIRED") == "1" {
				t.Fatalf("%s is not installed, and RECEIVERS_REQUIRED=1", tool)
			}
			t.Skipf("%s is not installed here: the guide's walkthrough is not run", tool)
		}
	}
	raw, err := os.ReadFile(filepath.Join(api.root, "docs", "guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	imports := shBlock(t, string(raw), `H="Authorization: Bearer $KEY"`)
	receiver := shBlock(t, string(raw), "# A Python receiver")
	dir := t.TempDir()
	_, port, _ := net.SplitHostPort(freeAddr())
	receiver = strings.ReplaceAll(receiver, "/tmp/secrets", filepath.Join(dir, "secrets"))
	receiver = strings.ReplaceAll(receiver, "9000", port)
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
