// Command meta is the Lambda of the meta family: GET /openapi.json, the
// API's OpenAPI document, without a key and without the store (it links
// lambdahttp, not apiapp: no store wiring).
package main

import (
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/lambdahttp"
	"github.com/practice-api/practice-api/shared/openapi"
)

func main() {
	lambdahttp.StartPublic(routes.Meta, openapi.Handlers())
}
