//go:build unix

package ddblocal

import (
	"fmt"
	"os"
	"syscall"
)

// LockFile takes an exclusive advisory lock on path, waiting for it, and
// holds it until unlock is called or the process ends. The engine's
// install takes one; so does localcloud's build of the stack. When another
// process holds it, each onWait is called once before waiting (to say so).
func LockFile(path string, onWait ...func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
	}
	for _, w := range onWait {
		w()
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
