package apikey_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// env is one test's key store on a fresh table, with the table's fake clock.
type env struct {
	t    *testing.T
	tab  tables.Table
	keys *apikey.Keys
	log  *apitest.LogBuffer
}

func newEnv(t *testing.T, tab tables.Table) *env {
	t.Helper()
	buf := &apitest.LogBuffer{}
	logger := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := &env{t: t, tab: tab, log: buf,
		keys: apikey.New(tab, apikey.Options{Clock: tab.Clock, Logger: logger})}
	t.Cleanup(func() {
		if err := e.keys.Wait(context.Background()); err != nil {
			t.Errorf("Wait = %v; want nil", err)
		}
	})
	return e
}

// issue issues a key or fails the test.
func (e *env) issue(org, environment, label string) (string, apikey.Key) {
	e.t.Helper()
	raw, key, err := e.keys.Issue(e.t.Context(), apikey.IssueRequest{
		OrgID: org, Environment: environment, Label: label,
		CreatedBy: "usr_1", CreatedByEmail: "owner@example.com",
	})
	if err != nil {
		e.t.Fatalf("Issue(%s, %s, %q) = %v; want nil", org, environment, label, err)
	}
	return raw, key
}

// lastUsed waits for background writes and returns the stored last_used_at of a key.
func (e *env) lastUsed(org, keyID string) time.Time {
	e.t.Helper()
	if err := e.keys.Wait(e.t.Context()); err != nil {
		e.t.Fatalf("Wait = %v; want nil", err)
	}
	k, err := e.keys.Get(e.t.Context(), org, keyID)
	if err != nil {
		e.t.Fatalf("Get(%s, %s) = %v; want nil", org, keyID, err)
	}
	return k.LastUsedAt
}

// TestIssue: docs/api.md §5 API key rule 1 and §10.3: "svc_" + 43 base62, the listing shows
// the prefix only, and only the SHA-256 is stored.
func TestIssue(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		raw, key := e.issue("org_a", apikey.Sandbox, "Fleet gateway")

		if !apikey.WellFormed(raw) || len(raw) != 47 || !strings.HasPrefix(raw, "svc_") {
			t.Errorf("raw key %d chars, well formed %v; want svc_ + 43 base62", len(raw), apikey.WellFormed(raw))
		}
		if strings.HasPrefix(raw, apikey.TicketPrefix) {
			t.Errorf("raw key starts with the ticket prefix %q", apikey.TicketPrefix)
		}
		if got, want := key.Prefix, raw[:12]; got != want {
			t.Errorf("Prefix = %q; want the first 12 characters %q", got, want)
		}
		sum := sha256.Sum256([]byte(raw))
		if got, want := key.Hash, hex.EncodeToString(sum[:]); got != want {
			t.Errorf("Hash = %s; want SHA-256 %s", got, want)
		}
		if !strings.HasPrefix(key.KeyID, "key_") || key.OrgID != "org_a" || key.Environment != apikey.Sandbox ||
			key.Label != "Fleet gateway" || key.CreatedBy != "usr_1" || key.CreatedByEmail != "owner@example.com" ||
			!key.CreatedAt.Equal(tables.Start) || key.Revoked || !key.LastUsedAt.IsZero() {
			t.Errorf("Issue returned %+v; want the request's fields, created now, unused, unrevoked", key)
		}

		listed, err := e.keys.List(t.Context(), "org_a", "", true)
		if err != nil || len(listed) != 1 {
			t.Fatalf("List = %d keys, %v; want 1, nil", len(listed), err)
		}
		if listed[0] != key {
			t.Errorf("List()[0] = %+v; want %+v", listed[0], key)
		}

		// No stored attribute holds the secret (rule 1: only the hash is stored).
		items, err := tab.Query(t.Context(), store.Query{PK: "org#org_a"})
		if err != nil {
			t.Fatalf("Query = %v; want nil", err)
		}
		lookup, err := tab.Get(t.Context(), store.Key{PK: "apikey#" + key.Hash, SK: "apikey"})
		if err != nil {
			t.Fatalf("Get(lookup item) = %v; want nil", err)
		}
		for _, it := range append(items, lookup) {
			for name, v := range it {
				if s, ok := v.(string); ok && strings.Contains(s, raw[len(apikey.KeyPrefix):]) {
					t.Errorf("item %s attribute %s holds the secret", it.Key(), name)
				}
			}
		}

		// Every key is different.
		raw2, key2 := e.issue("org_a", apikey.Sandbox, "Second")
		if raw2 == raw || key2.KeyID == key.KeyID {
			t.Errorf("two issues gave the same raw key or key id")
		}
	})
}

func TestIssueRefusesInvalidRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tables.Embedded(t))
	cases := []struct {
		name string
		req  apikey.IssueRequest
	}{
		{"EmptyOrg", apikey.IssueRequest{Environment: apikey.Live, Label: "x"}},
		{"UnknownEnvironment", apikey.IssueRequest{OrgID: "o", Environment: "production", Label: "x"}},
		{"EmptyLabel", apikey.IssueRequest{OrgID: "o", Environment: apikey.Live}},
		{"LabelOver120", apikey.IssueRequest{OrgID: "o", Environment: apikey.Live, Label: strings.Repeat("é", 121)}},
		// docs/api.md §11.2, for the apikey command, which issues without a request body.
		{"LabelWithALineFeed", apikey.IssueRequest{OrgID: "o", Environment: apikey.Live, Label: "ops\nBcc: x"}},
		{"LabelOfSpaces", apikey.IssueRequest{OrgID: "o", Environment: apikey.Live, Label: "   "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := e.keys.Issue(t.Context(), tc.req); !errors.Is(err, apikey.ErrInvalidRequest) {
				t.Errorf("Issue(%+v) = %v; want ErrInvalidRequest", tc.req, err)
			}
		})
	}
	// 120 characters of two bytes each are within the limit (characters, not bytes).
	if _, _, err := e.keys.Issue(t.Context(), apikey.IssueRequest{OrgID: "o", Environment: apikey.Live, Label: strings.Repeat("é", 120)}); err != nil {
		t.Errorf("Issue(label of 120 characters) = %v; want nil", err)
	}
}

// TestAuthenticate: docs/api.md §5 API key rules 2 and 5; §3: revocation is effective from the
// next request; a stream ticket or a session token is not an API key.
func TestAuthenticate(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ctx := t.Context()
		raw, key := e.issue("org_b", apikey.Live, "Vehicles")

		got, err := e.keys.Authenticate(ctx, raw)
		want := apikey.Principal{OrgID: "org_b", Environment: apikey.Live, KeyID: key.KeyID}
		if err != nil || got != want {
			t.Fatalf("Authenticate(issued key) = %+v, %v; want %+v, nil", got, err, want)
		}

		refused := []struct {
			name string
			raw  string
			want error
		}{
			{"Unknown", "svc_" + strings.Repeat("A", 43), apikey.ErrInvalidKey},
			{"OneCharacterChanged", raw[:46] + flip(raw[46]), apikey.ErrInvalidKey},
			{"StreamTicket", "svc_st_" + strings.Repeat("a", 43), apikey.ErrStreamTicket},
			{"SessionToken", "ses_" + raw[4:], apikey.ErrInvalidKey},
			{"TooShort", raw[:46], apikey.ErrInvalidKey},
			{"NotBase62", raw[:46] + "_", apikey.ErrInvalidKey},
			{"Empty", "", apikey.ErrInvalidKey},
		}
		for _, tc := range refused {
			if p, err := e.keys.Authenticate(ctx, tc.raw); !errors.Is(err, tc.want) {
				t.Errorf("Authenticate(%s) = %+v, %v; want %v", tc.name, p, err, tc.want)
			}
		}

		if _, err := e.keys.Revoke(ctx, "org_b", key.KeyID, nil); err != nil {
			t.Fatalf("Revoke = %v; want nil", err)
		}
		_, err = e.keys.Authenticate(ctx, raw)
		if !errors.Is(err, apikey.ErrRevoked) || !errors.Is(err, apikey.ErrInvalidKey) {
			t.Errorf("Authenticate(revoked key) = %v; want ErrRevoked, an ErrInvalidKey", err)
		}
		if err != nil && strings.Contains(err.Error(), raw[4:]) {
			t.Errorf("Authenticate error %q holds the key", err)
		}
	})
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

// TestRevoke: docs/api.md §4.4 DELETE .../keys/{key_id}; §3: active to revoked, no way back.
func TestRevoke(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ctx := t.Context()
		_, key := e.issue("org_c", apikey.Sandbox, "k")
		tab.Clock.Advance(time.Hour)

		got, err := e.keys.Revoke(ctx, "org_c", key.KeyID, nil)
		if err != nil || !got.Revoked || !got.RevokedAt.Equal(tables.Start.Add(time.Hour)) {
			t.Fatalf("Revoke = %+v, %v; want revoked at %v", got, err, tables.Start.Add(time.Hour))
		}
		stored, err := e.keys.Get(ctx, "org_c", key.KeyID)
		if err != nil || stored != got {
			t.Errorf("Get after Revoke = %+v, %v; want %+v", stored, err, got)
		}
		tab.Clock.Advance(time.Hour)
		again, err := e.keys.Revoke(ctx, "org_c", key.KeyID, nil)
		if !errors.Is(err, apikey.ErrAlreadyRevoked) || again != got {
			t.Errorf("Revoke(revoked) = %+v, %v; want %+v unchanged, ErrAlreadyRevoked", again, err, got)
		}
		for _, tc := range []struct{ name, org, keyID string }{
			{"UnknownKey", "org_c", "key_nope"},
			{"OtherOrganisation", "org_other", key.KeyID},
		} {
			if _, err := e.keys.Revoke(ctx, tc.org, tc.keyID, nil); !errors.Is(err, apikey.ErrNotFound) {
				t.Errorf("Revoke(%s) = %v; want ErrNotFound", tc.name, err)
			}
		}
	})
}

// TestList: docs/api.md §4.4 GET .../keys: environment filter, include_revoked, newest first.
func TestList(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ctx := t.Context()
		_, live1 := e.issue("org_d", apikey.Live, "live 1")
		tab.Clock.Advance(time.Minute)
		_, sb := e.issue("org_d", apikey.Sandbox, "sandbox")
		tab.Clock.Advance(time.Minute)
		_, live2 := e.issue("org_d", apikey.Live, "live 2")
		e.issue("org_other", apikey.Live, "someone else's")
		if _, err := e.keys.Revoke(ctx, "org_d", live1.KeyID, nil); err != nil {
			t.Fatalf("Revoke = %v", err)
		}
		cases := []struct {
			name           string
			env            string
			includeRevoked bool
			want           []string
		}{
			{"All", "", true, []string{live2.KeyID, sb.KeyID, live1.KeyID}},
			{"Unrevoked", "", false, []string{live2.KeyID, sb.KeyID}},
			{"Live", apikey.Live, true, []string{live2.KeyID, live1.KeyID}},
			{"LiveUnrevoked", apikey.Live, false, []string{live2.KeyID}},
			{"Sandbox", apikey.Sandbox, true, []string{sb.KeyID}},
		}
		for _, tc := range cases {
			keys, err := e.keys.List(ctx, "org_d", tc.env, tc.includeRevoked)
			if err != nil {
				t.Fatalf("List(%s) = %v; want nil", tc.name, err)
			}
			var got []string
			for _, k := range keys {
				got = append(got, k.KeyID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("List(%s) = %v; want %v", tc.name, got, tc.want)
			}
		}
		if _, err := e.keys.List(ctx, "org_d", "prod", true); !errors.Is(err, apikey.ErrInvalidRequest) {
			t.Errorf("List(environment prod) = %v; want ErrInvalidRequest", err)
		}
	})
}

// TestLiveKeyCap: docs/api.md §5 API key rule 3: live keys are capped per plan (Free: 1), sandbox
// keys are not; revoking a live key frees its place. Concurrent issuance cannot pass the cap.
func TestLiveKeyCap(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ctx := t.Context()
		req := apikey.IssueRequest{OrgID: "org_e", Environment: apikey.Live, Label: "live", LiveKeyCap: 1}

		const racers = 6
		var wg sync.WaitGroup
		errs := make([]error, racers)
		for i := range racers {
			wg.Go(func() { _, _, errs[i] = e.keys.Issue(ctx, req) })
		}
		wg.Wait()
		issued := 0
		for _, err := range errs {
			switch {
			case err == nil:
				issued++
			case errors.Is(err, apikey.ErrLiveKeyCap), errors.Is(err, store.ErrConflict):
			default:
				t.Errorf("Issue(live, cap 1) = %v; want nil, ErrLiveKeyCap or a conflict", err)
			}
		}
		live, err := e.keys.List(ctx, "org_e", apikey.Live, false)
		if issued != 1 || err != nil || len(live) != 1 {
			t.Fatalf("%d racing issues under cap 1: %d succeeded, %d live keys listed (%v); want 1 and 1", racers, issued, len(live), err)
		}

		if _, _, err := e.keys.Issue(ctx, req); !errors.Is(err, apikey.ErrLiveKeyCap) {
			t.Errorf("Issue(second live key, cap 1) = %v; want ErrLiveKeyCap", err)
		}
		for i := range 3 {
			if _, _, err := e.keys.Issue(ctx, apikey.IssueRequest{OrgID: "org_e", Environment: apikey.Sandbox, Label: "sb", LiveKeyCap: 1}); err != nil {
				t.Errorf("Issue(sandbox key %d, cap 1) = %v; want nil (sandbox keys are uncapped)", i, err)
			}
		}
		if _, _, err := e.keys.Issue(ctx, apikey.IssueRequest{OrgID: "org_e", Environment: apikey.Live, Label: "x", LiveKeyCap: 2}); err != nil {
			t.Errorf("Issue(second live key, cap 2) = %v; want nil", err)
		}
		if _, err := e.keys.Revoke(ctx, "org_e", live[0].KeyID, nil); err != nil {
			t.Fatalf("Revoke = %v", err)
		}
		if _, _, err := e.keys.Issue(ctx, apikey.IssueRequest{OrgID: "org_e", Environment: apikey.Live, Label: "y", LiveKeyCap: 2}); err != nil {
			t.Errorf("Issue(live key after a revocation, cap 2) = %v; want nil", err)
		}
		if _, _, err := e.keys.Issue(ctx, apikey.IssueRequest{OrgID: "org_e", Environment: apikey.Live, Label: "z", LiveKeyCap: 2}); !errors.Is(err, apikey.ErrLiveKeyCap) {
			t.Errorf("Issue(third unrevoked live key, cap 2) = %v; want ErrLiveKeyCap", err)
		}
	})
}

// TestLastUsedAt: last_used_at is written at most once per minute per key per process, and
// again once the clock has moved past the minute (Vitality, docs/api.md §10.3, reads it).
func TestLastUsedAt(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ctx := t.Context()
		raw, key := e.issue("org_f", apikey.Live, "k")
		start := tab.Clock.Now()

		if got := e.lastUsed("org_f", key.KeyID); !got.IsZero() {
			t.Errorf("last_used_at before any use = %v; want none", got)
		}
		steps := []struct {
			advance time.Duration
			want    time.Time
		}{
			{0, start},                                 // first use
			{30 * time.Second, start},                  // within the minute: no write
			{29 * time.Second, start},                  // 59 s after the first: still none
			{time.Second, start.Add(time.Minute)},      // a minute after the first: written
			{10 * time.Second, start.Add(time.Minute)}, // within the new minute
			{2 * time.Hour, start.Add(time.Minute + 10*time.Second + 2*time.Hour)}, // much later
		}
		for i, s := range steps {
			tab.Clock.Advance(s.advance)
			if _, err := e.keys.Authenticate(ctx, raw); err != nil {
				t.Fatalf("step %d: Authenticate = %v; want nil", i, err)
			}
			if got := e.lastUsed("org_f", key.KeyID); !got.Equal(s.want) {
				t.Errorf("step %d (+%v): last_used_at = %v; want %v", i, s.advance, got, s.want)
			}
		}
	})
}

// TestLastUsedAtNeverGoesBack: another process that recorded a later use is not overwritten
// by this one's earlier stamp.
func TestLastUsedAtNeverGoesBack(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	e := newEnv(t, tab)
	raw, key := e.issue("org_g", apikey.Live, "k")
	late := apikey.New(tab, apikey.Options{Clock: fixedClock{tab.Clock.Now().Add(time.Hour)}})
	if _, err := late.Authenticate(t.Context(), raw); err != nil {
		t.Fatalf("Authenticate = %v", err)
	}
	if err := late.Wait(t.Context()); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	if _, err := e.keys.Authenticate(t.Context(), raw); err != nil {
		t.Fatalf("Authenticate = %v", err)
	}
	if got, want := e.lastUsed("org_g", key.KeyID), tab.Clock.Now().Add(time.Hour); !got.Equal(want) {
		t.Errorf("last_used_at = %v; want the later use %v", got, want)
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// failingUpdates is a table whose updates fail, as a table under throttling would.
type failingUpdates struct{ store.Table }

func (failingUpdates) Update(context.Context, store.Key, store.Update, store.Condition) (store.Item, error) {
	return nil, errors.New("throttled")
}

// TestTouchFailureDoesNotFailTheRequest: a failed last_used_at write is logged, and the key
// still authenticates.
func TestTouchFailureDoesNotFailTheRequest(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	e := newEnv(t, tab)
	raw, key := e.issue("org_h", apikey.Live, "k")
	buf := &apitest.LogBuffer{}
	keys := apikey.New(failingUpdates{tab}, apikey.Options{Clock: tab.Clock, Logger: slog.New(slog.NewJSONHandler(buf, nil))})
	if _, err := keys.Authenticate(t.Context(), raw); err != nil {
		t.Fatalf("Authenticate with failing last_used_at write = %v; want nil", err)
	}
	if err := keys.Wait(t.Context()); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	logged := buf.String()
	if !strings.Contains(logged, "record last use failed") || !strings.Contains(logged, key.KeyID) {
		t.Errorf("log = %q; want the failure with the key_id", logged)
	}
	if strings.Contains(logged, raw[4:12]) {
		t.Errorf("log = %q; holds the key", logged)
	}
}

// BenchmarkAuthenticate measures the per-request cost of a key on the embedded store: one
// read by hash (the last_used_at write happens at most once a minute, so not here).
func BenchmarkAuthenticate(b *testing.B) {
	tab := tables.Embedded(b)
	keys := apikey.New(tab, apikey.Options{Clock: tab.Clock})
	raw, _, err := keys.Issue(b.Context(), apikey.IssueRequest{OrgID: "org_bench", Environment: apikey.Live, Label: "bench"})
	if err != nil {
		b.Fatalf("Issue = %v", err)
	}
	for b.Loop() {
		if _, err := keys.Authenticate(b.Context(), raw); err != nil {
			b.Fatalf("Authenticate = %v", err)
		}
	}
	b.StopTimer()
	if err := keys.Wait(context.Background()); err != nil {
		b.Fatalf("Wait = %v", err)
	}
}

// TestAlsoCommitsWithTheKey: the writes of IssueRequest.Also and of Revoke's also commit in the
// key's own transaction (the console's audit entry, docs/api.md §10.3): both or neither.
func TestAlsoCommitsWithTheKey(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ctx := t.Context()
		note := func(k apikey.Key) store.Key { return store.Key{PK: "note#" + k.OrgID, SK: k.KeyID} }
		write := func(k apikey.Key) ([]store.Op, error) {
			return []store.Op{store.PutOp(store.Item{store.AttrPK: note(k).PK, store.AttrSK: note(k).SK}, store.IfNotExists())}, nil
		}
		refused := func(k apikey.Key) ([]store.Op, error) { // its condition cannot hold
			return []store.Op{store.PutOp(store.Item{store.AttrPK: note(k).PK, store.AttrSK: note(k).SK}, store.IfExists())}, nil
		}
		issue := func(env string, also func(apikey.Key) ([]store.Op, error)) (string, apikey.Key, error) {
			return e.keys.Issue(ctx, apikey.IssueRequest{OrgID: "org_al", Environment: env, Label: "k", LiveKeyCap: 1, Also: also})
		}

		// Refused: no key, no live-key counted, and not mistaken for the cap.
		for _, env := range []string{apikey.Live, apikey.Sandbox} {
			if _, _, err := issue(env, refused); err == nil || errors.Is(err, apikey.ErrLiveKeyCap) {
				t.Errorf("Issue(%s) with a refused Also = %v; want an error other than ErrLiveKeyCap", env, err)
			}
		}
		if keys, err := e.keys.List(ctx, "org_al", "", true); err != nil || len(keys) != 0 {
			t.Errorf("List after refused issuances = %d keys, %v; want none", len(keys), err)
		}

		// Accepted: the key and the extra write, and the one live key the cap allows.
		raw, key, err := issue(apikey.Live, write)
		if err != nil {
			t.Fatalf("Issue(live) with Also = %v; want nil (the refused ones counted nothing)", err)
		}
		if _, err := tab.Get(ctx, note(key)); err != nil {
			t.Errorf("Also's write after Issue: %v; want it stored", err)
		}

		// Revoke: refused leaves the key working; accepted revokes it with the write.
		if _, err := e.keys.Revoke(ctx, "org_al", key.KeyID, func(k apikey.Key) ([]store.Op, error) {
			return []store.Op{store.DeleteOp(store.Key{PK: "note#none", SK: "none"}, store.IfExists())}, nil
		}); err == nil {
			t.Errorf("Revoke with a refused also = nil; want an error")
		}
		if _, err := e.keys.Authenticate(ctx, raw); err != nil {
			t.Errorf("Authenticate after a refused revocation = %v; want the key still valid", err)
		}
		if _, err := e.keys.Revoke(ctx, "org_al", key.KeyID, func(k apikey.Key) ([]store.Op, error) {
			return []store.Op{store.DeleteOp(note(k), store.IfExists())}, nil
		}); err != nil {
			t.Fatalf("Revoke with also = %v; want nil", err)
		}
		if _, err := tab.Get(ctx, note(key)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("also's delete after Revoke: Get = %v; want ErrNotFound", err)
		}
		if _, err := e.keys.Authenticate(ctx, raw); !errors.Is(err, apikey.ErrRevoked) {
			t.Errorf("Authenticate after Revoke = %v; want ErrRevoked", err)
		}
	})
}
