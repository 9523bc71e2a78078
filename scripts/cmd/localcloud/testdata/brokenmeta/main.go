// Command brokenmeta is a deliberately broken build of the meta function,
// for localcloud's release rehearsal (TestABadReleaseRollsBackAndAGoodOneGoesOut):
// the OpenAPI document and the reference page as the real one serves them
// (the release check's smoke checks pass), but every documentation file
// (GET /docs/{file}) answers a JSON 500, as a build that lost them would,
// and docs.js only after hanging 4.2 s, most of meta's 5 s timeout, as a
// lookup waiting on something that never answers would. Meta has no
// store, so only a build can make it fail or slow. It is never deployed.
package main

import (
	"net/http"
	"time"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/lambdahttp"
	"github.com/practice-api/practice-api/shared/openapi"
)

func main() {
	h := openapi.Handlers()
	h["docs.asset"] = func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("file") == "docs.js" {
			time.Sleep(4200 * time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"code":"internal_error","message":"this build is broken on purpose"}`))
	}
	lambdahttp.StartPublic(routes.Meta, h)
}
