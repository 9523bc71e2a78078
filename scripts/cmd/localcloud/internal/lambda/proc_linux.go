package lambda

import "syscall"

// childAttrs makes the kernel kill a bootstrap process when localcloud
// dies in any way, SIGKILL included (PR_SET_PDEATHSIG): no orphans.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
