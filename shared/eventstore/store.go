package eventstore

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/store"
)

// Defaults of Options.
const (
	// DefaultRetention is how long an event's items are kept past the latest moment it can
	// leave active (docs/api.md §10.2 asks for at least 7 days).
	DefaultRetention = 14 * 24 * time.Hour
	// DefaultMaxEventsPerQuery is the silent cap of an area query (docs/api.md §8).
	DefaultMaxEventsPerQuery = 500
	// DefaultMaxRadius is the widest area query (docs/api.md §8, max_query_radius_m).
	DefaultMaxRadius = 9780.0
	// DefaultParallelism is how many index partitions one query reads at once.
	DefaultParallelism = 16
	// MinIDKeyBytes is the shortest key Options.IDKey may be: event ids derived from it must
	// not be predictable (docs/api.md §10.2).
	MinIDKeyBytes = 16
)

// maxAttempts bounds the tries of one change of an event that keeps colliding with changes
// made by other processes (optimistic concurrency on the event's version). Within a process,
// changes of one event are serialised (Store.lock) and never collide.
const maxAttempts = 50

// Errors of the package, besides ErrExtentTooLarge. Check them with errors.Is; the lifecycle's
// own errors (event.ErrReplayDiffers, event.ErrOtherEnvironment, and event.ErrOver inside an
// *OverError) and schema.Errors come through.
var (
	// ErrNotFound is returned for an unknown or malformed event id, and for an event the
	// caller's network is not served (docs/api.md §4.1 rule 4: 404, never 403).
	ErrNotFound = errors.New("events: event not found")
	// ErrNotPublisher is returned by Revise for another organisation's event
	// (docs/api.md §4.1 rule 5, docs/api.md §7: 403).
	ErrNotPublisher = errors.New("events: only the publishing organisation may revise an event")
	// ErrOtherNetwork is returned by Revise for the caller's own event under a credential of the
	// other environment, and by Signal for a sandbox credential on a live event (docs/api.md §1: a
	// sandbox credential may read but not vote on or revise live events; docs/api.md §7: 403).
	ErrOtherNetwork = errors.New("events: the event belongs to the other environment")
	// ErrThrottled is returned (in a *ThrottledError) by Signal past the organisation's
	// hourly signal ceiling (docs/api.md §8: 429 with Retry-After).
	ErrThrottled = errors.New("events: hourly signal ceiling reached")
	// ErrBusy is returned when a change of an event lost to concurrent changes maxAttempts
	// times in a row; the client may retry (5xx).
	ErrBusy = errors.New("events: the event kept changing under concurrent writes")
	// ErrInvalidQuery is returned by Area for a query the HTTP layer should have refused
	// (radius not in (0, MaxRadius], invalid centre).
	ErrInvalidQuery = errors.New("events: invalid area query")
)

// OverError is event.ErrOver with the status the event is in (docs/api.md §3: expired, invalidated
// or merged), for the 409's sentence.
type OverError struct {
	Status string
	Err    error // wraps event.ErrOver
}

// Error describes the refusal.
func (e *OverError) Error() string { return fmt.Sprintf("%v (status %s)", e.Err, e.Status) }

// Unwrap makes errors.Is(err, event.ErrOver) true.
func (e *OverError) Unwrap() error { return e.Err }

// ThrottledError is a signal refused by the ceiling.
type ThrottledError struct {
	// RetryAfter is the time left in the ceiling's window (docs/api.md §10.2: at least a second).
	RetryAfter time.Duration
}

// Error describes the refusal.
func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%v: retry after %s", ErrThrottled, e.RetryAfter)
}

// Unwrap makes errors.Is(err, ErrThrottled) true.
func (e *ThrottledError) Unwrap() error { return ErrThrottled }

// Ceiling is the signal ceiling (docs/api.md §8); *ratelimit.Signals is one.
type Ceiling interface {
	Allow(ctx context.Context, org, env string, now time.Time) (ok bool, retryAfter time.Duration, err error)
}

var _ Ceiling = (*ratelimit.Signals)(nil)

// Caller is who asks: the organisation and environment of the credential (docs/api.md §1: always
// derived server-side from the credential).
type Caller struct {
	Org         string
	Environment string // event.EnvironmentLive or event.EnvironmentSandbox
}

// sees tells whether the caller is served events of environment env (docs/api.md §1: a live
// credential sees live events only, a sandbox credential both).
func (c Caller) sees(env string) bool {
	return c.Environment == event.EnvironmentSandbox || env == event.EnvironmentLive
}

// environments lists the environments the caller is served.
func (c Caller) environments() []string {
	if c.Environment == event.EnvironmentSandbox {
		return []string{event.EnvironmentLive, event.EnvironmentSandbox}
	}
	return []string{event.EnvironmentLive}
}

// Options configure a Store.
type Options struct {
	// IDKey is the HMAC key of event ids derived from client_event_id (docs/api.md §10.2); at least
	// MinIDKeyBytes. Every process serving one table must share it, or a retried publish
	// would not find its event.
	IDKey []byte
	// Ceiling is the signal ceiling; nil applies none.
	Ceiling Ceiling
	// Clock decides expiry and stamps events; clock.System when nil. Give the table's clock.
	Clock clock.Clock
	// Logger receives what a request cannot report: unreadable index records. slog.Default()
	// when nil.
	Logger *slog.Logger
	// Retention: DefaultRetention when 0 or less.
	Retention time.Duration
	// MaxEventsPerQuery: DefaultMaxEventsPerQuery when 0 or less.
	MaxEventsPerQuery int
	// MaxRadius: DefaultMaxRadius when 0 or less.
	MaxRadius float64
	// Parallelism: DefaultParallelism when 0 or less.
	Parallelism int
	// CacheBytes, when above 0, keeps up to that many bytes of decoded area index partitions
	// in memory (cache.go). Only for a Store that is the only writer of its table's area
	// index, in the only process writing it: the embedded store of `go run .`. 0 reads the
	// table for every query, as several processes sharing DynamoDB must.
	CacheBytes int64
	// SoleWriter says that this Store is the only writer of its table, in the only process
	// writing it: the embedded store of `go run .`. Its own locks then decide merge races
	// exactly, and it writes no merge guards (merge.go). Processes sharing DynamoDB must leave
	// it false.
	SoleWriter bool
	// ListApart writes a new event's entry in its publisher's list (which a verdict reads) on
	// its own before the publish transaction instead of inside it: for a table that bills each
	// member of a transaction as two writes (DynamoDB, docs/operations.md §5), where the entry,
	// which needs no atomicity, then costs one write unit instead of two, for one more round
	// trip. Elsewhere the entry rides in the transaction: one commit and one sync per publish
	// instead of two, which halves what a publish waits for on the embedded store
	// (docs/performance.md §6).
	ListApart bool
	// Judge hears of every event ended by deny quorum, once it is stored, to judge its
	// publisher (docs/network.md §2); nil judges nobody.
	Judge Judge
}

// Judge decides whether a publisher's events should stand, told when one of them was ended
// by deny quorum (docs/network.md §2). It runs within the signal's request and reports its own
// failures: the signal is stored whatever it does.
type Judge interface {
	Denied(ctx context.Context, org, env string)
}

// Store keeps road events on a table: the events, their votes and the area index. It is safe
// for concurrent use.
type Store struct {
	table       store.Table
	idKey       []byte
	reporterKey []byte
	ceiling     Ceiling
	clock       clock.Clock
	log         *slog.Logger
	retention   time.Duration
	maxPerQuery int
	maxRadius   float64
	parallelism int

	cache      *partCache       // nil without Options.CacheBytes
	covers     *partitionCovers // the partitions queries read through cache (coverOf)
	judge      Judge
	soleWriter bool
	listApart  bool

	seed   maphash.Seed
	locks  [1024]sync.Mutex
	guards guardLocks
}

// New returns the event store on table. It fails when opts.IDKey is too short.
func New(table store.Table, opts Options) (*Store, error) {
	if len(opts.IDKey) < MinIDKeyBytes {
		return nil, fmt.Errorf("events: an id key of at least %d bytes is needed, got %d", MinIDKeyBytes, len(opts.IDKey))
	}
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.MaxEventsPerQuery <= 0 {
		opts.MaxEventsPerQuery = DefaultMaxEventsPerQuery
	}
	if opts.MaxRadius <= 0 {
		opts.MaxRadius = DefaultMaxRadius
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = DefaultParallelism
	}
	var cache *partCache
	if opts.CacheBytes > 0 {
		cache = newPartCache(opts.CacheBytes)
	}
	return &Store{
		cache:       cache,
		covers:      newPartitionCovers(),
		table:       table,
		idKey:       slices.Clone(opts.IDKey),
		reporterKey: reporterKeyOf(opts.IDKey),
		ceiling:     opts.Ceiling,
		clock:       opts.Clock,
		log:         opts.Logger,
		retention:   opts.Retention,
		maxPerQuery: opts.MaxEventsPerQuery,
		maxRadius:   opts.MaxRadius,
		parallelism: opts.Parallelism,
		judge:       opts.Judge,
		soleWriter:  opts.SoleWriter,
		listApart:   opts.ListApart,
		seed:        maphash.MakeSeed(),
		guards:      guardLocks{seed: maphash.MakeSeed()},
	}, nil
}

// lock serialises the changes of one event within this process, so that concurrent signals
// on a busy event queue here instead of failing each other's version condition; other
// processes (other Lambdas) are still held off by that condition. Events share 1024 locks.
func (s *Store) lock(id string) func() {
	m := &s.locks[maphash.String(s.seed, id)%uint64(len(s.locks))]
	m.Lock()
	return m.Unlock
}

// load reads an event and the cells its index items are under.
func (s *Store) load(ctx context.Context, id string) (event.Event, []h3.Cell, error) {
	it, err := s.table.Get(ctx, EventKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return event.Event{}, nil, fmt.Errorf("event %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return event.Event{}, nil, fmt.Errorf("read event %s: %w", id, err)
	}
	return decodeEvent(it)
}

// Get returns event id as the caller may read it, in any status (docs/api.md §4.1 rule 4). An
// unknown or malformed id, or an event of a network the caller is not served, is ErrNotFound.
func (s *Store) Get(ctx context.Context, c Caller, id string) (event.Event, error) {
	if !event.ValidID(id) {
		return event.Event{}, fmt.Errorf("event id %q: %w", id, ErrNotFound)
	}
	ev, _, err := s.load(ctx, id)
	if err != nil {
		return event.Event{}, err
	}
	if !c.sees(ev.Environment) {
		return event.Event{}, fmt.Errorf("event %s of %s for a %s caller: %w", id, ev.Environment, c.Environment, ErrNotFound)
	}
	return ev, nil
}

// Publish stores the event published as in by the caller (docs/api.md §4.1 rules 1 and 2) and
// returns it with created true. The event inherits the caller's environment, and its expiry comes
// from the taxonomy (event.New). in must have passed validation (event.ValidateEventIn).
//
// A report of a hazard another source already reports is stored merged into that report
// (docs/network.md §1): status merged, and one confirmation from the caller's organisation on
// the survivor. Otherwise the event is stored active, bumping its merge guards (merge.go).
//
// With a client_event_id the id is derived from (organisation, client_event_id)
// (docs/api.md §10.2), and the event item is written on condition that none exists: of concurrent
// identical publishes exactly one creates the event. When the id is taken, the stored event decides
// (event.CheckReplay): a faithful replay returns it with created false and writes nothing; other
// content is event.ErrReplayDiffers naming the first differing field, and the other environment
// event.ErrOtherEnvironment (both 409). An extent over MaxIndexCells cells is an *ExtentError.
func (s *Store) Publish(ctx context.Context, c Caller, in event.EventIn) (event.Event, bool, error) {
	// The publisher's reporter token is kept sealed, and a replay compared sealed.
	in.ReporterToken = s.sealToken(c.Org, in.ReporterToken)
	id := event.NewID()
	if in.ClientEventID != nil {
		id = event.DerivedID(s.idKey, c.Org, *in.ClientEventID)
	}
	for attempt := 1; ; attempt++ {
		ev, err := s.publishOnce(ctx, c, id, in)
		if err == nil {
			return ev, true, nil
		}
		var ce *store.ConditionError
		switch {
		case errors.As(err, &ce) && ce.Op == 0:
			stored, _, lerr := s.load(ctx, id)
			switch {
			case errors.Is(lerr, ErrNotFound):
				// It expired (TTL) between the write and the read: publish again.
			case lerr != nil:
				return event.Event{}, false, lerr
			default:
				// One published before tokens were sealed holds its token as sent.
				stored.ReporterToken = s.sealToken(stored.Org, stored.ReporterToken)
				if stored.Published != nil {
					stored.Published.ReporterToken = s.sealToken(stored.Org, stored.Published.ReporterToken)
				}
				if err := event.CheckReplay(stored, in, c.Org, c.Environment); err != nil {
					return stored, false, fmt.Errorf("publish %s: %w", id, err)
				}
				return stored, false, nil
			}
		case !collided(err):
			return event.Event{}, false, fmt.Errorf("publish %s: %w", id, err)
		}
		// A guard or the survivor changed since they were read (or the event expired): look again.
		if err := s.again(ctx, attempt, err); err != nil {
			return event.Event{}, false, fmt.Errorf("publish %s: %w", id, err)
		}
	}
}

// publishOnce makes one attempt at storing a publication: merged into the report it
// duplicates, or active. The event item is operation 0, written on condition that none
// exists.
//
// An active event is written with its index items, its merge guards and its entry in its
// publisher's list (orgItem) in one transaction. With Options.ListApart the entry is written
// first, on its own: a crash between the two then leaves a listing of an event that does not
// exist, which a verdict passes over (InvalidateOrg); the other order could leave an event a
// verdict cannot find.
func (s *Store) publishOnce(ctx context.Context, c Caller, id string, in event.EventIn) (event.Event, error) {
	now := s.clock.Now()
	return s.publishNew(ctx, event.New(in, c.Org, c.Environment, id, now), now)
}

// publishNew stores the new event ev, made at now: publishOnce's work once the event is built.
func (s *Store) publishNew(ctx context.Context, ev event.Event, now time.Time) (event.Event, error) {
	p, err := s.place(ctx, ev, now)
	if err != nil {
		return event.Event{}, err
	}
	if p.found {
		p.release()
		return s.publishMerged(ctx, ev, p.survivor.ID)
	}
	defer p.release()
	ops, err := s.changeOps(ev, store.IfNotExists(), nil, p.cells, nil, now)
	if err != nil {
		return event.Event{}, err
	}
	if s.listApart {
		if err := s.table.Put(ctx, s.orgItem(ev), store.Condition{}); err != nil {
			return event.Event{}, fmt.Errorf("list event %s: %w", ev.ID, err)
		}
	} else {
		ops = append(ops, store.PutOp(s.orgItem(ev), store.Condition{}))
	}
	ops = append(ops, guardOps(p.guards, now)...)
	return ev, s.transact(ctx, ops)
}

// publishMerged stores ev merged into survivor, which it was found to duplicate. It holds the
// survivor's lock, so that the reports merging into one hazard queue here rather than collide
// on its version.
func (s *Store) publishMerged(ctx context.Context, ev event.Event, survivor string) (event.Event, error) {
	defer s.lock(survivor)()
	merged, ops, err := s.mergeOps(ctx, ev, store.IfNotExists(), nil, survivor, s.clock.Now())
	if err != nil {
		return event.Event{}, err
	}
	return merged, s.transact(ctx, ops)
}

// Revise applies a revision by the publisher (docs/api.md §4.1 rule 5, §3) and returns the event
// as revised: the index moves to the new extent in the same transaction. A revision that makes
// the event a report of a hazard another source reports already merges it into that report
// (docs/network.md §1: the report already there survives). Errors: ErrNotFound (unknown, or
// not served to the caller's network), ErrNotPublisher and ErrOtherNetwork (403), an
// *OverError wrapping event.ErrOver (409), schema.Errors (422: the subtype must belong to the
// stored type), an *ExtentError.
func (s *Store) Revise(ctx context.Context, c Caller, id string, in event.RevisionIn) (event.Event, error) {
	if !event.ValidID(id) {
		return event.Event{}, fmt.Errorf("event id %q: %w", id, ErrNotFound)
	}
	defer s.lock(id)()
	for attempt := 1; ; attempt++ {
		ev, err := s.reviseOnce(ctx, c, id, in, nil)
		if err == nil || !collided(err) {
			return ev, err
		}
		if err := s.again(ctx, attempt, err); err != nil {
			return event.Event{}, fmt.Errorf("revise %s: %w", id, err)
		}
	}
}

// reviseOnce makes one attempt at a revision, on the event as it reads it now; adjust, when
// set, changes the revised event further before it is written (an import's expiry).
func (s *Store) reviseOnce(ctx context.Context, c Caller, id string, in event.RevisionIn, adjust func(*event.Event)) (event.Event, error) {
	ev, cells, err := s.load(ctx, id)
	if err != nil {
		return event.Event{}, err
	}
	if err := c.mayRevise(ev); err != nil {
		return event.Event{}, fmt.Errorf("revise %s: %w", id, err)
	}
	now := s.clock.Now()
	read := ev.Version
	before := ev.ExpiresAt
	if _, err := ev.Revise(in, now); err != nil {
		return event.Event{}, overError(err, ev, now)
	}
	if adjust != nil {
		adjust(&ev)
	}
	p, err := s.place(ctx, ev, now)
	if err != nil {
		return event.Event{}, err
	}
	defer p.release()
	cond := store.IfEqual(attrVersion, read)
	if p.found {
		merged, ops, err := s.mergeOps(ctx, ev, cond, cells, p.survivor.ID, now)
		if err != nil {
			return event.Event{}, err
		}
		eop, err := s.entryOp(merged, event.Entry{At: now.UTC(), Kind: event.EntryMerged, Duplicate: p.survivor.ID,
			ExpiresBefore: before, ExpiresAfter: merged.ExpiresAt, Ended: true})
		if err != nil {
			return event.Event{}, err
		}
		ops = append(ops, eop)
		// When both extents are so long that the merge does not fit one transaction, the
		// revision stands on its own (docs/network.md §1).
		if len(ops) <= store.MaxTransactOps {
			return merged, s.transact(ctx, ops)
		}
	}
	ops, err := s.changeOps(ev, cond, cells, p.cells, nil, now)
	if err != nil {
		return event.Event{}, err
	}
	eop, err := s.entryOp(ev, event.Entry{At: now.UTC(), Kind: event.EntryRevision, ExpiresBefore: before, ExpiresAfter: ev.ExpiresAt})
	if err != nil {
		return event.Event{}, err
	}
	ops = append(ops, eop)
	// A revision moving a long extent far may leave no room for the guards; it is then
	// written without them (docs/network.md §1).
	if g := guardOps(p.guards, now); len(ops)+len(g) <= store.MaxTransactOps {
		ops = append(ops, g...)
	}
	return ev, s.transact(ctx, ops)
}

// Signal applies a confirmation or denial (docs/api.md §4.1 rule 6, §3) and returns the event as
// it now stands and what the signal did. The reporter is the reporter_token, or the caller's
// organisation as a whole; its vote replaces its previous one, and the event, the vote and the
// index items (whose confidence and expiry the signal changes) are written in one transaction.
// A repeat of the standing action writes nothing (event.Unchanged).
//
// Errors: ErrNotFound (unknown, or not served to the caller), ErrOtherNetwork (a sandbox
// credential on a live event, 403), a *ThrottledError past the ceiling (429), an *OverError
// wrapping event.ErrOver (409: expired, invalidated or merged, a late denial of a cleared
// event included).
func (s *Store) Signal(ctx context.Context, c Caller, id string, in event.SignalIn) (event.Event, event.Outcome, error) {
	if !event.ValidID(id) {
		return event.Event{}, event.Unchanged, fmt.Errorf("event id %q: %w", id, ErrNotFound)
	}
	ev, outcome, err := s.signal(ctx, c, id, in)
	// The judge may invalidate this very event's siblings, each under its lock: it runs once
	// the signal's lock is released.
	if err == nil && outcome == event.Ended && s.judge != nil {
		s.judge.Denied(ctx, ev.Org, ev.Environment)
	}
	return ev, outcome, err
}

// signal is Signal under the event's lock.
func (s *Store) signal(ctx context.Context, c Caller, id string, in event.SignalIn) (event.Event, event.Outcome, error) {
	sealed, legacy := s.reporter(c.Org, in.ReporterToken)
	defer s.lock(id)()
	allowed := false
	for attempt := 1; ; attempt++ {
		ev, prev, cells, err := s.loadWithVote(ctx, id, sealed)
		if err != nil {
			return event.Event{}, event.Unchanged, err
		}
		reporter := sealed
		if prev == nil && legacy != "" && !ev.SealedReporters {
			// An event of versions before: a vote may stand under the token as sent, and the
			// reporter's signals on it are kept so, that it counts once.
			if prev, err = s.vote(ctx, id, legacy); err != nil {
				return event.Event{}, event.Unchanged, err
			}
			if prev != nil {
				reporter = legacy
			}
		}
		switch {
		case !c.sees(ev.Environment):
			return event.Event{}, event.Unchanged, fmt.Errorf("signal %s of %s for a %s caller: %w", id, ev.Environment, c.Environment, ErrNotFound)
		case ev.Environment != c.Environment:
			return event.Event{}, event.Unchanged, fmt.Errorf("signal %s of %s with a %s credential: %w", id, ev.Environment, c.Environment, ErrOtherNetwork)
		}
		if !allowed && s.ceiling != nil {
			ok, retry, err := s.ceiling.Allow(ctx, c.Org, c.Environment, s.clock.Now())
			if err != nil {
				return event.Event{}, event.Unchanged, fmt.Errorf("signal %s: ceiling: %w", id, err)
			}
			if !ok {
				return event.Event{}, event.Unchanged, fmt.Errorf("signal %s by %s: %w", id, c.Org, &ThrottledError{RetryAfter: retry})
			}
		}
		allowed = true
		now := s.clock.Now()
		read, before, corroborated := ev.Version, ev.ExpiresAt, ev.Corroborated
		vote, outcome, err := ev.Signal(reporter, prev, in.Action, now)
		if err != nil {
			return event.Event{}, event.Unchanged, overError(err, ev, now)
		}
		if outcome == event.Unchanged {
			return ev, outcome, nil
		}
		entry := event.Entry{At: now.UTC(), Kind: event.EntrySignal, Action: in.Action, Reporter: reporter,
			ExpiresBefore: before, ExpiresAfter: ev.ExpiresAt, Ended: outcome == event.Ended}
		if p := in.Position(); p != nil {
			entry.Distance = distance(*p, ev)
		}
		ops, err := s.changeOps(ev, store.IfEqual(attrVersion, read), cells, cells, &signalRecord{vote, entry}, now)
		if err != nil {
			return event.Event{}, event.Unchanged, err
		}
		if t := outcomeTally(corroborated, ev, outcome); t != (reputation.Tally{}) {
			ops = append(ops, reputation.CountOp(ev.Org, ev.Environment, t, now))
		}
		if err := s.commit(ctx, ops, attempt); err != nil {
			if errors.Is(err, errRetry) {
				continue
			}
			return event.Event{}, event.Unchanged, fmt.Errorf("signal %s: %w", id, err)
		}
		return ev, outcome, nil
	}
}

// outcomeTally is what a signal changes in the publisher's reputation (docs/network.md §2):
// a first corroboration counts for it, an end by deny quorum against it, taking back the
// corroboration it had counted.
func outcomeTally(wasCorroborated bool, ev event.Event, outcome event.Outcome) reputation.Tally {
	var t reputation.Tally
	if ev.Corroborated && !wasCorroborated {
		t.For++
	}
	if outcome == event.Ended {
		t.Against++
		if ev.Corroborated {
			t.For--
		}
	}
	return t
}

// overError wraps event.ErrOver in an *OverError naming the event's status at now; other
// errors pass unchanged.
func overError(err error, ev event.Event, now time.Time) error {
	if errors.Is(err, event.ErrOver) {
		return &OverError{Status: ev.StatusAt(now), Err: err}
	}
	return err
}

// loadWithVote reads an event and a reporter's standing vote on it (nil when none).
func (s *Store) loadWithVote(ctx context.Context, id, reporter string) (event.Event, *event.Vote, []h3.Cell, error) {
	ev, cells, err := s.load(ctx, id)
	if err != nil {
		return event.Event{}, nil, nil, err
	}
	v, err := s.vote(ctx, id, reporter)
	if err != nil {
		return event.Event{}, nil, nil, err
	}
	return ev, v, cells, nil
}

// vote reads a reporter's standing vote on event id; nil when none.
func (s *Store) vote(ctx context.Context, id, reporter string) (*event.Vote, error) {
	items, err := s.table.Query(ctx, standingVote(id, reporter))
	if err != nil {
		return nil, fmt.Errorf("read the vote of %s on %s: %w", reporter, id, err)
	}
	if len(items) == 0 {
		return nil, nil
	}
	v, _, _, err := decodeSignal(items[0])
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// errRetry tells a change loop to read the event again and redo its change.
var errRetry = errors.New("events: retry")

// commit writes one change of an event. A change that lost to a concurrent one (its version
// condition failed, or the table reported a conflict) gets errRetry after a backoff, up to
// maxAttempts; then ErrBusy.
func (s *Store) commit(ctx context.Context, ops []store.Op, attempt int) error {
	err := s.transact(ctx, ops)
	var ce *store.ConditionError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && ce.Op == 0, errors.Is(err, store.ErrConflict):
		if err := s.again(ctx, attempt, err); err != nil {
			return err
		}
		return errRetry
	}
	return err
}

// collided tells whether a change failed because what it was computed from changed under it:
// a condition failed or the table reported a conflicting write.
func collided(err error) bool {
	var ce *store.ConditionError
	return errors.As(err, &ce) || errors.Is(err, store.ErrConflict)
}

// again waits before attempt+1 of a change that collided with err, or, after maxAttempts,
// gives up with ErrBusy.
func (s *Store) again(ctx context.Context, attempt int, err error) error {
	if attempt >= maxAttempts {
		return fmt.Errorf("%w: %d attempts: %w", ErrBusy, attempt, err)
	}
	return s.backoff(ctx, attempt)
}

// transact runs a transaction and brings the cache up to date with it.
func (s *Store) transact(ctx context.Context, ops []store.Op) error {
	err := s.table.TransactWrite(ctx, ops)
	if s.cache != nil {
		s.cache.apply(ops, err, s.clock.Now().UnixNano())
	}
	return err
}

// backoff waits before attempt+1: a random time up to 2^attempt ms, at most 50 ms, so that
// processes colliding on one event spread out. It is real time, not the store's clock: it
// paces the table, it is not a rule of the service.
func (s *Store) backoff(ctx context.Context, attempt int) error {
	limit := min(time.Millisecond<<min(attempt, 6), 50*time.Millisecond)
	t := time.NewTimer(rand.N(limit) + 1)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// changeOps is the transaction that writes ev, conditioned on cond, with the signal that
// changed it when not nil, and moves its area index items from the cells prev to the cells next (sorted): a put under
// every cell of next (each carrying the event's new record) and a delete under every cell of prev
// that next lacks. An event that is no longer active at now (the deny quorum ended it) keeps no
// index items. The event item, first (operation 0), records the cells it is indexed under.
func (s *Store) changeOps(ev event.Event, cond store.Condition, prev, next []h3.Cell, sig *signalRecord, now time.Time) ([]store.Op, error) {
	if ev.IsOver(now) {
		next = nil
	}
	evItem, err := s.eventItem(ev, next)
	if err != nil {
		return nil, err
	}
	ops := make([]store.Op, 0, 2+len(prev)+len(next))
	ops = append(ops, store.PutOp(evItem, cond))
	if sig != nil {
		si, err := s.signalItem(ev, *sig)
		if err != nil {
			return nil, err
		}
		ops = append(ops, store.PutOp(si, store.Condition{}))
	}
	if len(next) > 0 {
		rec, err := encodeRecord(ev, now)
		if err != nil {
			return nil, err
		}
		for _, c := range next {
			k, err := areaKey(c, ev.Environment, ev.ID)
			if err != nil {
				return nil, err
			}
			ops = append(ops, store.PutOp(areaItem(k, ev.ExpiresAt, rec), store.Condition{}))
		}
	}
	for _, c := range prev {
		if _, found := slices.BinarySearch(next, c); found {
			continue
		}
		k, err := areaKey(c, ev.Environment, ev.ID)
		if err != nil {
			return nil, err
		}
		ops = append(ops, store.DeleteOp(k, store.Condition{}))
	}
	if len(ops) > store.MaxTransactOps {
		// MaxIndexCells makes this unreachable; refuse rather than write part of a change.
		return nil, fmt.Errorf("event %s: %d operations: %w", ev.ID, len(ops), store.ErrInvalid)
	}
	return ops, nil
}
