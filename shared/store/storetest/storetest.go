// Package storetest gives tests a real DynamoDB: AWS DynamoDB Local, one
// engine per test binary (started on first use, gone with the binary), and
// a fresh table per test, deleted when the test ends. Tests may run in
// parallel.
//
// STORETEST_DYNAMODB_ENDPOINT points the tests at an engine that is already
// running instead (another DynamoDB Local, LocalStack, moto_server): make
// test sets it to the one engine it starts for the whole run
// (scripts/cmd/withengine), which every test binary then shares, each
// table named apart by its binary's process id.
package storetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/ddblocal"
)

var (
	once     sync.Once
	endpoint string
	startErr error
	tables   atomic.Int64
	// run names this binary's tables apart from every other binary's on a
	// shared engine: its process id, and the time for a reused id.
	run = fmt.Sprintf("t%d-%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
)

// Endpoint returns the URL of the test binary's DynamoDB engine, starting it
// on the first call.
// With -short (make unit) and no STORETEST_DYNAMODB_ENDPOINT, the test
// skips: the fast loop starts no engine.
func Endpoint(t testing.TB) string {
	t.Helper()
	if testing.Short() && Shared() == "" {
		t.Skip("needs DynamoDB Local (Java): skipped with -short; make test runs it")
	}
	once.Do(func() {
		if ep := Shared(); ep != "" {
			endpoint = ep
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The engine lives as long as the test binary; the kernel ends it
		// with the process, so nothing has to stop it.
		eng, err := ddblocal.Start(ctx, ddblocal.Options{Addr: "127.0.0.1:0", JavaOpts: ddblocal.ShortRun})
		if err != nil {
			startErr = err
			return
		}
		endpoint = eng.Endpoint
	})
	if startErr != nil {
		t.Fatalf("storetest: %v", startErr)
	}
	return endpoint
}

// EndpointVar names the environment variable of a shared engine's URL.
const EndpointVar = "STORETEST_DYNAMODB_ENDPOINT"

// Shared is the URL of the engine the run shares (STORETEST_DYNAMODB_ENDPOINT),
// or "" when each test binary starts its own.
func Shared() string { return os.Getenv(EndpointVar) }

// TableName is a table name no other test, binary or process of the run
// uses on a shared engine (prefix, this binary's run and a counter).
func TableName(prefix string) string {
	return fmt.Sprintf("%s%s-%d", prefix, run, tables.Add(1))
}

// Plain returns a client of table with no middleware of a test's (round
// trip counts, faults, meters): for reading what a test's client wrote.
func Plain(t testing.TB, table string) *store.DB {
	t.Helper()
	db, err := store.New(context.Background(), store.Config{TableName: table, Endpoint: Endpoint(t), Retryer: LocalRetryer})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// NewDB creates a uniquely named table on the test engine and returns a
// client bound to it; the table is deleted when the test ends.
// LocalRetryer is the SDK's standard retryer without its client-side
// retry quota. DynamoDB Local answers a lock it waited on too long with a
// 500 ("This request will succeed in actual DynamoDB API"); under a
// loaded make test one client's quota of 500 tokens then ran dry in a
// burst of them (each timeout retry costs 10), and the next call failed
// without being tried: an engine artefact AWS's DynamoDB does not have.
// The attempts and backoff stay the SDK's.
func LocalRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) { o.RateLimiter = ratelimit.None })
}

func NewDB(t testing.TB, apiOptions ...func(*middleware.Stack) error) *store.DB {
	t.Helper()
	ctx := context.Background()
	name := TableName("")
	db, err := store.New(ctx, store.Config{TableName: name, Endpoint: Endpoint(t), APIOptions: apiOptions, Retryer: LocalRetryer})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A fresh client: the test's own may carry fault injection.
		clean, err := store.New(context.Background(), store.Config{TableName: name, Endpoint: Endpoint(t)})
		if err == nil {
			_, _ = clean.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	return db
}
