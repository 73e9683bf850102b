package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
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
