// Package apikey issues, authenticates, lists and revokes the API keys of docs/api.md §5 (API key
// rules), and provides the authentication middleware of every /v1 route that takes one.
//
// # Credentials
//
// A raw key is "svc_" followed by 43 characters of base62 drawn from crypto/rand (docs/api.md
// §10.3), about 256 bits. It is returned once, by Issue; only its SHA-256 is stored (docs/api.md §5
// API key rule 1), with the first PrefixLen characters as the prefix the console lists. A stream
// ticket ("svc_st_...") shares the "svc_" prefix but is not an API key and is refused.
//
// # Storage layout
//
// Each key is two items, written together in one transaction by Issue and changed together by
// Revoke, plus one counter per organisation (single-table design, docs/architecture.md §2):
//
//	pk "apikey#<hex sha256 of the raw key>"  sk "apikey"           lookup item
//	    key_id, org_id, environment, hash, revoked, revoked_at
//	pk "org#<org_id>"                       sk "apikey#<key_id>"  listing item
//	    key_id, org_id, environment, label, prefix, hash, created_at, created_by,
//	    created_by_email, last_used_at, revoked, revoked_at
//	pk "org#<org_id>"                       sk "apikeys#live"     live-key counter
//	    active: unrevoked live keys, guarded at issuance for the plan's cap (docs/api.md §5 API key rule 3)
//
// Authenticate reads only the lookup item: one strongly consistent Get by hash, so a
// revocation is effective on the very next request (docs/api.md §3: from the next request
// that presents it); validity is never cached. The lookup item lives in a partition of its
// own, so authentication spreads over the table instead of loading the organisation's
// partition. Revoked keys keep both items (revoked = true), which keeps the history and lets
// a reported leaked key be traced to its organisation by hash.
//
// Timestamps are stored as fixed-width UTC text (TimeFormat), so that they compare in time
// order as strings (the last_used_at guard relies on it).
//
// # last_used_at
//
// Writing last_used_at on every request would put a table write on the hot path. Instead
// each process touches a key at most once per Options.TouchInterval (one minute): the first
// successful authentication of a key in an interval starts the write in the background and
// later ones skip it. The write never fails or delays a request; a failure is logged, and the
// next touch comes an interval later. The write only moves last_used_at forward, so processes
// racing cannot set it back. Wait blocks until the writes in flight are done: call it on
// shutdown, and on Lambda after each invocation (a frozen instance would otherwise hold them).
package apikey

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store"
)

// The environments of docs/api.md §1: every credential belongs to one.
const (
	Live    = "live"
	Sandbox = "sandbox"
)

// MaxLabelLen is the longest key label, in characters (docs/api.md §8: key label 1..120).
const MaxLabelLen = 120

// TimeFormat is how the items store timestamps: UTC, fixed width, so that the text orders as
// the time does.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// DefaultTouchInterval is how often a process writes a key's last_used_at at most.
const DefaultTouchInterval = time.Minute

// touchTimeout bounds one background last_used_at write; it is detached from the request,
// whose context may end as soon as the response is sent.
const touchTimeout = 10 * time.Second

// maxRetries bounds the retries of a transaction refused with store.ErrConflict.
const maxRetries = 3

// Errors of the package. Check them with errors.Is.
var (
	// ErrInvalidKey is returned by Authenticate for any credential that does not open the
	// service: malformed, unknown, revoked, or a stream ticket. The middleware answers it with
	// 401 and DetailInvalid (docs/api.md §5 API key rule 5).
	ErrInvalidKey = errors.New("apikey: invalid or revoked API key")
	// ErrRevoked is returned by Authenticate for a revoked key; it is also an ErrInvalidKey.
	ErrRevoked = fmt.Errorf("%w: revoked", ErrInvalidKey)
	// ErrStreamTicket is returned by Authenticate for a stream ticket ("svc_st_...") sent as a
	// key: a ticket is not an API key (docs/api.md §5). It is also an ErrInvalidKey.
	ErrStreamTicket = fmt.Errorf("%w: a stream ticket is not an API key", ErrInvalidKey)
	// ErrNotFound is returned by Get and Revoke when the organisation has no key with the id.
	ErrNotFound = errors.New("apikey: key not found")
	// ErrAlreadyRevoked is returned by Revoke for a key revoked before; nothing changed.
	ErrAlreadyRevoked = errors.New("apikey: key already revoked")
	// ErrLiveKeyCap is returned by Issue when the organisation already holds
	// IssueRequest.LiveKeyCap unrevoked live keys (docs/api.md §5 API key rule 3: 409 at issuance).
	ErrLiveKeyCap = errors.New("apikey: live key cap reached")
	// ErrInvalidRequest is returned by Issue and List for arguments docs/api.md does not allow:
	// an empty organisation, an unknown environment, a label outside 1..MaxLabelLen.
	ErrInvalidRequest = errors.New("apikey: invalid request")
)

// Key is the stored record of an API key; the raw secret is never part of it. The console's
// ApiKeyPublic (docs/api.md §2.9) is made from it, without OrgID, Hash and CreatedBy.
type Key struct {
	KeyID       string
	OrgID       string
	Environment string // Live or Sandbox
	Label       string
	// Prefix is the first PrefixLen characters of the raw key, shown in listings.
	Prefix string
	// Hash is the hex SHA-256 of the raw key.
	Hash string
	// CreatedAt is when Issue ran.
	CreatedAt time.Time
	// CreatedBy is the user id of the issuer, and CreatedByEmail the issuer's address at that
	// time (kept so the listing survives the issuer leaving); either may be empty.
	CreatedBy      string
	CreatedByEmail string
	// LastUsedAt is the last recorded authentication (zero: never), at most about
	// Options.TouchInterval behind the true last use.
	LastUsedAt time.Time
	Revoked    bool
	RevokedAt  time.Time // zero unless Revoked
}

// Principal is who a request authenticated as: always derived server-side from the
// credential, never from a payload (docs/api.md §1).
type Principal struct {
	OrgID       string
	Environment string // Live or Sandbox
	KeyID       string
}

// Options configure Keys; the zero value is ready to use.
type Options struct {
	// Clock stamps created_at, revoked_at and last_used_at; clock.System when nil.
	Clock clock.Clock
	// Logger receives failed last_used_at writes; slog.Default() when nil.
	Logger *slog.Logger
	// TouchInterval is the least time between two last_used_at writes of one key by this
	// process: DefaultTouchInterval when 0 or less.
	TouchInterval time.Duration
}

// Keys is the API key store on one table. It is safe for concurrent use.
type Keys struct {
	table      store.Table
	clock      clock.Clock
	log        *slog.Logger
	touchEvery time.Duration

	mu      sync.Mutex
	touched map[string]time.Time // key_id -> when this process last started a touch
	pending sync.WaitGroup       // touches in flight
}

// New returns the key store on table.
func New(table store.Table, opts Options) *Keys {
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.TouchInterval <= 0 {
		opts.TouchInterval = DefaultTouchInterval
	}
	return &Keys{
		table:      table,
		clock:      opts.Clock,
		log:        opts.Logger,
		touchEvery: opts.TouchInterval,
		touched:    map[string]time.Time{},
	}
}

// IssueRequest is what Issue needs to create a key.
type IssueRequest struct {
	OrgID       string
	Environment string // Live or Sandbox
	Label       string // 1..MaxLabelLen characters
	// CreatedBy is the issuing user's id and CreatedByEmail their address (both optional).
	CreatedBy      string
	CreatedByEmail string
	// LiveKeyCap caps the organisation's unrevoked live keys when it is above 0 (the plan's
	// cap; docs/api.md §5 API key rule 3, the Free plan allows 1); 0 or less means no cap. Sandbox keys are
	// never capped.
	LiveKeyCap int
	// Also, when set, returns writes to commit in the same transaction as the key (the
	// console's audit entry, which names the new key), so that neither exists without the
	// other. A failure of one of them fails the issuance.
	Also func(Key) ([]store.Op, error)
}

// Issue creates a key and returns its raw secret, which is never stored and cannot be
// obtained again (docs/api.md §5 API key rule 1), and its record. The two items of the key and, for
// a live key, the organisation's live-key counter are written in one transaction, so a cap is never
// exceeded by concurrent issuance. Past the cap the error is ErrLiveKeyCap.
func (k *Keys) Issue(ctx context.Context, req IssueRequest) (string, Key, error) {
	if err := validOrg(req.OrgID); err != nil {
		return "", Key{}, err
	}
	if !ValidEnvironment(req.Environment) {
		return "", Key{}, fmt.Errorf("%w: environment %q", ErrInvalidRequest, req.Environment)
	}
	if n := utf8.RuneCountInString(req.Label); n < 1 || n > MaxLabelLen {
		return "", Key{}, fmt.Errorf("%w: label of %d characters, want 1..%d", ErrInvalidRequest, n, MaxLabelLen)
	}
	if problem := schema.PrintableProblem(req.Label); problem != "" {
		return "", Key{}, fmt.Errorf("%w: label: %s", ErrInvalidRequest, problem)
	}
	raw := newRaw()
	key := Key{
		KeyID:          newKeyID(),
		OrgID:          req.OrgID,
		Environment:    req.Environment,
		Label:          req.Label,
		Prefix:         raw[:PrefixLen],
		Hash:           hashOf(raw),
		CreatedAt:      k.clock.Now().UTC(),
		CreatedBy:      req.CreatedBy,
		CreatedByEmail: req.CreatedByEmail,
	}
	ops := []store.Op{
		store.PutOp(key.lookupItem(), store.IfNotExists()),
		store.PutOp(key.listingItem(), store.IfNotExists()),
	}
	const capOp = 2
	if key.Environment == Live {
		cond := store.Condition{}
		if req.LiveKeyCap > 0 {
			cond = store.Or(store.IfAttrNotExists(attrActive), store.IfLess(attrActive, int64(req.LiveKeyCap)))
		}
		ops = append(ops, store.UpdateOp(liveCounterKey(key.OrgID), store.Update{Add: map[string]int64{attrActive: 1}}, cond))
	}
	if req.Also != nil {
		also, err := req.Also(key)
		if err != nil {
			return "", Key{}, fmt.Errorf("apikey: issue key for organisation %s: %w", key.OrgID, err)
		}
		ops = append(ops, also...)
	}
	err := k.transact(ctx, ops)
	var ce *store.ConditionError
	switch {
	case errors.As(err, &ce) && ce.Op == capOp && key.Environment == Live:
		return "", Key{}, fmt.Errorf("issue live key for organisation %s: %w", key.OrgID, ErrLiveKeyCap)
	case err != nil:
		return "", Key{}, fmt.Errorf("apikey: issue key for organisation %s: %w", key.OrgID, err)
	}
	return raw, key, nil
}

// Authenticate returns the principal of a raw API key: one strongly consistent read by hash,
// so a revoked key is refused on the next request. Any key that does not open the service
// gives an error wrapping ErrInvalidKey (ErrRevoked, ErrStreamTicket among them); other
// errors are the table's. The error never holds the raw key.
func (k *Keys) Authenticate(ctx context.Context, raw string) (Principal, error) {
	if strings.HasPrefix(raw, TicketPrefix) {
		return Principal{}, ErrStreamTicket
	}
	if !WellFormed(raw) {
		return Principal{}, fmt.Errorf("%w: malformed", ErrInvalidKey)
	}
	hash := hashOf(raw)
	it, err := k.table.Get(ctx, lookupKey(hash))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Principal{}, fmt.Errorf("%w: unknown", ErrInvalidKey)
	case err != nil:
		return Principal{}, fmt.Errorf("apikey: look up key by hash: %w", err)
	}
	// The item was found by its hash already; comparing the stored hash in constant time
	// guards against an item stored under the wrong key, without a timing signal.
	if subtle.ConstantTimeCompare([]byte(it.String(attrHash)), []byte(hash)) != 1 {
		return Principal{}, fmt.Errorf("%w: stored hash of key %s disagrees", ErrInvalidKey, it.String(attrKeyID))
	}
	p := Principal{OrgID: it.String(attrOrgID), Environment: it.String(attrEnv), KeyID: it.String(attrKeyID)}
	if it.Bool(attrRevoked) {
		return Principal{}, fmt.Errorf("key %s: %w", p.KeyID, ErrRevoked)
	}
	if p.OrgID == "" || p.KeyID == "" || !ValidEnvironment(p.Environment) {
		return Principal{}, fmt.Errorf("apikey: lookup item of key %q is incomplete", p.KeyID)
	}
	k.touch(ctx, p)
	return p, nil
}

// Get returns the key keyID of organisation org, or ErrNotFound.
func (k *Keys) Get(ctx context.Context, org, keyID string) (Key, error) {
	if org == "" || keyID == "" {
		return Key{}, fmt.Errorf("get key %q of organisation %q: %w", keyID, org, ErrNotFound)
	}
	it, err := k.table.Get(ctx, listingKey(org, keyID))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Key{}, fmt.Errorf("get key %s of organisation %s: %w", keyID, org, ErrNotFound)
	case err != nil:
		return Key{}, fmt.Errorf("apikey: get key %s of organisation %s: %w", keyID, org, err)
	}
	return keyFromItem(it), nil
}

// Revoke revokes the key keyID of organisation org and returns it as revoked. The key is
// refused from the next request on. Revoking a revoked key changes nothing and returns it
// with ErrAlreadyRevoked; an unknown key (or another organisation's) is ErrNotFound. also, when
// not nil, returns writes to commit in the same transaction as the revocation (as
// IssueRequest.Also); it is called only when the key is about to be revoked.
func (k *Keys) Revoke(ctx context.Context, org, keyID string, also func(Key) ([]store.Op, error)) (Key, error) {
	key, err := k.Get(ctx, org, keyID)
	if err != nil {
		return Key{}, err
	}
	if key.Revoked {
		return key, fmt.Errorf("revoke key %s: %w", keyID, ErrAlreadyRevoked)
	}
	now := k.clock.Now().UTC()
	set := map[string]any{attrRevoked: true, attrRevokedAt: formatTime(now)}
	ops := []store.Op{
		// Only one of two concurrent revocations wins, so the live counter drops once.
		store.UpdateOp(listingKey(org, keyID), store.Update{Set: set}, store.And(store.IfExists(), store.IfEqual(attrRevoked, false))),
		store.UpdateOp(lookupKey(key.Hash), store.Update{Set: set}, store.IfExists()),
	}
	if key.Environment == Live {
		ops = append(ops, store.UpdateOp(liveCounterKey(org), store.Update{Add: map[string]int64{attrActive: -1}}, store.Condition{}))
	}
	if also != nil {
		more, err := also(key)
		if err != nil {
			return Key{}, fmt.Errorf("apikey: revoke key %s of organisation %s: %w", keyID, org, err)
		}
		ops = append(ops, more...)
	}
	err = k.transact(ctx, ops)
	var ce *store.ConditionError
	switch {
	case errors.As(err, &ce) && ce.Op == 0:
		cur, gerr := k.Get(ctx, org, keyID)
		if gerr != nil {
			return Key{}, gerr
		}
		return cur, fmt.Errorf("revoke key %s: %w", keyID, ErrAlreadyRevoked)
	case err != nil:
		return Key{}, fmt.Errorf("apikey: revoke key %s of organisation %s: %w", keyID, org, err)
	}
	key.Revoked, key.RevokedAt = true, now
	return key, nil
}

// List returns the keys of organisation org, newest first: of one environment when env is
// not empty, and without the revoked ones unless includeRevoked (the console's GET
// /console/orgs/{org_id}/keys, docs/api.md §4.4).
func (k *Keys) List(ctx context.Context, org, env string, includeRevoked bool) ([]Key, error) {
	if err := validOrg(org); err != nil {
		return nil, err
	}
	if env != "" && !ValidEnvironment(env) {
		return nil, fmt.Errorf("%w: environment %q", ErrInvalidRequest, env)
	}
	items, err := k.table.Query(ctx, store.Query{PK: orgPartition(org), Prefix: skKeyPrefix})
	if err != nil {
		return nil, fmt.Errorf("apikey: list keys of organisation %s: %w", org, err)
	}
	keys := make([]Key, 0, len(items))
	for _, it := range items {
		key := keyFromItem(it)
		if (env != "" && key.Environment != env) || (key.Revoked && !includeRevoked) {
			continue
		}
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.KeyID, b.KeyID)
	})
	return keys, nil
}

// Wait blocks until the last_used_at writes started so far are done, or ctx ends. Call it on
// shutdown, and on Lambda after each invocation, before the instance may be frozen.
func (k *Keys) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		k.pending.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("apikey: wait for last_used_at writes: %w", ctx.Err())
	}
}

// touch records a use of the key, at most once per touchEvery per process (see the package
// doc). The write runs in the background and only moves last_used_at forward.
func (k *Keys) touch(ctx context.Context, p Principal) {
	now := k.clock.Now().UTC()
	k.mu.Lock()
	if last, ok := k.touched[p.KeyID]; ok && now.Sub(last) < k.touchEvery && !now.Before(last) {
		k.mu.Unlock()
		return
	}
	k.touched[p.KeyID] = now
	k.pruneLocked(now)
	k.pending.Add(1)
	k.mu.Unlock()

	stamp := formatTime(now)
	log := loggerFrom(ctx, k.log)
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer k.pending.Done()
		ctx, cancel := context.WithTimeout(ctx, touchTimeout)
		defer cancel()
		_, err := k.table.Update(ctx, listingKey(p.OrgID, p.KeyID),
			store.Update{Set: map[string]any{attrLastUsedAt: stamp}},
			store.And(store.IfExists(), store.Or(store.IfAttrNotExists(attrLastUsedAt), store.IfLess(attrLastUsedAt, stamp))))
		if err != nil && !errors.Is(err, store.ErrConditionFailed) {
			// The request has succeeded regardless: last_used_at is a convenience.
			log.LogAttrs(ctx, slog.LevelWarn, "apikey: record last use failed",
				slog.String("key_id", p.KeyID), slog.String("error", err.Error()))
		}
	}()
}

// pruneThreshold is the size of the touch map past which entries older than an interval are
// dropped, so the map stays about as large as the set of keys in use.
const pruneThreshold = 4096

func (k *Keys) pruneLocked(now time.Time) {
	if len(k.touched) < pruneThreshold {
		return
	}
	for id, at := range k.touched {
		if now.Sub(at) >= k.touchEvery {
			delete(k.touched, id)
		}
	}
}

// transact runs ops, retrying a transaction refused for a collision with another write.
func (k *Keys) transact(ctx context.Context, ops []store.Op) error {
	var err error
	for range maxRetries {
		if err = k.table.TransactWrite(ctx, ops); !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return err
}

// ValidEnvironment tells whether env is one of the two environments of docs/api.md §1.
func ValidEnvironment(env string) bool { return env == Live || env == Sandbox }

func validOrg(org string) error {
	if org == "" {
		return fmt.Errorf("%w: empty organisation id", ErrInvalidRequest)
	}
	return nil
}

func hashOf(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

func formatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(TimeFormat, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// ForgetAddress removes an erased person's address from the keys of org they made
// (created_by_email; docs/privacy.md §6).
func (k *Keys) ForgetAddress(ctx context.Context, org, email string) error {
	return store.ForgetValue(ctx, k.table, store.Query{PK: pkOrgPrefix + org, Prefix: skKeyPrefix}, email, nil)
}
