package ddblocal

import (
	"os/exec"
	"runtime"
	"syscall"
)

// command runs java directly: the kernel ends it with its parent.
func command(java string, args []string) *exec.Cmd {
	cmd := exec.Command(java, args...)
	// Its own process group keeps a terminal's Ctrl-C from reaching the
	// engine before the devserver has shut down; Pdeathsig kills it when
	// the devserver dies in any way, SIGKILL included.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
