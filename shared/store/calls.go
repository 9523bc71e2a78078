package store

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// Calls runs store calls of one request at once (the key's check reads
// beside its count; a list reads several partitions). A panic in a
// goroutine of its own would end the process (a function's instance with
// the platform's report of a crash, the devserver with every family)
// instead of reaching the edge's recovery, which answers the request with
// the spec's JSON 500 and logs the panic through the redacting logger: so
// Wait raises the first one again, in the goroutine that waits.
type Calls struct {
	wg       sync.WaitGroup
	mu       sync.Mutex
	panicked *Panic
}

// Panic is a panic carried from the goroutine it happened in to the one
// that waited for it (Calls.Wait), with the first goroutine's stack.
type Panic struct {
	Value any
	Stack []byte
}

// PanicStack is the stack of the goroutine that panicked (the edge's
// recovery logs it without linking the store).
func (p *Panic) PanicStack() []byte { return p.Stack }

// String is the panic's value, as fmt.Sprint prints a panic.
func (p *Panic) String() string { return fmt.Sprint(p.Value) }

// Go runs f in a goroutine of its own.
func (c *Calls) Go(f func()) {
	c.wg.Go(func() {
		defer func() {
			if v := recover(); v != nil {
				c.mu.Lock()
				defer c.mu.Unlock()
				if c.panicked == nil {
					c.panicked = &Panic{Value: v, Stack: debug.Stack()}
				}
			}
		}()
		f()
	})
}

// Wait waits for every f, then panics with the first panic of one (a
// *Panic), if any.
func (c *Calls) Wait() {
	c.wg.Wait()
	c.mu.Lock()
	p := c.panicked
	c.mu.Unlock()
	if p != nil {
		panic(p)
	}
}
