package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRefusalsAreNoOracle (#38, item 9): a registration's refusal reads
// the same for a host that does not resolve and for one that resolves
// inside (a probe told internal names from absent ones by it), and names
// no address; a delivery's error names no address either, whether the
// connect guard refused a name that resolved to loopback, a name did
// not resolve (the resolver's address stays out), or a connection was
// refused. Several at once.
func TestRefusalsAreNoOracle(t *testing.T) {
	t.Parallel()
	// A resolver that knows one internal name and no other.
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "udp", Addr: net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:53")), Err: errors.New("unreachable")}
	}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]string{}
	for _, u := range []string{"https://localhost/hook", "https://no-such-host.invalid/hook", "https://10.1.2.3/hook", "https://[fd00::1]/hook"} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := CheckURL(ctx, u, false, resolver)
			if err == nil {
				t.Errorf("%s accepted", u)
				return
			}
			mu.Lock()
			answers[u] = err.Error()
			mu.Unlock()
		})
	}
	wg.Wait()
	want := answers["https://localhost/hook"]
	for u, a := range answers {
		if a != want {
			t.Errorf("%s: %q, unlike localhost's %q", u, a, want)
		}
		for _, addr := range []string{"127.0.0.1", "::1", "10.", "fd00", "no-such-host"} {
			if strings.Contains(a, addr) {
				t.Errorf("%s: the refusal names %s: %q", u, addr, a)
			}
		}
	}

	// Deliveries: what the delivery log would show.
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	srv.Close() // nothing listens there any more: connection refused
	guarded, err := NewHTTPClient("", false)
	if err != nil {
		t.Fatal(err)
	}
	open, err := NewHTTPClient("", true)
	if err != nil {
		t.Fatal(err)
	}
	d := &Deliverer{Store: &Store{}}
	for name, get := range map[string]func() error{
		"a name resolving to loopback": func() error {
			_, err := guarded.Get("https://localhost:" + itoa(port) + "/hook")
			return err
		},
		"connection refused": func() error {
			_, err := open.Get("http://127.0.0.1:" + itoa(port) + "/hook")
			return err
		},
		"a name that did not resolve": func() error {
			return &net.DNSError{Err: "no such host", Name: "hooks.example.dk", Server: "10.0.0.2:53", IsNotFound: true}
		},
	} {
		wg.Go(func() {
			err := get()
			if err == nil {
				t.Errorf("%s: no error", name)
				return
			}
			shown := d.explain(err).Error()
			for _, addr := range []string{"127.0.0.1", "::1", "10.0.0.2", itoa(port)} {
				if strings.Contains(shown, addr) {
					t.Errorf("%s: the delivery log would show %s: %q (from %v)", name, addr, shown, err)
				}
			}
			t.Logf("%s: %q", name, shown)
		})
	}
	wg.Wait()
}

func itoa(n int) string { return strconv.Itoa(n) }
