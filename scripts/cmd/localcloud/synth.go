package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/practice-api/practice-api/scripts/internal/gobin"
	"github.com/practice-api/practice-api/scripts/internal/synthcache"
	"github.com/practice-api/practice-api/shared/modroot"
	"github.com/practice-api/practice-api/shared/store/ddblocal"
)

// repoRoot finds the module's folder from the working directory up, or
// from the binary's (.bin/localcloud) up.
func repoRoot() (string, error) {
	root, err := modroot.Find()
	if err != nil {
		return "", errors.New("run localcloud inside the repository (or set LOCALCLOUD_TEMPLATE)")
	}
	return root, nil
}

// synthesize builds every function for this machine and synthesizes the
// local stage, with the settings this environment asks for, into
// .bin/localcloud-stack/cdk.out-<hash of the settings>, unless nothing it
// depends on changed since the last time; it returns the template's path. Several
// localclouds starting at once (test packages in parallel) take turns.
func synthesize(ctx context.Context) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(root, ".bin", "localcloud-stack") // .bin/localcloud is this binary
	code := filepath.Join(out, "lambda")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	unlock, err := ddblocal.LockFile(filepath.Join(out, ".lock"), func() {
		slog.Info("localcloud: waiting for another localcloud building or synthesizing in this folder", "folder", out)
	})
	if err != nil {
		return "", err
	}
	defer unlock()
	// The builds below (every function's bootstrap, the infra program) are
	// skipped when nothing they read changed since the last ones here: go
	// build's own check of an up-to-date binary costs the go command
	// about a second of CPU each time, and make test starts localcloud
	// fourteen times from one clone.
	infra := filepath.Join(out, "infra")
	stamp := filepath.Join(out, "built.state")
	state, err := sourceState(root)
	if err != nil {
		return "", err
	}
	if prev, err := os.ReadFile(stamp); err == nil && string(prev) == state && builtAlready(code, infra) {
		slog.Info("localcloud: the bootstraps and the infra program are up to date (no source changed since they were built)", "in", out)
	} else {
		_ = os.Remove(stamp)
		// Every function's bootstrap through go's cache of executables
		// (gobin), into a folder beside that is kept; each binary that
		// changed is then copied into place as <function>/bootstrap through
		// a rename: another localcloud may be running the old file (writing
		// over it would fail, text file busy). A first start in a fresh
		// clone of code this machine built before links nothing (11
		// functions: 13 s of CPU otherwise).
		fresh := filepath.Join(out, "build")
		slog.Info("localcloud: building the functions' bootstraps", "arch", runtime.GOARCH, "into", code)
		if err := buildFunctions(ctx, root, fresh); err != nil {
			return "", err
		}
		built, err := os.ReadDir(fresh)
		if err != nil {
			return "", err
		}
		for _, e := range built {
			if err := os.MkdirAll(filepath.Join(code, e.Name()), 0o755); err != nil {
				return "", err
			}
			if err := install(filepath.Join(fresh, e.Name()), filepath.Join(code, e.Name(), "bootstrap")); err != nil {
				return "", err
			}
		}
		if err := synthcache.Build(ctx, root, infra); err != nil {
			return "", err
		}
		// The state read before the builds: a file changed while they ran
		// leaves a state that does not match, and the next start builds.
		if err := os.WriteFile(stamp, []byte(state), 0o644); err != nil {
			return "", err
		}
	}
	arch := "arm64"
	if runtime.GOARCH == "amd64" {
		arch = "amd64"
	}
	// The local stage's settings from this environment go into the synth,
	// so the template carries them; each set of settings has its own
	// assembly (a run with other settings does not synthesize over it).
	ctxMap := map[string]string{"stage": "local", "lambdaArch": arch, "codeDir": code}
	settings := synthContext()
	for k, v := range settings {
		ctxMap[k] = v
	}
	settingsJSON, _ := json.Marshal(settings)
	// A STAGE_SETTINGS file (the stage's kept settings, infra reads it) is
	// part of what the template depends on.
	if path := os.Getenv("STAGE_SETTINGS"); path != "" {
		kept, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("STAGE_SETTINGS: %w", err)
		}
		settingsJSON = append(append(settingsJSON, '\n'), kept...)
	}
	sum := sha256.Sum256(settingsJSON)
	assembly := filepath.Join(out, "cdk.out-"+hex.EncodeToString(sum[:6]))
	// Synthesized again only when the infra program, a bootstrap,
	// cdk.json or the settings changed, and then from the machine's cache
	// when any clone synthesized the same before (synthcache).
	res, err := synthcache.Synthesize(ctx, synthcache.Request{
		Root: root, Infra: infra, Context: ctxMap, Out: assembly,
		Env: []string{"JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20",
			"CDK_DEFAULT_ACCOUNT=", "CDK_DEFAULT_REGION="},
	})
	if err != nil {
		return "", fmt.Errorf("synthesize the local stage: %w", err)
	}
	switch res.Cached {
	case "":
		slog.Info("localcloud: synthesized the local stage (cdk synth, offline)", "into", assembly, "settings", settings)
	case "machine":
		slog.Info("localcloud: the local stage as synthesized before on this machine (the same infra, bootstraps and settings)", "into", assembly)
	}
	return filepath.Join(assembly, "PracticeApi-local.template.json"), nil
}

// sourceState fingerprints what building the functions and the infra
// program reads: the go command (its path, size and time), the
// environment that changes a build, go.mod and go.sum, and every file
// under functions/, shared/ and infra/ (the only folders of the module
// either links: functions/deps_test.go) by path, size, mode and time.
// A file that is written changes its time; nothing is read but folders.
func sourceState(root string) (string, error) {
	var b strings.Builder
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	if info, err := os.Stat(goBin); err == nil {
		fmt.Fprintf(&b, "go %s %d %d\n", goBin, info.Size(), info.ModTime().UnixNano())
	}
	for _, k := range []string{"GOFLAGS", "GOEXPERIMENT", "GOAMD64", "GOARM64", "GOTOOLCHAIN", "GOROOT", "GOPATH", "GOMODCACHE"} {
		fmt.Fprintf(&b, "%s=%s\n", k, os.Getenv(k))
	}
	fmt.Fprintf(&b, "GOARCH=%s\n", runtime.GOARCH)
	for _, top := range []string{"go.mod", "go.sum", "functions", "shared", "infra"} {
		if _, err := os.Lstat(filepath.Join(root, top)); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(&b, "%s absent\n", top)
			continue
		}
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "node_modules" {
					return filepath.SkipDir
				}
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			fmt.Fprintf(&b, "%s %d %o %d\n", rel, info.Size(), info.Mode(), info.ModTime().UnixNano())
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("the sources' state: %w", err)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:]), nil
}

// buildFunctions builds each main package under functions/ into
// fresh/<function>, several at once. No VCS stamp (nothing reads it): a
// commit that leaves a function's code alone leaves its bootstrap's bytes
// alone, and with them the synth's key (synthcache).
func buildFunctions(ctx context.Context, root, fresh string) error {
	dirs, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		return err
	}
	env := []string{"GOOS=linux", "GOARCH=" + runtime.GOARCH, "CGO_ENABLED=0"}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, max(2, runtime.NumCPU()))
	)
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(root, "functions", d.Name(), "main.go")); !d.IsDir() || err != nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := gobin.Build(ctx, root, "./functions/"+d.Name(), filepath.Join(fresh, d.Name()), env,
				"-trimpath", "-buildvcs=false", "-tags", "lambda.norpc", "-ldflags", "-s -w")
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// builtAlready: the infra program and every function's bootstrap are in
// place (the build folder names the functions last built).
func builtAlready(code, infra string) bool {
	if _, err := os.Stat(infra); err != nil {
		return false
	}
	built, err := os.ReadDir(filepath.Join(filepath.Dir(code), "build"))
	if err != nil || len(built) == 0 {
		return false
	}
	for _, e := range built {
		if _, err := os.Stat(filepath.Join(code, e.Name(), "bootstrap")); err != nil {
			return false
		}
	}
	return true
}

// install puts the binary src at dst unless dst already holds the same
// bytes: a copy beside dst, renamed over it.
func install(src, dst string) error {
	if same, err := sameFile(src, dst); err != nil || same {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".bootstrap-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a rename: nothing left to remove
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// sameFile reports whether a and b hold the same bytes (b may be missing).
func sameFile(a, b string) (bool, error) {
	ia, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	ib, err := os.Stat(b)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && ia.Size() != ib.Size()) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	ha, err := synthcache.FileSum(a)
	if err != nil {
		return false, err
	}
	hb, err := synthcache.FileSum(b)
	return err == nil && ha == hb, err
}
