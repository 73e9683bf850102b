package apikey_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// cachedKeys returns the key store as the service builds it: the lookup cache on the embedded
// store only (its process is the table's only writer), none on DynamoDB, where other
// processes share the table.
func cachedKeys(tab tables.Table) *apikey.Keys {
	return apikey.New(tab, apikey.Options{Clock: tab.Clock, CacheLookups: tab.Adapter == tables.AdapterEmbedded})
}

// TestRevokeRacingAuthentications: spec 5, revocation is effective on the next request. While
// clients authenticate with a key as fast as they can, Revoke returns; no authentication that
// starts after that succeeds, cached or not.
func TestRevokeRacingAuthentications(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		keys := cachedKeys(tab)
		t.Cleanup(func() { _ = keys.Wait(context.Background()) })
		ctx := t.Context()
		rounds := 30
		if tab.Adapter != tables.AdapterEmbedded {
			rounds = 5 // each request is a round trip to DynamoDB Local
		}
		for round := range rounds {
			raw, key, err := keys.Issue(ctx, apikey.IssueRequest{OrgID: "org_race", Environment: apikey.Sandbox, Label: "k"})
			if err != nil {
				t.Fatalf("Issue = %v; want nil", err)
			}
			if _, err := keys.Authenticate(ctx, raw); err != nil {
				t.Fatalf("Authenticate before Revoke = %v; want nil", err)
			}
			var revoked atomic.Bool // set once Revoke has returned
			var late atomic.Int64   // authentications that started after it and succeeded
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for {
						after := revoked.Load()
						_, err := keys.Authenticate(ctx, raw)
						switch {
						case err == nil && after:
							late.Add(1)
						case err != nil && !errors.Is(err, apikey.ErrRevoked):
							t.Errorf("Authenticate = %v; want nil or ErrRevoked", err)
							return
						}
						if after {
							return // one request after the revocation is the one that counts
						}
					}
				})
			}
			if _, err := keys.Revoke(ctx, "org_race", key.KeyID); err != nil {
				t.Fatalf("Revoke = %v; want nil", err)
			}
			revoked.Store(true)
			wg.Wait()
			if n := late.Load(); n != 0 {
				t.Fatalf("round %d: %d authentications started after Revoke returned succeeded; want 0", round, n)
			}
			if _, err := keys.Authenticate(ctx, raw); !errors.Is(err, apikey.ErrRevoked) {
				t.Fatalf("round %d: Authenticate after Revoke = %v; want ErrRevoked", round, err)
			}
		}
	})
}

// heldLookups is a table whose reads of key lookup items wait, after reading, until release is
// closed: it holds an authentication between its read and its answer, where a Revoke can
// slip in.
type heldLookups struct {
	store.Table
	read    chan struct{} // receives once per held read, after the read
	release chan struct{}
}

func (h heldLookups) Get(ctx context.Context, k store.Key) (store.Item, error) {
	it, err := h.Table.Get(ctx, k)
	if strings.HasPrefix(k.PK, "apikey#") {
		h.read <- struct{}{}
		<-h.release
	}
	return it, err
}

// TestLookupRacingRevokeIsNotCached: an authentication that read the key just before a Revoke
// committed may still answer (it began before Revoke returned), but the next request must be
// refused: the stale read must not be remembered.
func TestLookupRacingRevokeIsNotCached(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		ctx := t.Context()
		issuer := apikey.New(tab, apikey.Options{Clock: tab.Clock})
		raw, key, err := issuer.Issue(ctx, apikey.IssueRequest{OrgID: "org_slow", Environment: apikey.Live, Label: "k"})
		if err != nil {
			t.Fatalf("Issue = %v; want nil", err)
		}
		held := heldLookups{Table: tab, read: make(chan struct{}, 1), release: make(chan struct{})}
		keys := apikey.New(held, apikey.Options{Clock: tab.Clock, CacheLookups: tab.Adapter == tables.AdapterEmbedded})
		t.Cleanup(func() { _ = keys.Wait(context.Background()); _ = issuer.Wait(context.Background()) })

		first := make(chan error, 1)
		go func() {
			_, err := keys.Authenticate(ctx, raw)
			first <- err
		}()
		<-held.read // the lookup has read the key, unrevoked
		if _, err := keys.Revoke(ctx, "org_slow", key.KeyID); err != nil {
			t.Fatalf("Revoke = %v; want nil", err)
		}
		close(held.release)
		if err := <-first; err != nil {
			t.Fatalf("Authenticate that read before the revocation = %v; want nil (it began before Revoke returned)", err)
		}
		if p, err := keys.Authenticate(ctx, raw); !errors.Is(err, apikey.ErrRevoked) {
			t.Errorf("Authenticate after Revoke = %+v, %v; want ErrRevoked", p, err)
		}
	})
}

// countingGets counts the reads of key lookup items.
type countingGets struct {
	store.Table
	n *atomic.Int64
}

func (c countingGets) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if strings.HasPrefix(k.PK, "apikey#") {
		c.n.Add(1)
	}
	return c.Table.Get(ctx, k)
}

// TestCacheLookups: with the cache, repeated requests with a key read the table once (the
// point of it: no bbolt transaction per request); without it, as on DynamoDB where a revocation
// may come from another process, every request reads the table, and a key revoked by another
// process is refused on the next request.
func TestCacheLookups(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	ctx := t.Context()
	other := apikey.New(tab, apikey.Options{Clock: tab.Clock})
	raw, key, err := other.Issue(ctx, apikey.IssueRequest{OrgID: "org_cache", Environment: apikey.Live, Label: "k"})
	if err != nil {
		t.Fatalf("Issue = %v; want nil", err)
	}
	for _, tc := range []struct {
		name      string
		cache     bool
		wantReads int64
	}{
		{"Cached", true, 1},
		{"Uncached", false, 5},
	} {
		var n atomic.Int64
		keys := apikey.New(countingGets{tab, &n}, apikey.Options{Clock: tab.Clock, CacheLookups: tc.cache})
		for range 5 {
			if _, err := keys.Authenticate(ctx, raw); err != nil {
				t.Fatalf("%s: Authenticate = %v; want nil", tc.name, err)
			}
		}
		if got := n.Load(); got != tc.wantReads {
			t.Errorf("%s: 5 authentications read the table %d times; want %d", tc.name, got, tc.wantReads)
		}
		if err := keys.Wait(ctx); err != nil {
			t.Fatalf("Wait = %v", err)
		}
	}
	uncached := apikey.New(tab, apikey.Options{Clock: tab.Clock})
	if _, err := uncached.Authenticate(ctx, raw); err != nil {
		t.Fatalf("Authenticate = %v; want nil", err)
	}
	if _, err := other.Revoke(ctx, "org_cache", key.KeyID); err != nil {
		t.Fatalf("Revoke = %v; want nil", err)
	}
	if _, err := uncached.Authenticate(ctx, raw); !errors.Is(err, apikey.ErrRevoked) {
		t.Errorf("Authenticate after another Keys revoked the key = %v; want ErrRevoked", err)
	}
	for _, k := range []*apikey.Keys{other, uncached} {
		if err := k.Wait(ctx); err != nil {
			t.Fatalf("Wait = %v", err)
		}
	}
}
