package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/internal/gobin"
)

// TestReceiverExamples runs the copy-paste receivers of docs/receivers (Go
// on the signature package, Python's and Node's standard libraries, and
// Node on the Standard Webhooks library, npm standardwebhooks 1.1.1) as
// their readers would, against real deliveries from the server under test,
// over plain http:// on loopback (which a local server takes): a test
// event, a matter.created with its sequence, its replay (a duplicate, by
// id), both sides of a secret rotation (the delivery carries two
// signatures; a receiver holding either secret accepts it) and a wrong
// secret (401). Without python3 or node a language is skipped with
// a message, except where RECEIVERS_REQUIRED=1 (CI).
func TestReceiverExamples(t *testing.T) {
	if api.local == nil {
		t.Skip("the receivers listen on loopback: they need a server this suite started")
	}
	dir := t.TempDir()
	goBin := filepath.Join(dir, "go-receiver")
	if err := gobin.Build(context.Background(), api.root, "./docs/receivers/go", goBin, nil); err != nil {
		t.Fatalf("build the Go receiver: %v", err)
	}
	for _, lang := range []struct {
		name, interpreter string
		args              []string
	}{
		{"go", goBin, nil},
		{"python", "python3", []string{filepath.Join(api.root, "docs", "receivers", "receiver.py")}},
		{"node", "node", []string{filepath.Join(api.root, "docs", "receivers", "receiver.mjs")}},
		{"standard-webhooks", "node", []string{filepath.Join(api.root, "docs", "receivers", "standard-webhooks", "receiver.mjs")}},
	} {
		t.Run(lang.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(lang.interpreter); err != nil {
				if os.Getenv("RECEIVERS_REQUIRED") == "1" {
					t.Fatalf("%s is not installed, and RECEIVERS_REQUIRED=1", lang.interpreter)
				}
				t.Skipf("%s is not installed here: the %s receiver example is not tested (CI installs it)", lang.interpreter, lang.name)
			}
			if lang.name == "standard-webhooks" {
				npmCI(t, filepath.Join(api.root, "docs", "receivers", "standard-webhooks"))
			}
			secrets := filepath.Join(t.TempDir(), "secrets")
			if err := os.WriteFile(secrets, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			// PORT=0: the receiver takes a free port itself and says which on
			// stderr (a port picked here and handed over could be taken by
			// another process before the receiver binds it).
			cmd := exec.Command(lang.interpreter, lang.args...)
			cmd.Env = append(os.Environ(), "PORT=0", "WEBHOOK_SECRETS_FILE="+secrets)
			out, _ := cmd.StdoutPipe()
			errOut, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			var stderr syncBuffer
			listening, exited := make(chan string, 1), make(chan struct{})
			go func() {
				defer close(exited)
				sc := bufio.NewScanner(errOut)
				for sc.Scan() {
					if a, ok := strings.CutPrefix(sc.Text(), "listening on http://"); ok {
						select {
						case listening <- strings.TrimSuffix(a, "/"):
						default:
						}
					}
					stderr.WriteString(sc.Text() + "\n")
				}
			}()
			var mu sync.Mutex
			var lines []receivedLine
			seen := make(chan struct{}, 100)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					var l receivedLine
					if json.Unmarshal(sc.Bytes(), &l) == nil {
						mu.Lock()
						lines = append(lines, l)
						mu.Unlock()
						seen <- struct{}{}
					}
				}
			}()
			var addr string
			select {
			case addr = <-listening:
			case <-exited:
				t.Fatalf("the %s receiver exited before listening: %s", lang.name, stderr.String())
			case <-time.After(30 * time.Second):
				t.Fatalf("the %s receiver does not say where it listens: %s", lang.name, stderr.String())
			}
			// An organisation of its own: on the demo organisation the
			// endpoint would also get the matters the suite's other tests
			// make, and the first matter.created it printed might not be this
			// subtest's (nor in its replay's window).
			_, key, _ := newOrg(t, "webhooks:manage,parties:write,clients:write,matters:write")
			r := do(t, "POST", "/webhooks", key, "", fmt.Sprintf(`{"url":"http://%s/hooks","event_types":["matter.created"]}`, addr))
			if r.status != 201 {
				t.Fatalf("subscribe: %d %s", r.status, r.raw)
			}
			id := r.body["data"].(map[string]any)["id"].(string)
			t.Cleanup(func() { do(t, "DELETE", "/webhooks/"+id, key, "", "") })
			first := r.body["secret"].(string)
			setSecrets := func(s ...string) {
				if err := os.WriteFile(secrets, []byte(strings.Join(s, "\n")+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			testEvent := func(wantOK bool, why string) {
				t.Helper()
				a := do(t, "POST", "/webhooks/"+id+"/test", key, "", "").body["data"].(map[string]any)
				if a["succeeded"] != wantOK || (!wantOK && a["status_code"] != 401.0) {
					t.Fatalf("%s: the test delivery %v (receiver: %s)", why, a, stderr.String())
				}
			}
			waitFor := func(event string) receivedLine {
				t.Helper()
				deadline := time.After(receiverWait)
				for {
					mu.Lock()
					for _, l := range lines {
						if l.Event == event {
							mu.Unlock()
							return l
						}
					}
					mu.Unlock()
					select {
					case <-seen:
					case <-deadline:
						t.Fatalf("the %s receiver printed no %s", lang.name, event)
					}
				}
			}
			setSecrets(first)
			testEvent(true, "with its secret")
			waitFor("webhook.test")

			// A real event: a matter, on a new company's engagement.
			tag := fmt.Sprintf("rcv-%s-%d", lang.name, time.Now().UnixNano())
			// The replay's window starts just before the matter, which is the
			// organisation's only one.
			since := time.Now().Add(-2 * time.Second).UTC().Format(time.RFC3339Nano)
			co := post(t, "/companies", key, tag, fmt.Sprintf(`{"name":"Modtager %s ApS","cvr":"%08d"}`, lang.name, time.Now().UnixNano()%90000000+10000000))
			cl := post(t, "/clients", key, tag, fmt.Sprintf(`{"company_id":%q}`, co.body["data"].(map[string]any)["id"]))
			m := post(t, "/matters", key, tag, fmt.Sprintf(`{"client_id":%q}`, cl.body["data"].(map[string]any)["id"]))
			if m.status != 201 {
				t.Fatalf("matter: %d %s", m.status, m.raw)
			}
			got := waitFor("matter.created")
			if got.Duplicate || got.Sequence < 1 || got.Stale {
				t.Fatalf("the first matter.created: %+v", got)
			}
			// A replay sends it again: the receiver knows it by its id.
			rp := do(t, "POST", "/webhooks/"+id+"/replay", key, "", fmt.Sprintf(`{"since":%q,"event_types":["matter.created"]}`, since))
			if rp.status != 202 {
				t.Fatalf("replay: %d %s", rp.status, rp.raw)
			}
			deadline := time.After(receiverWait)
			for again := false; !again; {
				mu.Lock()
				for _, l := range lines {
					again = again || (l.EventID == got.EventID && l.Duplicate && l.Sequence == got.Sequence)
				}
				mu.Unlock()
				select {
				case <-seen:
				case <-time.After(100 * time.Millisecond):
				case <-deadline:
					t.Fatalf("the %s receiver printed no duplicate of the replayed %s (the replay: %s)", lang.name, got.EventID, rp.raw)
				}
			}

			// A rotation: for its grace period each delivery is signed with both
			// secrets, so the receiver may hold either.
			rot := do(t, "POST", "/webhooks/"+id+"/rotate-secret", key, "", `{"grace_period_seconds":3600}`)
			if rot.status != 200 {
				t.Fatalf("rotate: %d %s", rot.status, rot.raw)
			}
			second := rot.body["secret"].(string)
			setSecrets(second)
			testEvent(true, "with only the new secret, during the grace period")
			setSecrets(first)
			testEvent(true, "with only the old secret, during the grace period")
			setSecrets(first, second)
			testEvent(true, "with both")
			setSecrets("whsec_not-this-endpoints")
			testEvent(false, "with a wrong secret")
		})
	}
}

// npmCI installs a receiver's pinned packages (npm ci) unless they are
// there, once per run.
func npmCI(t *testing.T, dir string) {
	t.Helper()
	npmOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
		}
	})
	if npmErr != nil {
		t.Fatal(npmErr)
	}
}

var (
	npmOnce sync.Once
	npmErr  error
)

// receiverWait bounds each wait for a receiver's line. Deliveries on
// localcloud queue behind the suite's other webhook tests (one drives an
// endpoint through 20 failures at the same time) on two cores: a replay
// once took over 30 s there, so the bound is generous; a pass takes
// seconds.
const receiverWait = 90 * time.Second
