// Package netguard keeps the service's outgoing requests to addresses chosen by organisations
// (feed documents, webhook endpoints) safe: URLs without credentials (CheckURL), named without
// their tokens (Address), and a dialer on the public internet only, refusing loopback,
// private, link-local, shared, unspecified and multicast addresses, checked on the address each
// connection is made to, after name resolution, so that neither a name nor a redirect can lead
// into the deployment's own network or to the cloud's metadata service (docs/security.md §6).
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ErrAddress is a connection to an address that is not a public one.
var ErrAddress = errors.New("the address is not a public one")

// Dialer returns a dialer that connects to public addresses only, or to any address when
// allowPrivate (a deployment whose feeds or receivers live inside its own network, and tests).
func Dialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !Public(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrAddress, address)
			}
			return nil
		}
	}
	return d
}

// Public tells whether a is an address on the public internet.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && a.IsGlobalUnicast() && !a.IsPrivate() && !a.IsLoopback() && !a.IsLinkLocalUnicast() &&
		!sharedAddressSpace.Contains(a)
}

// sharedAddressSpace is 100.64.0.0/10 (RFC 6598), carrier-grade NAT: not public either.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// ErrURL is a URL the service does not request.
var ErrURL = errors.New("the URL cannot be requested")

// CheckURL refuses a URL an organisation gave the service to request: longer than maxLen
// bytes, not absolute with one of schemes, or with a user or password in it. The refusal never
// repeats the URL, which may hold a password.
func CheckURL(raw string, maxLen int, schemes ...string) error {
	if len(raw) > maxLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrURL, maxLen)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil, !slices.Contains(schemes, u.Scheme), u.Host == "":
		return fmt.Errorf("%w: not an absolute %s URL", ErrURL, strings.Join(schemes, " or "))
	case u.User != nil:
		return fmt.Errorf("%w: it holds credentials", ErrURL)
	}
	return nil
}

// Address is the URL raw without its user, query and fragment, where passwords and access
// tokens are put: what the audit log names.
func Address(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}
