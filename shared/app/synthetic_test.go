package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/app"
)

// TestSyntheticCheckRecordsWhatItSees: against the API the synthetic check
// records its checks and no failure; with a key, the keyed checks run too;
// against a stage that answers 500 everywhere it records the failures on
// an ERROR line, as metrics its alarm watches.
func TestSyntheticCheckRecordsWhatItSees(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	key := e.Key(e.Org("A"), "matters:read")
	run := func(base string, k func(context.Context) (string, error)) map[string]any {
		var buf bytes.Buffer
		m := app.Metrics{Log: slog.New(slog.NewJSONHandler(&buf, nil)), Stage: "prod"}
		if err := app.SyntheticCheck(base, k, http.DefaultClient, m)(context.Background()); err != nil {
			t.Fatal(err)
		}
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("%v: %s", err, buf.Bytes())
		}
		return line
	}
	if l := run(e.Server.URL+"/api/v1", nil); l["SyntheticChecks"] != 4.0 || l["SyntheticCheckFailures"] != 0.0 || l["level"] != "INFO" || l["Stage"] != "prod" {
		t.Errorf("without a key: %v", l)
	}
	if l := run(e.Server.URL+"/api/v1", func(context.Context) (string, error) { return key, nil }); l["SyntheticChecks"] != 7.0 || l["SyntheticCheckFailures"] != 0.0 {
		t.Errorf("with a key: %v", l)
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer down.Close()
	if l := run(down.URL+"/api/v1", nil); l["SyntheticCheckFailures"] != 4.0 || l["level"] != "ERROR" || l["_aws"] == nil {
		t.Errorf("a failing stage: %v", l)
	}
}
