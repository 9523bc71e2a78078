package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A body over 1 MiB is refused with 413, unread, and one under it reaches
// the signature check (#38, item 6: the receivers cap the body).
func TestTheBodyIsCapped(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("whsec_test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&receiver{secretFile: secret, seen: map[string]time.Time{}})
	t.Cleanup(srv.Close)
	for size, want := range map[int]int{1<<20 + 1: http.StatusRequestEntityTooLarge, 64 << 20: http.StatusRequestEntityTooLarge, 1 << 10: http.StatusBadRequest} {
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(bytes.Repeat([]byte("x"), size)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("a body of %d bytes: %d, want %d", size, resp.StatusCode, want)
		}
	}
}
