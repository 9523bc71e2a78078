package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/clock"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/codedeploy"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
)

// TestControlAPIAnswers: the control API's answers that need no running
// stack (its refusals, the clock, a metric's statistic, a function's
// fault, the alarms), each as the operator's tools and the campaigns read
// them; in milliseconds.
func TestControlAPIAnswers(t *testing.T) {
	t.Parallel()
	st := &stack.Stack{Functions: map[string]*stack.Function{
		"MattersFn": {ID: "MattersFn", Name: "matters"},
		"MetaFn":    {ID: "MetaFn", Name: "meta"},
	}}
	matters := lambda.New(st.Functions["MattersFn"], nil, "arn:matters", 1, nil)
	aliases := map[string]*lambda.Alias{"MattersFn": lambda.NewAlias("live", matters)}
	metrics := cloudwatch.NewStore()
	m := cloudwatch.Metric{Namespace: "AWS/Lambda", Name: "Errors", Dims: map[string]string{"FunctionName": "matters"}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	metrics.PutAt(m, 2, at)
	metrics.PutAt(m, 3, at.Add(time.Minute))
	control := func(manual *clock.Manual) http.Handler {
		o := &observability{store: metrics, alarms: map[string]*cloudwatch.Alarm{}, groups: map[string]*codedeploy.Group{},
			aliases: aliases, queues: map[string]*sqsserver.Queue{}, deployments: map[string]*codedeploy.Deployment{},
			targets: map[string]string{}, manual: manual}
		return o.control(context.Background(), "k", st)
	}
	wall, onManual := control(nil), control(clock.NewManual(at, time.Minute))

	cases := []struct {
		name         string
		h            http.Handler
		method, path string
		key, body    string
		code         int
		want         string // the answer's body, exactly (after trimming)
	}{
		{"no key", wall, "GET", "/localcloud/alarms", "", "", 403, `{"message":"send the operator key of the ready line in X-Localcloud-Key"}`},
		{"a wrong key", wall, "GET", "/localcloud/alarms", "x", "", 403, `{"message":"send the operator key of the ready line in X-Localcloud-Key"}`},
		{"alarms", wall, "GET", "/localcloud/alarms", "k", "", 200, `{}`},
		{"functions", wall, "GET", "/localcloud/functions", "k", "", 200, `{"matters":{"running":0,"started":0}}`},
		{"a release of bad JSON", wall, "POST", "/localcloud/releases", "k", `{`, 400, `{"message":"unexpected EOF"}`},
		{"a release of a function without a group", wall, "POST", "/localcloud/releases", "k", `{"function":"matters","bootstrap":"/bin/true"}`, 404, `{"message":"no function matters under a deployment group"}`},
		{"a release of no function", wall, "POST", "/localcloud/releases", "k", `{"function":"nothing"}`, 404, `{"message":"no function nothing under a deployment group"}`},
		{"a release's status unknown", wall, "GET", "/localcloud/releases/d-1", "k", "", 404, `{"message":"no such deployment"}`},
		{"the wall clock", wall, "POST", "/localcloud/clock", "k", `{"advance":"1m"}`, 409, `{"message":"the clock is the wall clock: start localcloud with LOCALCLOUD_CLOCK=manual to move it"}`},
		{"the clock of bad JSON", wall, "POST", "/localcloud/clock", "k", `[`, 400, `{"message":"unexpected EOF"}`},
		{"the manual clock", onManual, "GET", "/localcloud/clock", "k", "", 200, `{"manual":true,"now":"2026-01-02T03:04:05Z"}`},
		{"the manual clock moved by nothing", onManual, "POST", "/localcloud/clock", "k", `{"advance":"0s"}`, 400, `{"field":"advance","message":"advance \"0s\": a duration from 1s to 24h (\"1m\")"}`},
		{"the manual clock moved by a day and more", onManual, "POST", "/localcloud/clock", "k", `{"advance":"25h"}`, 400, `{"field":"advance","message":"advance \"25h\": a duration from 1s to 24h (\"1m\")"}`},
		{"a metric's sum", wall, "GET", "/localcloud/metrics?namespace=AWS/Lambda&metric=Errors&dimension=FunctionName=matters", "k", "", 200, `{"present":true,"value":5}`},
		{"a metric's maximum in a range", wall, "GET", "/localcloud/metrics?namespace=AWS/Lambda&metric=Errors&dimension=FunctionName=matters&stat=Maximum&from=2026-01-02T03:04:00Z&to=2026-01-02T03:05:00Z", "k", "", 200, `{"present":true,"value":2}`},
		{"a metric of another dimension", wall, "GET", "/localcloud/metrics?namespace=AWS/Lambda&metric=Errors&dimension=FunctionName=meta", "k", "", 200, `{"present":false,"value":0}`},
		{"a metric's dimension without a value", wall, "GET", "/localcloud/metrics?namespace=AWS/Lambda&metric=Errors&dimension=FunctionName", "k", "", 400, `{"field":"dimension","message":"dimension FunctionName: Name=Value"}`},
		{"a metric's bad range", wall, "GET", "/localcloud/metrics?metric=Errors&to=yesterday", "k", "", 400, `{"field":"to","message":"to: parsing time \"yesterday\" as \"2006-01-02T15:04:05.999999999Z07:00\": cannot parse \"yesterday\" as \"2006\""}`},
		{"a fault of bad JSON", wall, "POST", "/localcloud/faults", "k", `{"function":`, 400, `{"message":"unexpected EOF"}`},
		{"a function's fault", wall, "POST", "/localcloud/faults", "k", `{"function":"matters","fault":"throttle"}`, 200, `{"fault":"throttle","function":"matters"}`},
		{"a function's fault lifted", wall, "POST", "/localcloud/faults", "k", `{"function":"matters","fault":"none"}`, 200, `{"fault":"none","function":"matters"}`},
		{"a fault of a function without an alias", wall, "POST", "/localcloud/faults", "k", `{"function":"meta","fault":"crash"}`, 404, `{"message":"no function meta"}`},
		{"a fault of no function", wall, "POST", "/localcloud/faults", "k", `{"function":"nothing","fault":"crash"}`, 404, `{"message":"no function nothing"}`},
		{"a table fault without the table's faults", wall, "POST", "/localcloud/faults", "k", `{"function":"matters","store":"slow"}`, 200, `{"fault":"","function":"matters"}`},
		{"a queue fault of no function", wall, "POST", "/localcloud/faults", "k", `{"queue":"Deliveries","function":"nothing"}`, 404, `{"message":"no function nothing"}`},
		{"a fault of no queue", wall, "POST", "/localcloud/faults", "k", `{"queue":"Deliveries","function":"matters"}`, 404, `{"message":"no queue Deliveries"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			if c.key != "" {
				r.Header.Set("X-Localcloud-Key", c.key)
			}
			w := httptest.NewRecorder()
			c.h.ServeHTTP(w, r)
			if got := strings.TrimSpace(w.Body.String()); w.Code != c.code || got != c.want {
				t.Errorf("%s %s: %d %s\nwant %d %s", c.method, c.path, w.Code, got, c.code, c.want)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}
