// Package netguard keeps the service's requests to URLs that someone else
// chose (webhook receivers, the company register and whatever it redirects
// to) on the public internet: never loopback, the VPC, the metadata
// service, or any other special-purpose address, however it is written.
package netguard

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrBlocked is wrapped by refused addresses.
var ErrBlocked = errors.New("netguard: address not allowed")

// special is every block of the IANA IPv4 Special-Purpose Address Registry
// (RFC 6890 and its updates), globally reachable or not: no receiver of
// ours lives in any of them. Multicast and the reserved class E follow.
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		// IPv6 inside global unicast (2000::/3) that is not an ordinary
		// host: IETF protocol assignments (Teredo, which embeds an IPv4
		// address, among them), documentation, 6to4 (which embeds one too)
		// and the new documentation block.
		"2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20", "2620:4f:8000::/48",
	} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// Blocked reports whether a is no place for a request the service makes on
// someone's behalf. An IPv4-mapped address (::ffff:127.0.0.1) is judged as
// the IPv4 address it carries; every other IPv6 form that embeds an IPv4
// address (IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4, Teredo) is
// outside ordinary global unicast and refused outright, as is anything
// with a zone.
func Blocked(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return true
	}
	a = a.Unmap()
	if a.Is6() && !globalUnicast6.Contains(a) {
		return true
	}
	for _, p := range special {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Control is a net.Dialer Control function that refuses blocked addresses
// at connect time, after DNS resolution, so a name that resolves (or
// re-resolves) to a private address cannot be reached.
func Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if Blocked(a) {
		return ErrBlocked // naming the address would tell a caller what a name resolves to inside
	}
	return nil
}

// Dialer is a dialer with the connect timeout, guarded unless
// allowPrivate (local development and tests, never on AWS).
func Dialer(timeout time.Duration, allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		d.Control = Control
	}
	return d
}
