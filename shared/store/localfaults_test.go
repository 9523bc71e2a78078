package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/practice-api/practice-api/shared/store"
)

// TestLocalFaultsAreHonouredOnlyWhenAskedOnLoopback: an engine's answer
// with store.LocalFaultPanic makes the call panic, with its value, only in
// a client asked to honour local faults; such a client is refused on an
// engine that is not on loopback (AWS's own endpoint among them), and a
// client not asked ignores the header.
func TestLocalFaultsAreHonouredOnlyWhenAskedOnLoopback(t *testing.T) {
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(store.LocalFaultPanic, "forced")
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer engine.Close()
	get := func(db *store.DB) (panicked any, err error) {
		defer func() { panicked = recover() }()
		_, err = db.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: store.Key("a", "b")})
		return nil, err
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	for _, c := range []struct {
		endpoint string
		faults   bool
		want     string // "panic", "ok" or "refused"
	}{
		{engine.URL, true, "panic"},
		{strings.Replace(engine.URL, "127.0.0.1", "localhost", 1), true, "panic"},
		{engine.URL, false, "ok"},
		{"", true, "refused"},
		{"https://dynamodb.eu-west-1.amazonaws.com", true, "refused"},
		{"http://10.0.0.1:8000", true, "refused"},
	} {
		t.Run(fmt.Sprintf("%s/%v", c.endpoint, c.faults), func(t *testing.T) {
			db, err := store.New(context.Background(), store.Config{TableName: "t", Endpoint: c.endpoint, LocalFaults: c.faults})
			if c.want == "refused" {
				if !errors.Is(err, store.ErrLocalFaults) {
					t.Fatalf("store.New: %v, want ErrLocalFaults", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, err := get(db)
			switch {
			case c.want == "panic" && (p == nil || !strings.Contains(fmt.Sprint(p), "GetItem") || !strings.Contains(fmt.Sprint(p), "forced")):
				t.Fatalf("panicked with %v (err %v), want a panic naming GetItem and the header's value", p, err)
			case c.want == "ok" && (p != nil || err != nil):
				t.Fatalf("panicked with %v, err %v; want the answer", p, err)
			}
		})
	}
}

// TestCallsCarryAPanicToTheWaiter: a panic in one of a request's store
// calls made at once is raised again where the request waits (so the
// edge's recovery answers it), with the goroutine's stack; the other
// calls finish first.
func TestCallsCarryAPanicToTheWaiter(t *testing.T) {
	var calls store.Calls
	done := make([]bool, 3)
	for i := range done {
		calls.Go(func() {
			if i == 1 {
				panic("boom")
			}
			done[i] = true
		})
	}
	p := func() (p any) {
		defer func() { p = recover() }()
		calls.Wait()
		return nil
	}()
	carried, ok := p.(*store.Panic)
	if !ok || carried.String() != "boom" || !strings.Contains(string(carried.Stack), "localfaults_test.go") {
		t.Fatalf("Wait panicked with %#v, want the goroutine's panic and stack", p)
	}
	if !done[0] || !done[2] {
		t.Fatalf("the other calls did not finish: %v", done)
	}
	var none store.Calls
	none.Go(func() {})
	none.Wait() // no panic
}
