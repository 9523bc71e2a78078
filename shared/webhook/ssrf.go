package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/practice-api/practice-api/shared/netguard"
)

// checkRest is what every URL must be, whatever its scheme.
func checkRest(raw string, u *url.URL) error {
	if u.Hostname() == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("url must be an absolute https URL with a host, without credentials or fragment")
	}
	if len(raw) > 2048 {
		return fmt.Errorf("url is longer than 2048 characters")
	}
	return nil
}

// isLoopbackHost: localhost, or a literal loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// errNotPublic is the one answer for a URL whose host is not on the public
// internet, and for one whose name does not resolve: it names neither the
// address a literal denotes nor what a name resolves to, and does not tell
// a name our resolver knows from one it does not (otherwise an
// internal-only name, refused as "not allowed", could be told from a
// name that exists nowhere: an oracle for the names of our network).
const errNotPublic = "url is not allowed: webhooks are sent only to hosts whose every address is on the public internet (never loopback, private, " +
	"link-local or other special-purpose addresses), and a host name that does not resolve here is refused alike"

// CheckURL validates an endpoint URL at registration: https, a host, and
// (unless private targets are allowed) no address that is or resolves to
// one netguard blocks. Deliveries check the address dialled again. Where
// private targets are allowed (the devserver; never on AWS), a receiver
// on loopback may also be plain http://, so a local receiver needs no
// certificate.
func CheckURL(ctx context.Context, raw string, allowPrivate bool, resolver *net.Resolver) error {
	if !strings.HasPrefix(raw, "https://") {
		if allowPrivate && strings.HasPrefix(raw, "http://") {
			if u, err := url.Parse(raw); err == nil && isLoopbackHost(u.Hostname()) {
				return checkRest(raw, u)
			}
			return fmt.Errorf("url must begin with https:// (this server also takes http:// for a receiver on loopback: 127.0.0.1, [::1] or localhost)")
		}
		return fmt.Errorf("url must begin with https://")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url must be an absolute https URL with a host, without credentials or fragment")
	}
	if err := checkRest(raw, u); err != nil || allowPrivate {
		return err
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if netguard.Blocked(a) {
			return errors.New(errNotPublic)
		}
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return errors.New(errNotPublic)
	}
	for _, a := range addrs {
		if netguard.Blocked(a) {
			return errors.New(errNotPublic)
		}
	}
	return nil
}
