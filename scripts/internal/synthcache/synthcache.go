// Package synthcache synthesizes the CDK app (./infra) offline into a cloud
// assembly, through a cache that every clone and worktree of the
// repository on the machine shares, as Go's build cache is shared: a synth
// costs Node about 12 s of CPU, and the same inputs make the same
// assembly. localcloud (the local stage) and make check's cfn-lint (dev and
// prod) synthesize through it; infra's own tests do not (they test the
// synth).
//
// The key is what the assembly is made of: the infra program as built
// (with -trimpath and no VCS stamp, so the same source and module versions
// give the same bytes in any folder and at any commit: every Go input at once, the module's packages it
// imports included), the CDK context it is given (but its codeDir, a
// folder's name), every file of the functions' code folder, cdk.json and
// the environment the program reads (a STAGE_SETTINGS file by its bytes,
// not its name). Each entry lists them (synthcache-inputs.txt). An entry holds the assembly but its copies of
// the functions' code (the assets CDK copies from the code folder), which
// are copied back from the code folder on a hit; they are the same bytes,
// since the key holds them.
//
// Entries live in the user's cache folder (practice-api/synth), about
// 1.2 MB each; the sixteen used last are kept (make test makes four:
// cfn-lint's dev and prod, localcloud's tests' and the e2e suite's local
// stage). SYNTH_CACHE=off synthesizes every time.
package synthcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/practice-api/practice-api/scripts/internal/gobin"
)

// Keep is how many entries the cache keeps (the ones used last).
const Keep = 16

// Build builds the infra program of the repository at root into path (a
// file under root/.bin the caller alone writes), which Request.Infra then
// names; a program this machine linked before comes out of go's cache
// (gobin).
func Build(ctx context.Context, root, path string) error {
	// -buildvcs=false: the commit stamped into the binary would change the
	// key with every commit, though the program did not change.
	if err := gobin.Build(ctx, root, "./infra", path, nil, "-trimpath", "-buildvcs=false"); err != nil {
		return fmt.Errorf("build infra: %w", err)
	}
	return nil
}

// Request is one synth.
type Request struct {
	Root    string            // the repository
	Infra   string            // the infra program, as Build made it
	Context map[string]string // the CDK context (CDK_CONTEXT_JSON), codeDir included
	Env     []string          // more environment for the program (KEY=value)
	Out     string            // the assembly's folder; emptied first unless it already holds this key's
}

// Result says how the assembly came to be.
type Result struct {
	Key    string
	Cached string // "" (synthesized), "folder" (Out held it) or "machine" (from the machine's cache)
}

// Synthesize makes the assembly of r in r.Out, from r.Out itself, the
// machine's cache or a synth, in that order.
func Synthesize(ctx context.Context, r Request) (Result, error) {
	for _, p := range []*string{&r.Infra, &r.Out} { // the app runs in r.Root
		abs, err := filepath.Abs(*p)
		if err != nil {
			return Result{}, err
		}
		*p = abs
	}
	env := append(os.Environ(), r.Env...) // r.Env last: the one os/exec (and the key) take of a name
	// The code folder's files are read once: the key and, on a miss,
	// the entry's links both need their sums.
	var code []fileSumEntry
	if dir := r.Context["codeDir"]; dir != "" {
		var err error
		if code, err = sums(dir); err != nil {
			return Result{}, err
		}
	}
	key, inputs, err := keyOf(r, env, code)
	if err != nil {
		return Result{}, err
	}
	res := Result{Key: key}
	stamp := filepath.Join(r.Out, "synth.key")
	if old, err := os.ReadFile(stamp); err == nil && string(old) == key {
		res.Cached = "folder"
		return res, nil
	}
	// Out is not emptied: a localcloud may be running from its assets (a
	// folder per asset, named by its content's hash), which a synth or a
	// restore leaves in place; the stamp goes first, so that Out counts as
	// this key's only once it is complete.
	if err := os.Remove(stamp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, err
	}
	entry := ""
	if os.Getenv("SYNTH_CACHE") != "off" {
		if base, err := os.UserCacheDir(); err == nil {
			entry = filepath.Join(base, "practice-api", "synth", key[:32])
		}
	}
	if entry != "" {
		if err := restore(entry, r.Out, r.Context["codeDir"]); err == nil {
			now := time.Now()
			_ = os.Chtimes(entry, now, now) // used last
			res.Cached = "machine"
			return res, os.WriteFile(stamp, []byte(key), 0o644)
		} // else (no entry, or a broken one): synthesize
	}
	ctxJSON, err := json.Marshal(r.Context)
	if err != nil {
		return res, err
	}
	cmd := exec.CommandContext(ctx, r.Infra)
	cmd.Dir = r.Root
	cmd.Env = append(env, "CDK_CONTEXT_JSON="+string(ctxJSON), "SYNTH_OUTDIR="+r.Out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return res, fmt.Errorf("synthesize: %v\n%s", err, b)
	}
	if entry != "" {
		// A cache that cannot be written costs the next synth, not this one.
		_ = store(r.Out, entry, code, inputs)
		Prune(filepath.Dir(entry), Keep)
	}
	return res, os.WriteFile(stamp, []byte(key), 0o644)
}

// keyVars are the variables the infra program reads (but the two this
// package sets); STAGE_SETTINGS names a file, which is keyed by its bytes.
var keyVars = []string{"CDK_DEFAULT_ACCOUNT", "CDK_DEFAULT_REGION", "CDK_OUTDIR", "SYNTH_ARGS"}

// inputsFile, in an entry, lists what its key was made of, line by line
// (a miss is explained by comparing two entries' lists).
const inputsFile = "synthcache-inputs.txt"

// keyOf returns the key of r, whose code folder's files are code, and the
// inputs it was made of.
func keyOf(r Request, env []string, code []fileSumEntry) (string, []byte, error) {
	var in strings.Builder
	sum, err := programSum(r.Infra)
	if err != nil {
		return "", nil, err
	}
	fmt.Fprintf(&in, "infra %s\n", sum)
	c := maps.Clone(r.Context)
	delete(c, "codeDir")
	cj, _ := json.Marshal(c) // sorted keys
	fmt.Fprintf(&in, "context %s\n", cj)
	getenv := func(name string) string {
		val := ""
		for _, kv := range env {
			if s, ok := strings.CutPrefix(kv, name+"="); ok {
				val = s // the last one wins
			}
		}
		return val
	}
	for _, v := range keyVars {
		fmt.Fprintf(&in, "env %s=%q\n", v, getenv(v))
	}
	if path := getenv("STAGE_SETTINGS"); path != "" {
		if !filepath.IsAbs(path) {
			path = filepath.Join(r.Root, path) // the program runs in r.Root
		}
		s, err := FileSum(path)
		if err != nil {
			return "", nil, fmt.Errorf("STAGE_SETTINGS: %w", err)
		}
		fmt.Fprintf(&in, "STAGE_SETTINGS %s\n", s)
	}
	for _, f := range code {
		fmt.Fprintf(&in, "code %s %s\n", f.rel, f.sum)
	}
	cdk, err := FileSum(filepath.Join(r.Root, "cdk.json"))
	if err != nil {
		return "", nil, err
	}
	fmt.Fprintf(&in, "cdk.json %s\n", cdk)
	key := sha256.Sum256([]byte(in.String()))
	return hex.EncodeToString(key[:]), []byte(in.String()), nil
}

type fileSumEntry struct{ rel, sum string }

// sums lists every regular file under dir with its SHA-256, by path.
func sums(dir string) ([]fileSumEntry, error) {
	var out []fileSumEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		s, err := FileSum(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, fileSumEntry{filepath.ToSlash(rel), s})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, err
}

// linksFile names, in an entry, the assembly's files left out because the
// code folder holds the same bytes: assembly path -> code folder path.
const linksFile = "synthcache-links.json"

// store copies the assembly at out into entry (through a folder beside it,
// renamed into place: a reader never sees half an entry), but the files
// the code folder holds too (code: their sums), which it names in linksFile.
func store(out, entry string, code []fileSumEntry, inputs []byte) error {
	bySum := map[string]string{}
	for _, f := range code {
		bySum[f.sum] = f.rel
	}
	if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(entry), ".new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // after the rename: nothing
	links := map[string]string{}
	files, err := sums(out)
	if err != nil {
		return err
	}
	for _, f := range files {
		if rel, ok := bySum[f.sum]; ok {
			links[f.rel] = rel
			continue
		}
		if err := copyFile(filepath.Join(out, f.rel), filepath.Join(tmp, f.rel)); err != nil {
			return err
		}
	}
	lj, _ := json.Marshal(links)
	if err := os.WriteFile(filepath.Join(tmp, linksFile), lj, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, inputsFile), inputs, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, entry); err != nil && !errors.Is(err, fs.ErrExist) && !isNotEmpty(err) {
		return err // another process stored the same entry first: as good
	}
	return nil
}

func isNotEmpty(err error) bool {
	return err != nil && strings.Contains(err.Error(), "directory not empty")
}

// restore makes entry's assembly in out, with the files it left out
// from the code folder; fs.ErrNotExist when there is no such entry. It is
// made in a folder beside out, then moved in: each top-level file by a
// rename (a reader sees the old or the new), each asset folder whole, and
// an asset folder out already holds is left as it is (its name is its
// content's hash; a running localcloud may be executing from it).
func restore(entry, out, code string) error {
	lj, err := os.ReadFile(filepath.Join(entry, linksFile))
	if err != nil {
		return err
	}
	var links map[string]string
	if err := json.Unmarshal(lj, &links); err != nil {
		return fmt.Errorf("%s: %w", linksFile, err)
	}
	if len(links) > 0 && code == "" {
		return errors.New("synthcache: an entry with code but no code folder")
	}
	files, err := sums(entry)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, f := range files {
		if f.rel == linksFile || f.rel == inputsFile {
			continue
		}
		if err := copyFile(filepath.Join(entry, f.rel), filepath.Join(tmp, f.rel)); err != nil {
			return err
		}
	}
	for dst, src := range links {
		if err := copyFile(filepath.Join(code, src), filepath.Join(tmp, dst)); err != nil {
			return err
		}
	}
	made, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, e := range made {
		dst := filepath.Join(out, e.Name())
		if e.IsDir() {
			if _, err := os.Stat(dst); err == nil && strings.HasPrefix(e.Name(), "asset.") {
				continue
			}
			if err := os.RemoveAll(dst); err != nil {
				return err
			}
		}
		if err := os.Rename(filepath.Join(tmp, e.Name()), dst); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	o, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// programSum is FileSum of the infra program, kept beside it (<path>.sum,
// with the size and modification time it was taken at): go build leaves
// an up-to-date program untouched, and reading its 120 MB again cost every
// localcloud start a third of a second of CPU.
func programSum(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	stamp := fmt.Sprintf("%d %d ", st.Size(), st.ModTime().UnixNano())
	if b, err := os.ReadFile(path + ".sum"); err == nil {
		if sum, ok := strings.CutPrefix(string(b), stamp); ok && len(sum) == 64 {
			return sum, nil
		}
	}
	sum, err := FileSum(path)
	if err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.sum.%d", path, os.Getpid()) // two synths of one process write the same
	if err := os.WriteFile(tmp, []byte(stamp+sum), 0o644); err == nil {
		_ = os.Rename(tmp, path+".sum")
	}
	return sum, nil
}

// FileSum is the SHA-256 of the file at path, in hex.
func FileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Prune removes all but the keep entries (folders) of dir used last, by
// their times, and any folder named with a leading dot (an entry being
// stored) older than an hour, which a killed process left. Other caches
// of the machine's kept the same way use it too.
func Prune(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type aged struct {
		name string
		t    time.Time
	}
	var all []aged
	for _, e := range ents {
		info, err := e.Info()
		if !e.IsDir() || err != nil {
			continue
		}
		if strings.HasPrefix(e.Name(), ".") { // a store under way, or one a killed process left
			if time.Since(info.ModTime()) > time.Hour {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
			continue
		}
		all = append(all, aged{e.Name(), info.ModTime()})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].t.After(all[j].t) })
	for _, a := range all[min(keep, len(all)):] {
		_ = os.RemoveAll(filepath.Join(dir, a.name))
	}
}
