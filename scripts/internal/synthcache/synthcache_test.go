package synthcache

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeInfra is a CDK app in small: it copies the code folder's functions
// into hash-named asset folders, as CDK stages assets, writes a template
// that names the context's stage, and counts its runs in a file.
const fakeInfra = `package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
)

func main() {
	var ctx map[string]string
	if err := json.Unmarshal([]byte(os.Getenv("CDK_CONTEXT_JSON")), &ctx); err != nil {
		panic(err)
	}
	out := os.Getenv("SYNTH_OUTDIR")
	fns, _ := os.ReadDir(ctx["codeDir"])
	for _, fn := range fns {
		b, err := os.ReadFile(filepath.Join(ctx["codeDir"], fn.Name(), "bootstrap"))
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		dir := filepath.Join(out, "asset."+hex.EncodeToString(sum[:8]))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "bootstrap"), b, 0o755)
	}
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "template.json"), []byte("stage "+ctx["stage"]+" account "+os.Getenv("CDK_DEFAULT_ACCOUNT")), 0o644)
	f, _ := os.OpenFile(os.Getenv("SYNTH_COUNT"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	f.WriteString("x")
	f.Close()
}
`

// isolateCache gives the test a machine cache of its own (XDG_CACHE_HOME
// and HOME in temporary folders) but keeps go's build and module caches:
// go would otherwise find its build cache under the new XDG_CACHE_HOME,
// empty, and compile the standard library again for the fake infra (10 s
// of CPU in every make test).
func isolateCache(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	caches := strings.Fields(string(out))
	if len(caches) != 2 {
		t.Fatalf("go env GOCACHE GOMODCACHE: %q", out)
	}
	t.Setenv("GOCACHE", caches[0])
	t.Setenv("GOMODCACHE", caches[1])
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
}

// repo is a module with the fake infra, cdk.json and a code folder of two
// functions.
func repo(t *testing.T) (root, code string) {
	t.Helper()
	root = t.TempDir()
	for name, body := range map[string]string{
		"go.mod":           "module example.com/fake\n\ngo 1.24\n",
		"cdk.json":         `{"app": "go run ./infra"}`,
		"infra/main.go":    fakeInfra,
		"code/a/bootstrap": "binary a",
		"code/b/bootstrap": "binary b",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root, filepath.Join(root, "code")
}

// TestTheSameInputsMakeTheAssemblyOnce: a synth is kept in its folder and
// in the machine's cache, which a second clone's synth of the same inputs
// restores byte for byte (its functions' copies from its own code folder)
// without running the app; a changed bootstrap, context or environment
// variable the app reads synthesizes again, SYNTH_CACHE=off always does,
// and the cache keeps the Keep entries used last.
func TestTheSameInputsMakeTheAssemblyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program fifteen times: skipped with -short; make test runs it")
	}
	isolateCache(t)
	count := filepath.Join(t.TempDir(), "count")
	t.Setenv("SYNTH_COUNT", count)
	t.Setenv("CDK_DEFAULT_ACCOUNT", "")
	runs := func() int { b, _ := os.ReadFile(count); return len(b) }

	var env []string
	built := map[string]bool{}
	synth := func(root, code, stage, out string) Result {
		t.Helper()
		infra := filepath.Join(root, ".bin", "infra")
		if !built[root] { // once a repository: go build's own check costs a second under load
			if err := Build(t.Context(), root, infra); err != nil {
				t.Fatal(err)
			}
			built[root] = true
		}
		res, err := Synthesize(t.Context(), Request{Root: root, Infra: infra,
			Context: map[string]string{"stage": stage, "codeDir": code}, Out: out, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	rootA, codeA := repo(t)
	outA := filepath.Join(rootA, ".bin", "cdk.out")
	if r := synth(rootA, codeA, "local", outA); r.Cached != "" || runs() != 1 {
		t.Fatalf("first synth: cached %q, %d runs", r.Cached, runs())
	}
	if r := synth(rootA, codeA, "local", outA); r.Cached != "folder" || runs() != 1 {
		t.Fatalf("the same again: cached %q, %d runs", r.Cached, runs())
	}

	// A second clone, in another folder: the same key, from the cache.
	rootB, codeB := repo(t)
	outB := filepath.Join(rootB, ".bin", "cdk.out")
	rb := synth(rootB, codeB, "local", outB)
	if rb.Cached != "machine" || runs() != 1 {
		t.Fatalf("a second clone: cached %q, %d runs", rb.Cached, runs())
	}
	want, _ := sums(outA)
	got, _ := sums(outB)
	if len(want) != len(got) || len(want) != 4 { // template, two assets, synth.key
		t.Fatalf("restored %v, synthesized %v", got, want)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("restored %v, synthesized %v", got[i], want[i])
		}
	}
	if info, err := os.Stat(filepath.Join(outB, want[0].rel)); err != nil || !strings.HasPrefix(want[0].rel, "asset.") || info.Mode().Perm()&0o100 == 0 {
		t.Errorf("restored asset %s: %v %v, want it executable", want[0].rel, info, err)
	}
	// The entry holds no copy of what the code folder holds.
	entries, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "practice-api", "synth", "*", "asset.*"))
	if len(entries) != 0 {
		t.Errorf("the cache holds the functions' bytes: %v", entries)
	}

	// A restore over an assembly leaves its asset folders as they are (a
	// localcloud may be running from them) and puts back the rest.
	running := filepath.Join(outB, want[0].rel+".running")
	if err := os.WriteFile(running, []byte("in use"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(outB, "template.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(outB, "synth.key")); err != nil {
		t.Fatal(err)
	}
	if r := synth(rootB, codeB, "local", outB); r.Cached != "machine" || runs() != 1 {
		t.Fatalf("restored over an assembly: cached %q, %d runs", r.Cached, runs())
	}
	if _, err := os.Stat(running); err != nil {
		t.Errorf("the restore replaced an asset folder in use: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outB, "template.json")); !bytes.Equal(b, []byte("stage local account ")) {
		t.Fatalf("template %q after the restore", b)
	}
	oldAsset := filepath.Dir(running)

	// What changes the assembly synthesizes again.
	if err := os.WriteFile(filepath.Join(codeB, "b", "bootstrap"), []byte("binary b, changed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := synth(rootB, codeB, "local", outB); r.Cached != "" || runs() != 2 {
		t.Fatalf("a changed bootstrap: cached %q, %d runs", r.Cached, runs())
	}
	if b, _ := os.ReadFile(filepath.Join(outB, "template.json")); !bytes.Equal(b, []byte("stage local account ")) {
		t.Fatalf("template %q", b)
	}
	if _, err := os.Stat(filepath.Join(oldAsset, "bootstrap")); err != nil {
		t.Errorf("a synth removed the assets of the one before (a localcloud may be running from them): %v", err)
	}
	if r := synth(rootB, codeB, "dev", outB); r.Cached != "" || runs() != 3 {
		t.Fatalf("another context: cached %q, %d runs", r.Cached, runs())
	}
	t.Setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
	if r := synth(rootB, codeB, "dev", outB); r.Cached != "" || runs() != 4 {
		t.Fatalf("another account: cached %q, %d runs", r.Cached, runs())
	}
	if b, _ := os.ReadFile(filepath.Join(outB, "template.json")); !bytes.Equal(b, []byte("stage dev account 123456789012")) {
		t.Fatalf("template %q", b)
	}
	// The request's variables win over the process's, in the app and the
	// key: with the account blanked, this is the dev synth made before.
	env = []string{"CDK_DEFAULT_ACCOUNT="}
	if r := synth(rootB, codeB, "dev", outB); r.Cached != "machine" || runs() != 4 {
		t.Fatalf("the account blanked by the request: cached %q, %d runs", r.Cached, runs())
	}
	if b, _ := os.ReadFile(filepath.Join(outB, "template.json")); !bytes.Equal(b, []byte("stage dev account ")) {
		t.Fatalf("template %q", b)
	}
	// A stage's kept settings count by their bytes, wherever the file is.
	settings := func(body string) string {
		p := filepath.Join(t.TempDir(), "settings.json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return "STAGE_SETTINGS=" + p
	}
	env = []string{"CDK_DEFAULT_ACCOUNT=", settings(`{"rateLimit": 60}`)}
	if r := synth(rootB, codeB, "dev", outB); r.Cached != "" || runs() != 5 {
		t.Fatalf("with a settings file: cached %q, %d runs", r.Cached, runs())
	}
	env = []string{"CDK_DEFAULT_ACCOUNT=", settings(`{"rateLimit": 60}`)}
	if r := synth(rootB, codeB, "dev", filepath.Join(rootB, ".bin", "kept")); r.Cached != "machine" || runs() != 5 {
		t.Fatalf("the same settings in another file: cached %q, %d runs", r.Cached, runs())
	}
	env = []string{"CDK_DEFAULT_ACCOUNT=", settings(`{"rateLimit": 61}`)}
	if r := synth(rootB, codeB, "dev", outB); r.Cached != "" || runs() != 6 {
		t.Fatalf("other settings: cached %q, %d runs", r.Cached, runs())
	}
	env = nil
	t.Setenv("SYNTH_CACHE", "off")
	if r := synth(rootA, codeA, "prod", filepath.Join(rootA, ".bin", "prod")); r.Cached != "" || runs() != 7 {
		t.Fatalf("SYNTH_CACHE=off: cached %q, %d runs", r.Cached, runs())
	}
	if r := synth(rootB, codeB, "local", filepath.Join(rootB, ".bin", "other")); r.Cached != "" || runs() != 8 {
		t.Fatalf("SYNTH_CACHE=off, a key the cache holds: cached %q, %d runs", r.Cached, runs())
	}
	t.Setenv("SYNTH_CACHE", "")
	// Another infra program (its sum kept beside it is taken again).
	src := filepath.Join(rootA, "infra", "main.go")
	b, _ := os.ReadFile(src)
	if err := os.WriteFile(src, bytes.Replace(b, []byte(`"stage "`), []byte(`"stage: "`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Build(t.Context(), rootA, filepath.Join(rootA, ".bin", "infra")); err != nil {
		t.Fatal(err)
	}
	if r := synth(rootA, codeA, "local", outA); r.Cached != "" || runs() != 9 {
		t.Fatalf("another infra program: cached %q, %d runs", r.Cached, runs())
	}
	if b, _ := os.ReadFile(filepath.Join(outA, "template.json")); !bytes.Equal(b, []byte("stage: local account 123456789012")) {
		t.Fatalf("template %q from the new program", b)
	}
	for i := range Keep + 1 {
		stage := fmt.Sprint("s", i)
		synth(rootA, codeA, stage, filepath.Join(rootA, ".bin", stage))
	}
	if kept, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "practice-api", "synth", "*")); len(kept) != Keep {
		t.Errorf("the cache keeps %d entries, want %d", len(kept), Keep)
	}
}
