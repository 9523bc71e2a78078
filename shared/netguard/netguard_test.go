package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/netguard"
)

func TestBlocked(t *testing.T) {
	t.Parallel()
	for _, a := range []string{
		"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "0.1.2.3",
		"198.18.0.1", "198.19.255.255", "240.0.0.1", "255.255.255.255", "224.0.0.1", "192.0.0.8", "192.0.0.170",
		"192.0.2.1", "198.51.100.7", "203.0.113.9", "192.88.99.1",
		"::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "fec0::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "::a00:1", "64:ff9b::7f00:1", "64:ff9b::808:808", "64:ff9b:1::1",
		"2002:7f00:1::1", "2002:808:808::1", "2001:db8::1", "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "3fff::1",
		"100::1", "5f00::1",
	} {
		if !netguard.Blocked(netip.MustParseAddr(a)) {
			t.Errorf("%s is allowed", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "198.20.0.1", "2606:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8"} {
		if netguard.Blocked(netip.MustParseAddr(a)) {
			t.Errorf("%s is blocked", a)
		}
	}
	if !netguard.Blocked(netip.MustParseAddr("fe80::1%eth0")) {
		t.Error("a zoned address is allowed")
	}
}

// TestDialerRefusesLoopbackAtConnect: the guarded dialer never opens a
// connection to a loopback server, whatever name or form reached it.
func TestDialerRefusesLoopbackAtConnect(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the guarded client reached the server") }))
	defer srv.Close()
	c := &http.Client{Transport: &http.Transport{DialContext: netguard.Dialer(time.Second, false).DialContext}}
	_, err := c.Get(srv.URL)
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", err)
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	if _, err := netguard.Dialer(time.Second, false).DialContext(context.Background(), "tcp", "[::ffff:127.0.0.1]:"+port); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("mapped loopback: %v", err)
	}
	open := &http.Client{Transport: &http.Transport{DialContext: netguard.Dialer(time.Second, true).DialContext}}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	if resp, err := open.Get(srv.URL); err != nil {
		t.Fatalf("allowPrivate: %v", err)
	} else {
		resp.Body.Close()
	}
}
