// Command releasecheck is every release's pre-traffic hook: CodeDeploy
// invokes it before shifting any traffic to a function's new version, and
// it runs make smoke's read-only checks against that version (a worker's:
// an empty batch), reporting Succeeded or Failed to CodeDeploy.
package main

import "github.com/practice-api/practice-api/shared/app"

func main() { app.StartReleaseCheck() }
