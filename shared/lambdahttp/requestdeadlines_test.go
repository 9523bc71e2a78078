package lambdahttp_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/lambdahttp"
)

// wildcard is a path parameter of a route.
var wildcard = regexp.MustCompile(`\{[a-z_]+\}`)

// TestTheDevserverGivesEachRequestItsFunctionsDeadline: lambdahttp.RequestDeadlines
// (the devserver's) gives a request of each family its function's timeout
// less RequestMargin (reports 24.5 s, the others 9.5 s), a path of no
// route the meta function's (4.5 s), requests of every family at once.
func TestTheDevserverGivesEachRequestItsFunctionsDeadline(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	left := map[string]time.Duration{}
	h := lambdahttp.RequestDeadlines(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := r.Context().Deadline()
		mu.Lock()
		defer mu.Unlock()
		if !ok {
			left[r.Method+" "+r.URL.Path] = -1
			return
		}
		left[r.Method+" "+r.URL.Path] = time.Until(d)
	}))
	paths := map[string]string{"GET /api/v1/nowhere": routes.Meta}
	for _, rt := range routes.Table {
		path := wildcard.ReplaceAllString(routes.Prefix+rt.Path, "00000000-0000-4000-8000-000000000000")
		paths[rt.Method+" "+path] = rt.Family
	}
	var wg sync.WaitGroup
	for mp := range paths {
		wg.Go(func() {
			method, path, _ := strings.Cut(mp, " ")
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, nil))
		})
	}
	wg.Wait()
	for mp, family := range paths {
		want := time.Duration(routes.Timeouts[family])*time.Second - lambdahttp.RequestMargin
		if got := left[mp]; got > want || got < want-2*time.Second {
			t.Errorf("%s (%s): %v left, want about %v", mp, family, got, want)
		}
	}
}
