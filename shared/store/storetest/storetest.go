// Package storetest gives tests a real DynamoDB: AWS DynamoDB Local, one
// engine per test binary (started on first use, gone with the binary), and
// a fresh table per test, deleted when the test ends. Tests may run in
// parallel.
//
// STORETEST_DYNAMODB_ENDPOINT points the tests at an engine that is already
// running instead (another DynamoDB Local, LocalStack, moto_server).
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
	run      = fmt.Sprintf("t%d", time.Now().UnixNano()%1_000_000_000)
)

// Endpoint returns the URL of the test binary's DynamoDB engine, starting it
// on the first call.
// With -short (make unit) and no STORETEST_DYNAMODB_ENDPOINT, the test
// skips: the fast loop starts no engine.
func Endpoint(t testing.TB) string {
	t.Helper()
	if testing.Short() && os.Getenv("STORETEST_DYNAMODB_ENDPOINT") == "" {
		t.Skip("needs DynamoDB Local (Java): skipped with -short; make test runs it")
	}
	once.Do(func() {
		if ep := os.Getenv("STORETEST_DYNAMODB_ENDPOINT"); ep != "" {
			endpoint = ep
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The engine lives as long as the test binary; the kernel ends it
		// with the process, so nothing has to stop it.
		eng, err := ddblocal.Start(ctx, ddblocal.Options{Addr: "127.0.0.1:0"})
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

// Plain returns a client of table with no middleware of a test's (round
// trip counts, faults, meters): for reading what a test's client wrote.
func Plain(t testing.TB, table string) *store.DB {
	t.Helper()
	db, err := store.New(context.Background(), store.Config{TableName: table, Endpoint: Endpoint(t)})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// NewDB creates a uniquely named table on the test engine and returns a
// client bound to it; the table is deleted when the test ends.
func NewDB(t testing.TB, apiOptions ...func(*middleware.Stack) error) *store.DB {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("%s-%d", run, tables.Add(1))
	db, err := store.New(ctx, store.Config{TableName: name, Endpoint: Endpoint(t), APIOptions: apiOptions})
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
