package ddblocal

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/procnet"
)

// TestEngineListensOnLoopbackOnly: the engine (through LoopbackLauncher)
// holds one listening socket, on its loopback endpoint, and none on any
// other address; it answers there.
func TestEngineListensOnLoopbackOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Java")
	}
	ctx := context.Background()
	e, err := Start(ctx, Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	u, _ := url.Parse(e.Endpoint)
	port, _ := strconv.Atoi(u.Port())
	got, err := procnet.Listeners(e.Pid())
	if errors.Is(err, procnet.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, l := range got {
		if !l.Loopback() {
			t.Errorf("the engine listens beyond loopback: %v", l)
		}
		seen = seen || int(l.Addr.Port()) == port
	}
	if !seen {
		t.Errorf("no listener on the endpoint's port %d: %v", port, got)
	}
}

// TestAddressMustBeLoopback: an address another machine could reach is
// refused before anything starts, with the reason.
func TestAddressMustBeLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8000", "[::]:8000", "10.0.0.5:8000", "192.168.1.2:0", "example.com:8000"} {
		if _, _, err := splitAddr(addr); err == nil || !strings.Contains(err.Error(), "loopback only") {
			t.Errorf("splitAddr(%q) = %v, want the loopback refusal", addr, err)
		}
	}
	for addr, host := range map[string]string{"": "127.0.0.1", "127.0.0.1:0": "127.0.0.1", "localhost:8000": "127.0.0.1",
		"[::1]:8000": "::1", "127.0.0.2:8000": "127.0.0.2", ":8000": "127.0.0.1"} {
		if got, _, err := splitAddr(addr); err != nil || got != host {
			t.Errorf("splitAddr(%q) = %q, %v; want %q", addr, got, err, host)
		}
	}
}
