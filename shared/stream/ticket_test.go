package stream_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/stream"
)

var ticketShape = regexp.MustCompile(`^svc_st_[0-9A-Za-z]{43}$`)

// docs/api.md §5 ticket rules 2, 3, 5, 6 and §10.3, on both stores.
func TestTickets(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		ctx := context.Background()
		tickets := stream.NewTickets(tab.Table, stream.TicketOptions{Clock: tab.Clock})
		p := apikey.Principal{OrgID: "org_t", Environment: apikey.Sandbox, KeyID: "key_1"}
		minted := tab.Clock.Now()
		tk, err := tickets.Mint(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if !ticketShape.MatchString(tk.Raw) {
			t.Errorf("ticket %q; want svc_st_ + 43 base62 (docs/api.md §10.3)", tk.Raw)
		}
		if want := minted.Add(300 * time.Second); !tk.ExpiresAt.Equal(want) {
			t.Errorf("ExpiresAt = %v; want %v (300 s)", tk.ExpiresAt, want)
		}

		// Stored hashed (docs/api.md §10.3): the item is keyed by the SHA-256 and holds no raw ticket.
		sum := sha256.Sum256([]byte(tk.Raw))
		it, err := tab.Get(ctx, store.Key{PK: "ticket#" + hex.EncodeToString(sum[:]), SK: "ticket"})
		if err != nil {
			t.Fatalf("ticket item by hash: %v", err)
		}
		for name, v := range it {
			if s, ok := v.(string); ok && strings.Contains(s, tk.Raw[len(stream.TicketPrefix):]) {
				t.Errorf("attribute %s holds the raw ticket", name)
			}
		}

		// Rule 5: reusable; rule 2: binds organisation and environment.
		for range 2 {
			got, err := tickets.VerifyTicket(ctx, tk.Raw)
			if err != nil || got != p {
				t.Fatalf("VerifyTicket = %+v, %v; want %+v", got, err, p)
			}
		}
		tab.Clock.Advance(299*time.Second + 999*time.Millisecond)
		if _, err := tickets.VerifyTicket(ctx, tk.Raw); err != nil {
			t.Errorf("VerifyTicket just before 300 s: %v; want valid", err)
		}
		tab.Clock.Advance(time.Millisecond)
		if _, err := tickets.VerifyTicket(ctx, tk.Raw); !errors.Is(err, apikey.ErrInvalidTicket) {
			t.Errorf("VerifyTicket at 300 s: %v; want ErrInvalidTicket (rule 6)", err)
		}
	})
}

func TestVerifyTicketRefuses(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	tickets := stream.NewTickets(tab.Table, stream.TicketOptions{Clock: tab.Clock})
	for name, raw := range map[string]string{
		"unknown":       "svc_st_" + strings.Repeat("a", 43),
		"API key shape": "svc_" + strings.Repeat("a", 43),
		"too short":     "svc_st_abc",
		"not base62":    "svc_st_" + strings.Repeat("-", 43),
		"empty":         "",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := tickets.VerifyTicket(context.Background(), raw); !errors.Is(err, apikey.ErrInvalidTicket) {
				t.Errorf("VerifyTicket(%q) = %v; want ErrInvalidTicket", raw, err)
			}
		})
	}
}

func TestMintRefusesNoPrincipal(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	tickets := stream.NewTickets(tab.Table, stream.TicketOptions{Clock: tab.Clock})
	if _, err := tickets.Mint(context.Background(), apikey.Principal{}); !errors.Is(err, stream.ErrNoPrincipal) {
		t.Errorf("Mint(no principal) = %v; want ErrNoPrincipal", err)
	}
}
