// Package codecheck holds tests over the module's own source (go/ast, no
// build): the promises of STYLE.md and issue #39 that a reviewer would
// otherwise have to re-check by hand. It has no code of its own.
package codecheck
