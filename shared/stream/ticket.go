package stream

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
)

// TicketLifetime is how long a stream ticket opens the stream (docs/api.md §5 ticket rules, §8).
const TicketLifetime = 300 * time.Second

// Ticket format (docs/api.md §10.3): the prefix and 43 base62 characters from crypto/rand, about
// 256 bits, like an API key.
const (
	TicketPrefix    = apikey.TicketPrefix
	TicketSecretLen = 43
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Storage layout: one item per ticket, in a partition of its own keyed by the SHA-256 of the raw
// ticket (docs/api.md §10.3: tickets are stored only as hashes), so a ticket is verified with one
// strongly consistent Get and tickets spread over the table:
//
//	pk "ticket#<hex sha256 of the raw ticket>"  sk "ticket"
//	    org_id, environment, key_id (the API key that minted it), expires_at (Unix ns), ttl
//
// The item's TTL is its expiry rounded up to the second, so the table forgets it; the exact
// expiry is checked against expires_at.
const (
	ticketPrefix = "ticket#"
	ticketSK     = "ticket"

	attrOrg     = "org_id"
	attrEnv     = "environment"
	attrKeyID   = "key_id"
	attrExpires = "expires_at"
)

// Ticket is a freshly minted stream ticket.
type Ticket struct {
	// Raw is the ticket itself, returned once; only its hash is stored.
	Raw       string
	ExpiresAt time.Time
	Principal apikey.Principal
}

// TicketOptions configure Tickets.
type TicketOptions struct {
	// Clock decides expiry; clock.System when nil. Give the table's clock.
	Clock clock.Clock
	// Keys tells whether the key that minted a ticket is still valid: a ticket of a revoked
	// key opens nothing (docs/api.md §11.4). Without it, only expiry is checked.
	Keys KeyReader
}

// KeyReader reads an API key's record; *apikey.Keys is one.
type KeyReader interface {
	Get(ctx context.Context, org, keyID string) (apikey.Key, error)
}

var _ KeyReader = (*apikey.Keys)(nil)

// Tickets mints and verifies the stream tickets of docs/api.md §5: minted with an API key, bound to
// its organisation and environment but not to an area, reusable for TicketLifetime, checked
// only at connect. It implements apikey.TicketVerifier for the /v1 middleware.
type Tickets struct {
	table store.Table
	clock clock.Clock
	keys  KeyReader
}

var _ apikey.TicketVerifier = (*Tickets)(nil)

// NewTickets returns the ticket store on table.
func NewTickets(table store.Table, opts TicketOptions) *Tickets {
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	return &Tickets{table: table, clock: opts.Clock, keys: opts.Keys}
}

// ErrNoPrincipal is returned by Mint for a principal without organisation or environment: a
// wiring mistake, since every API key has both.
var ErrNoPrincipal = errors.New("stream: ticket for an unauthenticated principal")

// Mint issues a ticket for the principal of an API key (docs/api.md §5 ticket rule 1: a ticket
// cannot mint a ticket; the route only takes API keys). It carries the principal's organisation and
// environment, nothing else (rule 2).
func (t *Tickets) Mint(ctx context.Context, p apikey.Principal) (Ticket, error) {
	if p.OrgID == "" || !apikey.ValidEnvironment(p.Environment) {
		return Ticket{}, ErrNoPrincipal
	}
	raw := TicketPrefix + randomBase62(TicketSecretLen)
	expires := t.clock.Now().Add(TicketLifetime).UTC()
	k := ticketKey(raw)
	it := store.Item{
		store.AttrPK:  k.PK,
		store.AttrSK:  k.SK,
		store.AttrTTL: ceilUnix(expires),
		attrOrg:       p.OrgID,
		attrEnv:       p.Environment,
		attrExpires:   expires.UnixNano(),
	}
	if p.KeyID != "" {
		it[attrKeyID] = p.KeyID
	}
	// 256 random bits cannot collide in practice; the condition makes sure a collision would
	// fail loudly instead of handing out another organisation's ticket.
	if err := t.table.Put(ctx, it, store.IfNotExists()); err != nil {
		return Ticket{}, fmt.Errorf("store stream ticket: %w", err)
	}
	return Ticket{Raw: raw, ExpiresAt: expires, Principal: p}, nil
}

// VerifyTicket implements apikey.TicketVerifier: it returns the principal a ticket was minted for,
// or an error wrapping apikey.ErrInvalidTicket when the ticket is malformed, unknown or expired
// (docs/api.md §5 ticket rule 6: 401), or its key was revoked (docs/api.md §11.4). Expiry is
// checked here, at connect, and only here: an open stream is not cut when its ticket ages out
// (rule 3). A ticket is not used up (rule 5).
func (t *Tickets) VerifyTicket(ctx context.Context, raw string) (apikey.Principal, error) {
	if !wellFormedTicket(raw) {
		return apikey.Principal{}, fmt.Errorf("%w: malformed", apikey.ErrInvalidTicket)
	}
	it, err := t.table.Get(ctx, ticketKey(raw))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apikey.Principal{}, fmt.Errorf("%w: unknown", apikey.ErrInvalidTicket)
	case err != nil:
		return apikey.Principal{}, fmt.Errorf("read stream ticket: %w", err)
	}
	if !t.clock.Now().Before(time.Unix(0, it.Int(attrExpires))) {
		return apikey.Principal{}, fmt.Errorf("%w: expired", apikey.ErrInvalidTicket)
	}
	p := apikey.Principal{OrgID: it.String(attrOrg), Environment: it.String(attrEnv), KeyID: it.String(attrKeyID)}
	if t.keys != nil && p.KeyID != "" {
		// The ticket lives on its own; its key may have been revoked since it was minted.
		k, err := t.keys.Get(ctx, p.OrgID, p.KeyID)
		switch {
		case errors.Is(err, apikey.ErrNotFound) || err == nil && k.Revoked:
			return apikey.Principal{}, fmt.Errorf("%w: its key %s is revoked", apikey.ErrInvalidTicket, p.KeyID)
		case err != nil:
			return apikey.Principal{}, fmt.Errorf("read the key of a stream ticket: %w", err)
		}
	}
	return p, nil
}

func ticketKey(raw string) store.Key {
	sum := sha256.Sum256([]byte(raw))
	return store.Key{PK: ticketPrefix + hex.EncodeToString(sum[:]), SK: ticketSK}
}

// wellFormedTicket tells whether raw has the shape of a ticket, so that garbage is refused
// without a read.
func wellFormedTicket(raw string) bool {
	if len(raw) != len(TicketPrefix)+TicketSecretLen || raw[:len(TicketPrefix)] != TicketPrefix {
		return false
	}
	for i := len(TicketPrefix); i < len(raw); i++ {
		c := raw[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// randomBase62 returns n uniformly random base62 characters: bytes of 248 and above are
// rejected so that each character is equally likely (248 = 4 * 62).
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	var buf [64]byte
	for len(out) < n {
		rand.Read(buf[:]) // never fails (Go 1.24+): it crashes the program instead
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}

func ceilUnix(t time.Time) int64 {
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return sec
}
