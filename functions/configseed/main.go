// Command configseed is the stage's StageSecrets custom resource:
// CloudFormation invokes it at each deploy, and it makes the stage's
// secrets (CONFIG) that the table does not hold yet, never replacing one.
// No other function's role may write CONFIG.
package main

import "github.com/practice-api/practice-api/shared/app"

func main() { app.StartConfigSeed() }
