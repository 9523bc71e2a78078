package procnet

import (
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
)

// TestListenersSeesOwnSockets: a listener on loopback and one on every
// interface of this process are both found, and told apart.
func TestListenersSeesOwnSockets(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip(ErrUnsupported)
	}
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	all, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	got, err := Listeners(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	found := map[uint16]Listener{}
	for _, l := range got {
		found[l.Addr.Port()] = l
	}
	if l, ok := found[uint16(lo.Addr().(*net.TCPAddr).Port)]; !ok || !l.Loopback() {
		t.Errorf("loopback listener: %v in %v", l, got)
	}
	if l, ok := found[uint16(all.Addr().(*net.TCPAddr).Port)]; !ok || l.Loopback() {
		t.Errorf("wildcard listener: %v in %v", l, got)
	}
}

func TestParseAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0050":                         "0.0.0.0:80",
		"00000000000000000000000001000000:1F40": "[::1]:8000",
		"0000000000000000FFFF00000100007F:1F41": "[::ffff:127.0.0.1]:8001",
		"00000000000000000000000000000000:0016": "[::]:22",
	} {
		got, err := parseAddr(in)
		if err != nil || got != netip.MustParseAddrPort(want) {
			t.Errorf("parseAddr(%s) = %v, %v; want %s", in, got, err, want)
		}
	}
	if l := (Listener{Addr: netip.MustParseAddrPort("[::ffff:127.0.0.1]:1")}); !l.Loopback() {
		t.Error("a v4-mapped loopback address is loopback")
	}
}
