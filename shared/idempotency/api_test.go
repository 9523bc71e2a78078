package idempotency_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apitest"
)

// TestIdempotencyKeyStates: the same body under a key replays (200,
// Idempotent-Replayed, the first answer), another body is a 409; a
// refused request leaves its key unused; a missing or over-long key is a
// 422 on Idempotency-Key; keys are per organisation and honoured 24
// hours.
func TestIdempotencyKeyStates(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	body := `{"name":"Anne Holm","email":"anne@example.dk"}`
	first := e.Post("/api/v1/people", key, "k1", body)
	apitest.MustStatus(t, first, 201)

	// Same body, other key order and spacing: a replay.
	replay := e.Post("/api/v1/people", key, "k1", "{ \"email\": \"anne@example.dk\",\n \"name\": \"Anne Holm\" }")
	apitest.MustStatus(t, replay, 200)
	if replay.Header.Get("Idempotent-Replayed") != "true" || replay.Header.Get("Location") != first.Header.Get("Location") ||
		string(mustJSON(t, replay.Body)) != string(mustJSON(t, first.Body)) {
		t.Fatalf("replay %v %s", replay.Header, replay.Raw)
	}
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "k1", `{"name":"Anne Holm","email":"other@example.dk"}`), 409)
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "k1", `not json`), 409)
	if n := len(e.Items(org)["person"]); n != 1 {
		t.Fatalf("%d people", n)
	}

	// A failed request leaves its key unused: fix the payload, same key.
	bad := e.Post("/api/v1/people", key, "k2", `{"name":"Bo","email":"not an address"}`)
	if bad.Status != 422 || bad.Body["field"] != "email" {
		t.Fatalf("bad e-mail: %d %s", bad.Status, bad.Raw)
	}
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "k2", `{"name":"Bo","email":"bo@example.dk"}`), 201)
	// A conflict (duplicate e-mail) also leaves the key unused.
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "k3", `{"name":"Bo","email":"BO@example.dk"}`), 422)
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "k3", `{"name":"Bo","email":"bo2@example.dk"}`), 201)

	// Missing, empty and long keys.
	for _, k := range []string{"", strings.Repeat("x", 256)} {
		t.Run(fmt.Sprintf("a key of %d characters", len(k)), func(t *testing.T) {
			r := e.For(t).Post("/api/v1/people", key, k, `{"name":"C","email":"c@example.dk"}`)
			if r.Status != 422 || r.Body["field"] != "Idempotency-Key" {
				t.Fatalf("key %d chars: %d %s", len(k), r.Status, r.Raw)
			}
		})
	}
	apitest.MustStatus(t, e.Post("/api/v1/people", key, strings.Repeat("é", 255), `{"name":"C","email":"c@example.dk"}`), 201)

	// Keys are scoped per organisation: B may use k1 for its own record.
	other := e.Key(e.Org("B"))
	apitest.MustStatus(t, e.Post("/api/v1/people", other, "k1", body), 201)

	// Honoured 24 hours, then free again.
	e.SetNow(time.Now().Add(24*time.Hour + time.Minute))
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "k1", `{"name":"Dan","email":"dan@example.dk"}`), 201)
}

// TestConcurrentIdenticalCreates: fifty identical creates under one key
// at once make one record: one 201, the rest replays or 409s.
func TestConcurrentIdenticalCreates(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 1000})
	org := e.Org("A")
	key := e.Key(org)
	body := `{"name":"Nordlys ApS","cvr":"12345678"}`
	statuses := make(chan int, 50)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- e.Post("/api/v1/companies", key, "same-key", body).Status
		}()
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	if counts[201] != 1 || counts[200]+counts[409] != 49 {
		t.Fatalf("statuses %v: want one 201, the rest 200 or 409", counts)
	}
	if n := len(e.Items(org)["company"]); n != 1 {
		t.Fatalf("%d companies", n)
	}
}

// TestCrashBeforeTheTransactionLeavesTheKeyFree: a create whose
// transaction never reached the store is a 503 with Retry-After that
// leaves no record and no key: the retry creates at once.
func TestCrashBeforeTheTransactionLeavesTheKeyFree(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	e.SetNow(time.Now())
	org := e.Org("A")
	key := e.Key(org)
	body := `{"name":"A","email":"a@example.dk"}`
	// Calls of a create: 1 and 2 authenticate (the client's read and its
	// count), 3 the transaction. Failing 3 is a process that died before it
	// committed.
	e.Faults.Arm(apitest.FailBefore, 3)
	r := e.Post("/api/v1/people", key, "crash", body)
	e.Faults.Disarm()
	if r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("store failure: %d %s", r.Status, r.Raw)
	}
	if len(e.Items(org)["person"]) != 0 || len(e.Items(org)["idempotency"]) != 0 {
		t.Fatal("the crashed create left data")
	}
	// Nothing holds the key: the retry creates at once, and replays after.
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "crash", body), 201)
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "crash", body), 200)
	if n := len(e.Items(org)["person"]); n != 1 {
		t.Fatalf("%d people", n)
	}
}

// TestInProgressConflictSaysWhenToRetry: a create that loses its key's
// binding to one still in flight is a 409 with Retry-After: 1; another
// body under a committed key is a 409 without it.
func TestInProgressConflictSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	e.SetNow(time.Now())
	key := e.Key(e.Org("A"))
	body := `{"name":"A","email":"a@example.dk"}`
	// The transaction (the person, its person.created, the key's binding)
	// loses, on the binding (its last item), to a concurrent one that has
	// not committed yet: DynamoDB's answer when two requests with one key
	// are in flight together.
	conflict := &ddbtypes.TransactionCanceledException{Message: aws.String("Transaction cancelled"),
		CancellationReasons: []ddbtypes.CancellationReason{{Code: aws.String("None")}, {Code: aws.String("None")}, {Code: aws.String("TransactionConflict")}}}
	e.Faults.ArmError(conflict, 3) // after the client's read and count
	busy := e.Post("/api/v1/people", key, "k", body)
	e.Faults.Disarm()
	if busy.Status != 409 || busy.Header.Get("Retry-After") != "1" || !strings.Contains(busy.Body["message"].(string), "still being processed") {
		t.Fatalf("in progress: %d %v %s", busy.Status, busy.Header, busy.Raw)
	}
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "k", body), 201)
	other := e.Post("/api/v1/people", key, "k", `{"name":"B","email":"b@example.dk"}`)
	if other.Status != 409 || other.Header.Get("Retry-After") != "" {
		t.Fatalf("different body: %d %v (not retryable as sent)", other.Status, other.Header)
	}
}

// TestIdempotencyKeysAreStoredUnderTheStagesSecret: the stored key is an
// HMAC under a secret of the table, not a bare SHA-256 of the key that
// anyone holding a table export could test guesses against.
func TestIdempotencyKeysAreStoredUnderTheStagesSecret(t *testing.T) {
	t.Parallel()
	var sks []string
	for range 2 { // two stages: two tables, two secrets
		e := apitest.New(t, apitest.Options{})
		org := e.Org("A")
		apitest.MustStatus(t, e.Post("/api/v1/people", e.Key(org), "crm-42", `{"name":"Anne","email":"a@example.dk"}`), 201)
		recs := e.Items(org)["idempotency"]
		if len(recs) != 1 {
			t.Fatalf("%d idempotency records", len(recs))
		}
		sks = append(sks, apitest.AttrS(recs[0], "SK"))
	}
	bare := sha256.Sum256([]byte("crm-42"))
	for _, sk := range sks {
		if strings.Contains(sk, hex.EncodeToString(bare[:])) || strings.Contains(sk, "crm-42") {
			t.Fatalf("the key is stored as %s", sk)
		}
	}
	if sks[0] == sks[1] {
		t.Fatalf("two stages store the same key alike: %s", sks[0])
	}
}
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
