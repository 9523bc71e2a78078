// Package storetest gives tests a real DynamoDB-compatible endpoint (minidyn
// in HTTP mode, one server per test binary) and a fresh table per test.
package storetest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/smithy-go/middleware"
	"github.com/truora/minidyn/server"

	"github.com/practice-api/practice-api/shared/store"
)

var (
	once     sync.Once
	endpoint string
	tables   atomic.Int64
)

// Endpoint returns the URL of the package's embedded DynamoDB server.
func Endpoint() string {
	once.Do(func() {
		srv := httptest.NewServer(server.NewServer())
		endpoint = srv.URL
	})
	return endpoint
}

// NewDB creates a uniquely named table on the embedded server and returns a
// client bound to it. Tables are created before the test's traffic starts
// (minidyn's CreateTable races with concurrent calls), so callers must not
// run store tests in parallel.
func NewDB(t testing.TB, apiOptions ...func(*middleware.Stack) error) *store.DB {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("t%d", tables.Add(1))
	db, err := store.New(ctx, store.Config{TableName: name, Endpoint: Endpoint(), APIOptions: apiOptions})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}
