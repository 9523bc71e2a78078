// Command synthetic is the stage's synthetic check: every minute a
// schedule invokes it, and it calls the stage's API as an integrator would,
// read-only (package smoke: the public document and page, a 401 without a
// key, and with the stage's smoke key a list and the error shapes). The
// result is a metric whose alarm pages, and whose absence pages too: zero
// traffic is not health.
package main

import "github.com/practice-api/practice-api/shared/app"

func main() { app.StartSynthetic() }
