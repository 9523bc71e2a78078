// Command meta is the Lambda of the meta family: GET /openapi.json, the
// API's OpenAPI document, without a key and without the store.
package main

import (
	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/openapi"
)

func main() {
	app.StartPublicLambda(routes.Meta, openapi.Handlers())
}
