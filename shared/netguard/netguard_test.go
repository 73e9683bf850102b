package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/netguard"
)

// docs/security.md §6: only public addresses are reached unless private ones are allowed.
func TestPublic(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.9": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "224.0.0.1": false, "::1": false, "fe80::1": false, "fd00::1": false,
		"::ffff:10.0.0.1": false, "8.8.8.8": true, "2001:4860:4860::8888": true, "151.101.1.1": true,
	} {
		if got := netguard.Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v; want %v", addr, got, want)
		}
	}
}

// The guard runs on the resolved address: localhost is refused like 127.0.0.1, and allowed
// with allowPrivate.
func TestDialerRefusesLoopback(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := netguard.Dialer(false).DialContext(context.Background(), "tcp", net.JoinHostPort(host, port)); !errors.Is(err, netguard.ErrAddress) {
			t.Errorf("dial %s: %v; want ErrAddress", host, err)
		}
	}
	c, err := netguard.Dialer(true).DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("with private addresses allowed: %v", err)
	}
	c.Close()
}

// docs/interop.md §10, docs/webhooks.md §4: URLs with credentials, relative ones, other schemes
// and overlong ones are refused without being repeated; the audit log names a URL without its
// user, query and fragment.
func TestCheckURLAndAddress(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://feeds.example/a.json?key=1": true, "http://feeds.example/a": true, "ftp://feeds.example/a": false,
		"/a.json": false, "https://user:hunter2@feeds.example/a": false, "https://feeds.example/" + strings.Repeat("a", 100): false,
	} {
		err := netguard.CheckURL(raw, 64, "https", "http")
		if (err == nil) != ok || err != nil && (!errors.Is(err, netguard.ErrURL) || strings.Contains(err.Error(), "hunter2")) {
			t.Errorf("CheckURL(%q) = %v; want ok %v, a refusal that does not repeat the URL", raw, err, ok)
		}
	}
	if got := netguard.Address("https://u:p@hooks.example/in/a?token=s3cret#x"); got != "https://hooks.example/in/a" {
		t.Errorf("Address = %q; want the URL without user, query and fragment", got)
	}
}
