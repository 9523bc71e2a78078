package ddblocal

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// grace runs the engine under sh, which the kernel signals (SIGTERM) when
// the devserver dies in any way, SIGKILL included (PR_SET_PDEATHSIG), or
// which Stop signals. Either way the engine gets a second before it is
// told to stop: DynamoDB Local answers a write a moment before it commits
// it, and a JVM killed in that moment loses a write it acknowledged (seen
// here: one transaction in eight kills at once, none with a second's
// grace). The devserver is gone or done by then, so no new write arrives.
const grace = `"$@" &
child=$!
trap 'sleep 1; kill $child 2>/dev/null; wait $child; exit 0' TERM INT
wait $child`

// command runs java under the grace shell.
func command(java string, args []string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", append([]string{"-c", grace, "ddblocal", java}, args...)...)
	// Its own process group keeps a terminal's Ctrl-C from reaching the
	// engine before the devserver has shut down; Pdeathsig tells it when
	// the devserver dies in any way, SIGKILL included.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	return cmd
}

// startChild starts cmd on a goroutine locked to its OS thread, and waits
// for it there: PR_SET_PDEATHSIG fires when the thread that forked the
// child exits, so that thread must live as long as the child does.
func startChild(cmd *exec.Cmd, e *Engine) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		e.waitErr = cmd.Wait()
		close(e.done)
	}()
	return <-started
}

// CPU is the CPU time (user and system) the engine's JVM has used so far;
// false when it cannot be read (the engine has stopped).
func (e *Engine) CPU() (time.Duration, bool) {
	if e == nil {
		return 0, false
	}
	shell := strconv.Itoa(e.cmd.Process.Pid)
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 13 || f[1] != shell { // the JVM is the grace shell's child
			continue
		}
		user, _ := strconv.ParseInt(f[11], 10, 64)
		sys, _ := strconv.ParseInt(f[12], 10, 64)
		return time.Duration(user+sys) * time.Second / 100, true // USER_HZ is 100 on Linux
	}
	return 0, false
}
