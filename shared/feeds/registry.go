package feeds

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/netguard"
	"github.com/roadevents/roadevents/shared/store"
)

// Registry limits (docs/interop.md §13).
const (
	// MaxPerOrg bounds the feeds of one organisation, deleted ones still ending not counted.
	MaxPerOrg = 20
	// MinInterval and MaxInterval bound a feed's poll interval.
	MinInterval = 60 * time.Second
	MaxInterval = 24 * time.Hour
	// DefaultInterval is the interval of a feed registered without one.
	DefaultInterval = 5 * time.Minute
	// MaxURLLen, MaxNameLen and MaxLicenseLen bound the registered text.
	MaxURLLen     = 2048
	MaxNameLen    = 100
	MaxLicenseLen = 500
	// Lease is how long a poll holds its feed: no other poller takes it meanwhile, and a
	// poller that died holding it gives it up when it passes.
	Lease = 5 * time.Minute
)

// Audit actions of the registry (docs/api.md §10.3).
const (
	ActionFeedCreated = "feed.created"
	ActionFeedUpdated = "feed.updated"
	ActionFeedDeleted = "feed.deleted"
)

// Errors of the registry. Check them with errors.Is.
var (
	ErrNotFound = errors.New("feeds: feed not found in this organisation")
	ErrInvalid  = errors.New("feeds: invalid feed")
	ErrCap      = errors.New("feeds: the organisation has as many feeds as it may")
	// ErrBusy is a feed that changed while a request ran; the request may be retried.
	ErrBusy = errors.New("feeds: the feed changed while this request ran")
)

// Registered is a feed as its organisation registered it, with its schedule and health
// (docs/interop.md §13).
type Registered struct {
	Feed
	Name           string
	Interval       time.Duration
	Paused         bool
	CreatedAt      time.Time
	CreatedByEmail string
	UpdatedAt      time.Time
	// Deleted: its owner removed it; the next poll ends its events and forgets it.
	Deleted bool
	// NextPollAt is when the feed is due; LeaseUntil, while a poll holds it.
	NextPollAt, LeaseUntil time.Time
	// LastPollAt, LastSuccessAt and LastErrorAt are when polls ran, read a document (or
	// learnt it was unchanged), and failed; LastError says why the last one failed, empty once
	// a poll succeeds again.
	LastPollAt, LastSuccessAt, LastErrorAt time.Time
	LastError                              string
	// Last is what the last poll did.
	Last Health
	// Active counts the records of the last document read that have an event.
	Active int
	// Imported, Skipped and Ended add up every poll since the feed was registered: records
	// that created or revised an event, records that could not be ours, events ended.
	Imported, Skipped, Ended int64
	rev                      int64
}

// Draft is what an owner sends to register a feed or to change one: nil fields are left
// as they are (on registration, URL and Format are required and the rest take defaults).
type Draft struct {
	Name, URL, Format, Environment, License *string
	Interval                                *time.Duration
	Paused                                  *bool
}

// Actor is who changes a feed, for the audit log.
type Actor struct {
	UserID, Email string
}

// Registry keeps the feeds of every organisation, their schedule, state and health.
//
// # Storage layout
//
//	pk "feed#registry"  sk "feed#<org_id>#<feed_id>"   the feed, its schedule and its health
//	pk "feed#registry"  sk "state#<org_id>#<feed_id>"  what its last poll hands the next (State)
//	pk "feed#registry"  sk "count#<org_id>"            how many feeds the organisation has
//
// One partition holds every feed, so the poller finds the due ones with one query on
// either store (docs/architecture.md §2); an organisation lists its own by prefix. The
// state is apart, so that listing reads no event ids.
type Registry struct {
	table store.Table
	audit *audit.Log
	clock clock.Clock
}

// NewRegistry returns the registry on table, writing its changes to log.
func NewRegistry(table store.Table, log *audit.Log, c clock.Clock) *Registry {
	if c == nil {
		c = clock.System
	}
	return &Registry{table: table, audit: log, clock: c}
}

const (
	partition = "feed#registry"
	skFeed    = "feed#"
	skState   = "state#"
	skCount   = "count#"
)

// Item attributes.
const (
	attrFeedID, attrOrg, attrName, attrURL, attrFormat, attrEnv, attrLicense = "feed_id", "org_id", "name", "url", "format", "environment", "license"
	attrInterval, attrPaused, attrCreatedAt, attrCreatedBy, attrUpdatedAt    = "interval_s", "paused", "created_at", "created_by_email", "updated_at"
	attrDeleted, attrNext, attrLease, attrRev                                = "deleted", "next_poll_at", "lease_until", "rev"
	attrLastPoll, attrLastSuccess, attrLastErrorAt, attrLastError            = "last_poll_at", "last_success_at", "last_error_at", "last_error"
	attrLastCreated, attrLastRevised, attrLastUnchanged                      = "last_created", "last_revised", "last_unchanged"
	attrLastSkipped, attrLastEnded, attrLastNotModified, attrActive          = "last_skipped", "last_ended", "last_not_modified", "active"
	attrImported, attrSkipped, attrEnded                                     = "imported", "skipped", "ended"
	attrETag, attrLastModified, attrKnown, attrStateURL                      = "etag", "last_modified", "known", "state_url"
	attrCount                                                                = "feeds"
)

func feedKey(org, id string) store.Key { return store.Key{PK: partition, SK: skFeed + org + "#" + id} }
func stateKey(org, id string) store.Key {
	return store.Key{PK: partition, SK: skState + org + "#" + id}
}
func countKey(org string) store.Key { return store.Key{PK: partition, SK: skCount + org} }

// Create registers a feed of org from d, due at once, and writes it to the audit log.
func (r *Registry) Create(ctx context.Context, org string, a Actor, d Draft) (Registered, error) {
	if d.URL == nil || d.Format == nil {
		return Registered{}, fmt.Errorf("%w: url and format are required", ErrInvalid)
	}
	now := r.clock.Now().UTC()
	f := Registered{
		Feed:     Feed{ID: "fd_" + strings.ToLower(rand.Text()[:16]), Org: org, Environment: "sandbox"},
		Interval: DefaultInterval, CreatedAt: now, CreatedByEmail: a.Email, UpdatedAt: now, NextPollAt: now,
	}
	if err := f.apply(d); err != nil {
		return Registered{}, err
	}
	op, _, err := r.audit.PutOp(org, ActionFeedCreated, a.UserID, a.Email, f.ID, f.auditDetail())
	if err != nil {
		return Registered{}, err
	}
	// The count goes up in the same transaction, on condition that it is below the cap, so
	// that registrations at once cannot pass it.
	err = r.table.TransactWrite(ctx, []store.Op{
		store.CountUpOp(countKey(org), attrCount, MaxPerOrg),
		store.PutOp(f.item(), store.IfNotExists()),
		op,
	})
	var ce *store.ConditionError
	switch {
	case errors.As(err, &ce) && ce.Op == 0:
		return Registered{}, fmt.Errorf("%w (%d)", ErrCap, MaxPerOrg)
	case errors.Is(err, store.ErrConflict):
		return Registered{}, fmt.Errorf("%w: a registration of %s at the same moment", ErrBusy, org)
	case err != nil:
		return Registered{}, fmt.Errorf("feeds: register a feed of %s: %w", org, err)
	}
	return f, nil
}

// List returns org's feeds, oldest first; deleted ones are gone from it.
func (r *Registry) List(ctx context.Context, org string) ([]Registered, error) {
	items, err := r.table.Query(ctx, store.Query{PK: partition, Prefix: skFeed + org + "#"})
	if err != nil {
		return nil, fmt.Errorf("feeds: list the feeds of %s: %w", org, err)
	}
	out := []Registered{}
	for _, it := range items {
		if f := registeredFrom(it); !f.Deleted {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b Registered) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// validID tells whether id has the shape of a feed id, so that a malformed one is not found
// without a read (and never reaches the table's key limits).
var validID = regexp.MustCompile(`^fd_[a-z2-7]{16}$`).MatchString

// Get returns org's feed id; ErrNotFound when it is not org's, or deleted.
func (r *Registry) Get(ctx context.Context, org, id string) (Registered, error) {
	if !validID(id) {
		return Registered{}, fmt.Errorf("%w: a malformed id", ErrNotFound)
	}
	it, err := r.table.Get(ctx, feedKey(org, id))
	if errors.Is(err, store.ErrNotFound) {
		return Registered{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Registered{}, fmt.Errorf("feeds: read feed %s: %w", id, err)
	}
	f := registeredFrom(it)
	if f.Deleted {
		return Registered{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return f, nil
}

// Update changes org's feed id as d says and writes the change to the audit log. A feed whose
// URL, format, interval or pause changes is due at once (a paused one is never due).
func (r *Registry) Update(ctx context.Context, org, id string, a Actor, d Draft) (Registered, error) {
	f, err := r.Get(ctx, org, id)
	if err != nil {
		return Registered{}, err
	}
	before := f
	if d.Environment != nil && *d.Environment != f.Environment {
		return Registered{}, fmt.Errorf("%w: a feed's environment is fixed", ErrInvalid)
	}
	if err := f.apply(d); err != nil {
		return Registered{}, err
	}
	changed := f.changes(before)
	if len(changed) == 0 {
		return f, nil
	}
	now := r.clock.Now().UTC()
	f.UpdatedAt = now
	if f.URL != before.URL || f.Format != before.Format || f.Interval != before.Interval || f.Paused != before.Paused {
		f.NextPollAt = now
	}
	detail := f.auditDetail()
	detail["changed"] = changed
	op, _, err := r.audit.PutOp(org, ActionFeedUpdated, a.UserID, a.Email, f.ID, detail)
	if err != nil {
		return Registered{}, err
	}
	set := map[string]any{
		attrName: f.Name, attrURL: f.URL, attrFormat: string(f.Format), attrEnv: f.Environment, attrLicense: f.License,
		attrInterval: int64(f.Interval / time.Second), attrPaused: f.Paused, attrUpdatedAt: store.FormatTime(now),
		attrNext: store.FormatTime(f.NextPollAt),
	}
	err = r.table.TransactWrite(ctx, []store.Op{
		store.UpdateOp(feedKey(org, id), store.Update{Set: set, Add: map[string]int64{attrRev: 1}},
			store.And(store.IfEqual(attrRev, before.rev), store.IfEqual(attrDeleted, false))),
		op,
	})
	if errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrConflict) {
		return Registered{}, fmt.Errorf("%w: %s", ErrBusy, id)
	}
	if err != nil {
		return Registered{}, fmt.Errorf("feeds: change feed %s: %w", id, err)
	}
	f.rev++
	return f, nil
}

// Delete removes org's feed id: it leaves the organisation's list at once, and the next poll
// ends the events of its records and forgets it (docs/interop.md §13).
func (r *Registry) Delete(ctx context.Context, org, id string, a Actor) error {
	f, err := r.Get(ctx, org, id)
	if err != nil {
		return err
	}
	op, _, err := r.audit.PutOp(org, ActionFeedDeleted, a.UserID, a.Email, f.ID, f.auditDetail())
	if err != nil {
		return err
	}
	now := store.FormatTime(r.clock.Now())
	err = r.table.TransactWrite(ctx, []store.Op{
		store.UpdateOp(feedKey(org, id), store.Update{
			Set: map[string]any{attrDeleted: true, attrUpdatedAt: now, attrNext: now},
			Add: map[string]int64{attrRev: 1},
		}, store.IfEqual(attrDeleted, false)),
		store.CountDownOp(countKey(org), attrCount),
		op,
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("feeds: delete feed %s: %w", id, err)
	}
	return nil
}

// PollNow makes org's feed id due at once, unless it is paused: one conditional write, which
// answers the feed as it then is.
func (r *Registry) PollNow(ctx context.Context, org, id string) (Registered, error) {
	if !validID(id) {
		return Registered{}, fmt.Errorf("%w: a malformed id", ErrNotFound)
	}
	it, err := r.table.Update(ctx, feedKey(org, id), store.Update{Set: map[string]any{attrNext: store.FormatTime(r.clock.Now())}},
		store.IfEqual(attrDeleted, false))
	if errors.Is(err, store.ErrConditionFailed) {
		return Registered{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Registered{}, fmt.Errorf("feeds: schedule feed %s: %w", id, err)
	}
	return registeredFrom(it), nil
}

// Due returns every feed due at now: not paused, its time come, no poll holding it. Deleted
// feeds are due until a poll has ended their events.
func (r *Registry) Due(ctx context.Context, now time.Time) ([]Registered, error) {
	items, err := r.table.Query(ctx, store.Query{PK: partition, Prefix: skFeed})
	if err != nil {
		return nil, fmt.Errorf("feeds: list the due feeds: %w", err)
	}
	var out []Registered
	for _, it := range items {
		f := registeredFrom(it)
		if (f.Deleted || !f.Paused) && !f.NextPollAt.After(now) && !f.LeaseUntil.After(now) {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b Registered) int { return a.NextPollAt.Compare(b.NextPollAt) })
	return out, nil
}

// Claim takes f for a poll at now, unless another poller took it or it changed since it
// was read; false then.
func (r *Registry) Claim(ctx context.Context, f Registered, now time.Time) (bool, error) {
	_, err := r.table.Update(ctx, feedKey(f.Org, f.ID),
		store.Update{Set: map[string]any{attrLease: store.FormatTime(now.Add(Lease))}},
		store.And(store.IfEqual(attrRev, f.rev), store.Or(store.IfAttrNotExists(attrLease), store.IfLessEqual(attrLease, store.FormatTime(now)))))
	if errors.Is(err, store.ErrConditionFailed) {
		return false, nil
	}
	return err == nil, err
}

// LoadState reads what f's last poll handed on; empty before the first, or when the feed's
// URL changed since (its validators then say nothing of the new address).
func (r *Registry) LoadState(ctx context.Context, f Registered) (State, error) {
	st := State{Known: map[string]bool{}}
	it, err := r.table.Get(ctx, stateKey(f.Org, f.ID))
	if errors.Is(err, store.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("feeds: read the state of feed %s: %w", f.ID, err)
	}
	for _, id := range it.Strings(attrKnown) {
		st.Known[id] = true
	}
	if it.String(attrStateURL) == f.URL {
		st.Validators = Validators{ETag: it.String(attrETag), LastModified: it.String(attrLastModified)}
	}
	return st, nil
}

// Record writes what a poll of f did: its state, its health, the next time it is due, and
// releases it. A feed changed while it was polled keeps its new settings and schedule.
func (r *Registry) Record(ctx context.Context, f Registered, st State, h Health) error {
	known := make([]string, 0, len(st.Known))
	for id := range st.Known {
		known = append(known, id)
	}
	slices.Sort(known)
	stateItem := store.Item{store.AttrPK: partition, store.AttrSK: stateKey(f.Org, f.ID).SK,
		attrETag: st.Validators.ETag, attrLastModified: st.Validators.LastModified, attrStateURL: f.URL}
	if len(known) > 0 {
		stateItem[attrKnown] = known
	}
	at := store.FormatTime(h.At)
	set := map[string]any{
		attrLastPoll: at, attrLastCreated: int64(h.Created), attrLastRevised: int64(h.Revised),
		attrLastUnchanged: int64(h.Unchanged), attrLastSkipped: int64(h.Skipped), attrLastEnded: int64(h.Ended),
		attrLastNotModified: h.NotModified, attrActive: int64(len(known)),
	}
	if h.Err != "" {
		set[attrLastError], set[attrLastErrorAt] = h.Err, at
	} else {
		set[attrLastSuccess] = at
	}
	update := store.Update{Set: set, Remove: []string{attrLease}, Add: map[string]int64{
		attrImported: int64(h.Created + h.Revised), attrSkipped: int64(h.Skipped), attrEnded: int64(h.Ended),
	}}
	if h.Err == "" {
		update.Remove = append(update.Remove, attrLastError)
	}
	ops := []store.Op{store.PutOp(stateItem, store.Condition{})}
	// The schedule moves on only when the settings are those the poll ran with.
	sched := update
	sched.Set = maps.Clone(set)
	sched.Set[attrNext] = store.FormatTime(h.At.Add(f.Interval))
	err := r.table.TransactWrite(ctx, append(ops, store.UpdateOp(feedKey(f.Org, f.ID), sched, store.IfEqual(attrRev, f.rev))))
	if errors.Is(err, store.ErrConditionFailed) {
		err = r.table.TransactWrite(ctx, append(ops, store.UpdateOp(feedKey(f.Org, f.ID), update, store.IfExists())))
	}
	if err != nil {
		return fmt.Errorf("feeds: record the poll of feed %s: %w", f.ID, err)
	}
	return nil
}

// Forget removes a deleted feed once its events are ended.
func (r *Registry) Forget(ctx context.Context, f Registered) error {
	err := r.table.TransactWrite(ctx, []store.Op{
		store.DeleteOp(stateKey(f.Org, f.ID), store.Condition{}),
		store.DeleteOp(feedKey(f.Org, f.ID), store.IfEqual(attrDeleted, true)),
	})
	if err != nil && !errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("feeds: forget feed %s: %w", f.ID, err)
	}
	return nil
}

// apply writes d's fields into f, checking each (docs/interop.md §13).
func (f *Registered) apply(d Draft) error {
	if d.Name != nil {
		if n := utf8.RuneCountInString(*d.Name); n > MaxNameLen {
			return fmt.Errorf("%w: name of %d characters", ErrInvalid, n)
		}
		f.Name = *d.Name
	}
	if d.URL != nil {
		if err := CheckURL(*d.URL); err != nil {
			return err
		}
		f.URL = *d.URL
	}
	if d.Format != nil {
		if !slices.Contains(interop.Formats, interop.Format(*d.Format)) {
			return fmt.Errorf("%w: format %q", ErrInvalid, *d.Format)
		}
		f.Format = interop.Format(*d.Format)
	}
	if d.Environment != nil {
		if *d.Environment != "live" && *d.Environment != "sandbox" {
			return fmt.Errorf("%w: environment %q", ErrInvalid, *d.Environment)
		}
		f.Environment = *d.Environment
	}
	if d.License != nil {
		if n := utf8.RuneCountInString(*d.License); n > MaxLicenseLen {
			return fmt.Errorf("%w: licence of %d characters", ErrInvalid, n)
		}
		f.License = *d.License
	}
	if d.Interval != nil {
		if *d.Interval < MinInterval || *d.Interval > MaxInterval || *d.Interval%time.Second != 0 {
			return fmt.Errorf("%w: poll interval %s", ErrInvalid, *d.Interval)
		}
		f.Interval = *d.Interval
	}
	if d.Paused != nil {
		f.Paused = *d.Paused
	}
	return nil
}

// CheckURL refuses a feed URL the fetcher would: not absolute http(s), with credentials in
// it, or too long (netguard.CheckURL).
func CheckURL(raw string) error {
	if err := netguard.CheckURL(raw, MaxURLLen, "https", "http"); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// changes names the settings f changed from before.
func (f Registered) changes(before Registered) []string {
	var out []string
	add := func(name string, differs bool) {
		if differs {
			out = append(out, name)
		}
	}
	add("name", f.Name != before.Name)
	add("url", f.URL != before.URL)
	add("format", f.Format != before.Format)
	add("environment", f.Environment != before.Environment)
	add("license", f.License != before.License)
	add("poll_interval_s", f.Interval != before.Interval)
	add("paused", f.Paused != before.Paused)
	return out
}

// auditDetail says which feed an entry is about: its address without query or fragment,
// which may hold an access token.
func (f Registered) auditDetail() map[string]any {
	return map[string]any{"name": f.Name, "format": string(f.Format), "environment": f.Environment, "address": netguard.Address(f.URL)}
}

func (f Registered) item() store.Item {
	it := store.Item{
		store.AttrPK: partition, store.AttrSK: feedKey(f.Org, f.ID).SK,
		attrFeedID: f.ID, attrOrg: f.Org, attrName: f.Name, attrURL: f.URL, attrFormat: string(f.Format),
		attrEnv: f.Environment, attrLicense: f.License, attrInterval: int64(f.Interval / time.Second), attrPaused: f.Paused,
		attrCreatedAt: store.FormatTime(f.CreatedAt), attrCreatedBy: f.CreatedByEmail, attrUpdatedAt: store.FormatTime(f.UpdatedAt),
		attrDeleted: false, attrNext: store.FormatTime(f.NextPollAt), attrRev: f.rev,
	}
	return it
}

func registeredFrom(it store.Item) Registered {
	f := Registered{
		Feed: Feed{ID: it.String(attrFeedID), Org: it.String(attrOrg), Environment: it.String(attrEnv), URL: it.String(attrURL),
			Format: interop.Format(it.String(attrFormat)), License: it.String(attrLicense)},
		Name: it.String(attrName), Interval: time.Duration(it.Int(attrInterval)) * time.Second, Paused: it.Bool(attrPaused),
		CreatedAt: it.Time(attrCreatedAt), CreatedByEmail: it.String(attrCreatedBy), UpdatedAt: it.Time(attrUpdatedAt),
		Deleted: it.Bool(attrDeleted), NextPollAt: it.Time(attrNext), LeaseUntil: it.Time(attrLease),
		LastPollAt: it.Time(attrLastPoll), LastSuccessAt: it.Time(attrLastSuccess), LastErrorAt: it.Time(attrLastErrorAt),
		LastError: it.String(attrLastError), Active: int(it.Int(attrActive)),
		Imported: it.Int(attrImported), Skipped: it.Int(attrSkipped), Ended: it.Int(attrEnded), rev: it.Int(attrRev),
	}
	f.Last = Health{At: f.LastPollAt, NotModified: it.Bool(attrLastNotModified),
		Created: int(it.Int(attrLastCreated)), Revised: int(it.Int(attrLastRevised)), Unchanged: int(it.Int(attrLastUnchanged)),
		Skipped: int(it.Int(attrLastSkipped)), Ended: int(it.Int(attrLastEnded))}
	if f.LastError != "" && !f.LastErrorAt.Before(f.LastPollAt) {
		f.Last.Err = f.LastError
	}
	return f
}

// ForgetAddress removes an erased person's address from the feeds of org they registered
// (created_by_email; docs/privacy.md §6).
func (r *Registry) ForgetAddress(ctx context.Context, org, email string) error {
	return store.ForgetValue(ctx, r.table, store.Query{PK: partition, Prefix: skFeed + org + "#"}, email, nil)
}

// RemoveOrg removes the feeds of an organisation being deleted, their state and count
// (docs/privacy.md §6), without ending their events: those stay on the network until they
// expire, as the organisation's other events do.
func (r *Registry) RemoveOrg(ctx context.Context, org string) error {
	for _, prefix := range []string{skFeed + org + "#", skState + org + "#"} {
		if err := store.DeleteSelected(ctx, r.table, store.Query{PK: partition, Prefix: prefix}); err != nil {
			return fmt.Errorf("feeds: remove the feeds of %s: %w", org, err)
		}
	}
	return store.DeleteKeys(ctx, r.table, []store.Key{countKey(org)})
}
