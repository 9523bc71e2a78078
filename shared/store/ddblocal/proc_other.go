//go:build !linux

package ddblocal

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// watchdog runs the engine under sh, which polls its parent (the caller)
// every second and ends the engine once the parent is gone: without
// PR_SET_PDEATHSIG this is how a SIGKILLed devserver leaves no JVM behind.
const watchdog = `parent=$1; shift
"$@" &
child=$!
trap 'kill $child 2>/dev/null; wait $child; exit 0' TERM INT
while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1; done
kill $child 2>/dev/null
wait $child`

func command(java string, args []string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", append([]string{"-c", watchdog, "ddblocal", strconv.Itoa(os.Getpid()), java}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

func startChild(cmd *exec.Cmd, e *Engine) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		e.waitErr = cmd.Wait()
		close(e.done)
	}()
	return nil
}

// CPU is not read outside Linux.
func (e *Engine) CPU() (time.Duration, bool) { return 0, false }
