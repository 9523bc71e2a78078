package party_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/secretkey"
)

// secretsManager answers GetSecretValue over Secrets Manager's own wire
// protocol (JSON 1.1, X-Amz-Target), as the real SDK client speaks it, for
// one secret whose value the test sets; down makes it answer 500.
type secretsManager struct {
	value atomic.Value
	calls atomic.Int64
	down  atomic.Bool
}

func (s *secretsManager) serve(t *testing.T, name string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		var in struct{ SecretId string }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &in)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		switch {
		case s.down.Load():
			w.WriteHeader(500)
			_, _ = w.Write([]byte(`{"__type":"InternalServiceError","message":"down"}`))
		case r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || in.SecretId != name:
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"__type":"ResourceNotFoundException","message":"no such secret"}`))
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"Name": name, "SecretString": s.value.Load().(string)})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRegisterKeyComesFromSecretsManager: with companyRegisterKeySecret
// set, the enrichment worker reads the register's key from Secrets Manager
// (the real SDK client), sends it as `key` on each lookup, keeps it an
// hour and then reads it again (a rotation reaches the workers), retries a
// failed read, and never shows it: not in the company's enrichment error,
// not in a log line.
func TestRegisterKeyComesFromSecretsManager(t *testing.T) {
	t.Parallel()
	var sm secretsManager
	sm.value.Store("k-1")
	smSrv := sm.serve(t, "practice-api/test/register-key")
	var wrongKey atomic.Int64
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("key") != sm.value.Load().(string) {
			wrongKey.Add(1)
			http.Error(w, "bad key", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/companies/12345678" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"name":"Nordlys ApS"}`))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(reg.Close)
	e, org, d, q, en := enrichEnv(t, reg.URL)
	client := secretsmanager.New(secretsmanager.Options{Region: "eu-north-1", BaseEndpoint: aws.String(smSrv.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	keyClock := clock.NewManual(now)
	src := &secretkey.Key{Client: client, Name: "practice-api/test/register-key", Clock: keyClock}
	en.RegisterKey = src.Get
	var logs bytes.Buffer
	en.Log = slog.New(slog.NewTextHandler(&logs, nil))
	key := e.Key(org)
	status := func(id string) map[string]any {
		return e.Get("/api/v1/companies/"+id, key).Body["data"].(map[string]any)["enrichment"].(map[string]any)
	}
	create := func(cvr, idem string) string {
		r := e.Post("/api/v1/companies", key, idem, `{"name":"Nordlys ApS","cvr":"`+cvr+`"}`)
		apitest.MustStatus(t, r, 201)
		return r.Body["data"].(map[string]any)["id"].(string)
	}
	first := create("12345678", "c1")
	drain(t, e, d, q, en)
	if st := status(first); st["status"] != "done" || sm.calls.Load() != 1 || wrongKey.Load() != 0 {
		t.Fatalf("with the secret's key: %v (%d reads, %d refused)", st, sm.calls.Load(), wrongKey.Load())
	}
	// Rotated: the old key is kept until the hour is out, then read again.
	sm.value.Store("k-2")
	keyClock.Advance(61 * time.Minute)
	second := create("87654321", "c2") // unknown to the register: a 404 with the right key
	drain(t, e, d, q, en)
	if st := status(second); st["status"] != "failed" || !strings.Contains(st["error"].(string), "no company with CVR") || sm.calls.Load() != 2 || wrongKey.Load() != 0 {
		t.Fatalf("after the rotation: %v (%d reads, %d refused)", st, sm.calls.Load(), wrongKey.Load())
	}
	// Secrets Manager down past the hour: the lookup waits for a retry, with
	// no key in what it says; the next read succeeds.
	sm.down.Store(true)
	keyClock.Advance(69 * time.Minute)
	if _, err := src.Get(context.Background()); err == nil {
		t.Fatal("a failed read returned a key")
	}
	sm.down.Store(false)
	if k, err := src.Get(context.Background()); err != nil || k != "k-2" {
		t.Fatalf("after the outage: %q %v", k, err)
	}
	for _, leak := range []string{"k-1", "k-2"} {
		if strings.Contains(logs.String(), leak) || strings.Contains(fmt.Sprint(status(first), status(second)), leak) {
			t.Fatalf("the key %s shows", leak)
		}
	}
}
