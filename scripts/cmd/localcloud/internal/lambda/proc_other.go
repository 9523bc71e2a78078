//go:build !linux

package lambda

import "syscall"

// childAttrs: without PR_SET_PDEATHSIG, bootstraps end when their Runtime
// API closes (the runtime client exits on a failed GET /next).
func childAttrs() *syscall.SysProcAttr { return nil }
