package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/smoke"
)

// TestSmokePassesOnTheAPIAndWritesNothing runs the smoke checks against the
// real API (HTTP on loopback, a fresh table), with a key holding
// matters:read alone: every check passes, and the table holds the same
// items before and after (by count: a request's own rate-limit count updates the key's item, and adds none).
func TestSmokePassesOnTheAPIAndWritesNothing(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org, "matters:read")
	before := count(t, e)
	var out bytes.Buffer
	failed, err := smoke.Run(context.Background(), e.Server.URL+"/api/v1", key, &out)
	if err != nil || failed != 0 {
		t.Fatalf("%d failed (%v):\n%s", failed, err, out.String())
	}
	if n := strings.Count(out.String(), "\nok") + 1; n != 7 {
		t.Fatalf("%d checks passed, want 7:\n%s", n, out.String())
	}
	if after := count(t, e); after != before {
		t.Fatalf("the table held %d items before and %d after", before, after)
	}
}

// TestSmokeFailsWhatIsWrong: a stage that answers without its headers, or
// with a key that lacks the scope, fails the checks that see it; a plain
// http URL that is not loopback is refused before anything is sent.
func TestSmokeFailsWhatIsWrong(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	key := e.Key(e.Org("A"), "clients:read")
	var out bytes.Buffer
	if failed, err := smoke.Run(context.Background(), e.Server.URL+"/api/v1", key, &out); err != nil || failed != 3 ||
		!strings.Contains(out.String(), "FAIL  the key lists matters") {
		t.Fatalf("a key without matters:read: %d failed (%v)\n%s", failed, err, out.String())
	}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[],"meta":{},"links":{}}`))
	}))
	defer bare.Close()
	out.Reset()
	if failed, err := smoke.Run(context.Background(), bare.URL, "k", &out); err != nil || failed != 7 {
		t.Fatalf("a server that is not the API: %d failed (%v)\n%s", failed, err, out.String())
	}
	if _, err := smoke.Run(context.Background(), "http://api.example.dk/api/v1", "k", &out); err == nil || !strings.Contains(err.Error(), "must be https") {
		t.Fatalf("plain http to a remote host: %v", err)
	}
}

func count(t *testing.T, e *apitest.Env) int {
	t.Helper()
	n := 0
	p := dynamodb.NewScanPaginator(e.DB.Client, &dynamodb.ScanInput{TableName: aws.String(e.DB.Table), Select: ddbtypes.SelectCount, ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += int(page.Count)
	}
	return n
}
