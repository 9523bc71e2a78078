// Command brokenmatters is a deliberately broken build of the matters
// function, for localcloud's release rehearsal (make local-cloud-release
// and TestABadReleaseRollsBackAndAGoodOneGoesOut): every route as the
// real one serves it, but GET /matters/{matter} answers a JSON 500, as a
// release with a bug in one handler would. It is never deployed.
package main

import (
	"net/http"

	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/store"
)

func main() {
	apiapp.Start(routes.Matters, apiapp.On(func(db *store.DB) httpapi.Handlers {
		h := matter.Handlers(matter.NewStore(db))
		h["matters.get"] = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"code":"internal_error","message":"this build is broken on purpose"}`))
		}
		return h
	}))
}
