package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/internal/synthcache"
)

// TestTheTypeScriptClient builds the TypeScript client in
// clients/typescript as an integrator would (npm ci of its pinned
// openapi-typescript, openapi-fetch and TypeScript; its types generated
// from shared/openapi/openapi.json; tsc, which also compiles
// src/narrowing.ts, the test that error types narrow on code) and runs it
// against the server under test: a create with an Idempotency-Key and its
// replay, a list followed page by page, a batch read by ids, and errors
// narrowed by their code. It needs Node.js and npm; on CI (CI=true, or
// TS_CLIENT_REQUIRED=1) it fails without them instead of skipping.
func TestTheTypeScriptClient(t *testing.T) {
	t.Parallel() // the suite's slow tests (each writes only to an organisation of its own) run beside each other once the rest is done
	required := os.Getenv("CI") == "true" || os.Getenv("TS_CLIENT_REQUIRED") == "1"
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if required {
				t.Fatalf("%s is not installed, and the TypeScript client must be tested here (CI)", tool)
			}
			t.Skipf("%s is not installed: the TypeScript client is not tested", tool)
		}
	}
	dir := filepath.Join(api.root, "clients", "typescript")
	npm := func(args ...string) {
		t.Helper()
		cmd := exec.Command("npm", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// make test runs this suite on both runtimes at once, in one folder:
	// one npm ci and build at a time (two at once tear node_modules and
	// dist apart: ENOTEMPTY, ENOENT), so the second finds them ready.
	unlock := lockFolder(t, filepath.Join(dir, ".e2e.lock"))
	// npm ci when the lockfile is newer than what node_modules holds.
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Through scripts/lib/npm-ci: a node_modules this machine installed
	// from the same lockfile is copied back, not installed again.
	if have, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil || have.ModTime().Before(lock.ModTime()) {
		cmd := exec.Command(filepath.Join(api.root, "scripts", "lib", "npm-ci"), dir, "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	// The build (types generated from the document, then tsc) only when
	// its inputs changed since the last one: the suite's second runtime
	// in a make test finds it done (6 s of CPU).
	inputs := buildInputs(t, dir, filepath.Join(api.root, "shared", "openapi", "openapi.json"))
	stamp := filepath.Join(dir, "dist", ".inputs")
	if have, err := os.ReadFile(stamp); err != nil || string(have) != inputs || !exists(filepath.Join(dir, "dist", "e2e.js")) {
		if !restoreBuild(dir, inputs) {
			npm("run", "build", "--silent")
			saveBuild(t, dir, inputs)
		}
		if err := os.WriteFile(stamp, []byte(inputs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	unlock()

	_, key, _ := newOrg(t, "parties:write,clients:read")
	run := fmt.Sprint(time.Now().UnixNano() % 10000000)
	cmd := exec.Command("node", filepath.Join(dir, "dist", "e2e.js"))
	cmd.Env = append(os.Environ(), "BASE_URL="+api.base, "KEY="+key, "RUN="+run)
	raw, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node dist/e2e.js: %v\n%s\n%s", err, raw, stderr)
	}
	var got struct {
		Created struct {
			Status int    `json:"status"`
			ID     string `json:"id"`
			CVR    string `json:"cvr"`
		} `json:"created"`
		Replay struct {
			Status   int    `json:"status"`
			Replayed string `json:"replayed"`
			ID       string `json:"id"`
		} `json:"replay"`
		List struct {
			Created, Listed []string
			Pages           int
		} `json:"list"`
		IDs   []string `json:"ids"`
		Error struct {
			Status      int
			Code, Field string
			Problems    int
			Explained   string
		} `json:"error"`
		Conflict struct {
			Status          int
			Code, Explained string
		} `json:"conflict"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("the client printed %s: %v", raw, err)
	}
	if got.Created.Status != 201 || got.Created.ID == "" || got.Replay.Status != 200 || got.Replay.Replayed != "true" || got.Replay.ID != got.Created.ID {
		t.Errorf("create and replay: %+v %+v", got.Created, got.Replay)
	}
	if len(got.List.Created) != 5 || !slices.Equal(slices.Sorted(slices.Values(got.List.Listed)), slices.Sorted(slices.Values(got.List.Created))) || got.List.Pages != 3 {
		t.Errorf("the list, two a page: %+v", got.List)
	}
	if len(got.List.Created) == 5 && !slices.Equal(got.IDs, got.List.Created[:3]) {
		t.Errorf("by ids: %v, want %v", got.IDs, got.List.Created[:3])
	}
	if got.Error.Status != 422 || got.Error.Code != "invalid_request" || got.Error.Field != "cvr" || got.Error.Problems != 1 || !strings.HasPrefix(got.Error.Explained, "cvr: cvr ") {
		t.Errorf("the narrowed 422: %+v", got.Error)
	}
	if got.Conflict.Status != 409 || got.Conflict.Code != "idempotency_key_reused" || got.Conflict.Explained == "" {
		t.Errorf("the narrowed 409: %+v", got.Conflict)
	}
}

// lockFolder takes an exclusive flock on path (created if need be) and
// returns its release, which the test's cleanup also calls; the kernel
// releases it when the process dies, so a killed run leaves no stale lock.
func lockFolder(t *testing.T, path string) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	var once bool
	unlock = func() {
		if !once {
			once = true
			f.Close()
		}
	}
	t.Cleanup(unlock)
	return unlock
}

// The client's builds this machine made, by their inputs (buildInputs), in
// the user's cache folder (practice-api/ts-client): a fresh clone of a
// commit whose client and document were built before copies dist and the
// generated types back instead of running openapi-typescript and tsc
// again (6 s of CPU). The eight used last are kept; TS_BUILD_CACHE=off
// builds every time.
func buildCache(inputs string) string {
	base, err := os.UserCacheDir()
	if err != nil || os.Getenv("TS_BUILD_CACHE") == "off" {
		return ""
	}
	return filepath.Join(base, "practice-api", "ts-client", inputs[:32])
}

// restoreBuild copies a kept build into dir, and says whether there was one.
func restoreBuild(dir, inputs string) bool {
	entry := buildCache(inputs)
	if entry == "" || !exists(filepath.Join(entry, "done")) {
		return false
	}
	if os.RemoveAll(filepath.Join(dir, "dist")) != nil ||
		os.CopyFS(filepath.Join(dir, "dist"), os.DirFS(filepath.Join(entry, "dist"))) != nil ||
		copyFile(filepath.Join(entry, "schema.d.ts"), filepath.Join(dir, "src", "schema.d.ts")) != nil {
		return false // the build runs and writes them whole
	}
	now := time.Now()
	_ = os.Chtimes(entry, now, now)
	return true
}

// saveBuild keeps dir's build under its inputs.
func saveBuild(t *testing.T, dir, inputs string) {
	t.Helper()
	entry := buildCache(inputs)
	if entry == "" || exists(entry) {
		return
	}
	parent := filepath.Dir(entry)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Logf("the client's build is not kept: %v", err)
		return
	}
	tmp, err := os.MkdirTemp(parent, ".new-")
	if err != nil {
		t.Logf("the client's build is not kept: %v", err)
		return
	}
	defer os.RemoveAll(tmp) // nothing left after the rename
	if err := os.CopyFS(filepath.Join(tmp, "dist"), os.DirFS(filepath.Join(dir, "dist"))); err != nil {
		t.Logf("the client's build is not kept: %v", err)
		return
	}
	if err := copyFile(filepath.Join(dir, "src", "schema.d.ts"), filepath.Join(tmp, "schema.d.ts")); err != nil {
		t.Logf("the client's build is not kept: %v", err)
		return
	}
	if err := os.WriteFile(filepath.Join(tmp, "done"), nil, 0o644); err != nil {
		return
	}
	_ = os.Rename(tmp, entry) // another run's entry for the same inputs stays
	synthcache.Prune(parent, 8)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// buildInputs is the SHA-256 of what the TypeScript client's build reads:
// its package files, tsconfig.json, its sources (not the types it
// generates) and the OpenAPI document.
func buildInputs(t *testing.T, dir, document string) string {
	t.Helper()
	files := []string{document, filepath.Join(dir, "package.json"), filepath.Join(dir, "package-lock.json"), filepath.Join(dir, "tsconfig.json")}
	sources, err := filepath.Glob(filepath.Join(dir, "src", "*.ts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sources {
		if filepath.Base(f) != "schema.d.ts" {
			files = append(files, f)
		}
	}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
