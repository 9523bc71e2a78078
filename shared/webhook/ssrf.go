package webhook

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// blocked reports whether an address is no place for a webhook: loopback,
// private, link-local (cloud metadata at 169.254.169.254 included),
// multicast, unspecified, or otherwise not globally routable.
func blocked(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsGlobalUnicast() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(a) || // carrier-grade NAT
		netip.MustParsePrefix("64:ff9b::/96").Contains(a) // NAT64 can reach IPv4 private space
}

// ErrBlockedTarget is wrapped by refused targets.
var ErrBlockedTarget = fmt.Errorf("webhook: target address not allowed")

// guardDial refuses connections to blocked addresses at connect time, after
// DNS resolution, so a name that resolves (or re-resolves) to a private
// address cannot be reached.
func guardDial(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if blocked(a) {
		return fmt.Errorf("%w: %s", ErrBlockedTarget, a)
	}
	return nil
}

// CheckURL validates an endpoint URL at registration: https, a host, and
// (unless private targets are allowed) no address that resolves to a
// blocked range.
func CheckURL(ctx context.Context, raw string, allowPrivate bool, resolver *net.Resolver) error {
	if !strings.HasPrefix(raw, "https://") {
		return fmt.Errorf("url must begin with https://")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("url must be an absolute https URL with a host, without credentials or fragment")
	}
	if len(raw) > 2048 {
		return fmt.Errorf("url is longer than 2048 characters")
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if blocked(a) {
			return fmt.Errorf("url points at %s, a private, loopback or link-local address", a)
		}
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return fmt.Errorf("url's host %s does not resolve", host)
	}
	for _, a := range addrs {
		if blocked(a) {
			return fmt.Errorf("url's host %s resolves to %s, a private, loopback or link-local address", host, a.Unmap())
		}
	}
	return nil
}
