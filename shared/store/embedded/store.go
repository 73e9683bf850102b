// Package embedded is the table of `go run .`: a pure-Go, durable store.Table and store.Feed in
// one bbolt file, behaving as the DynamoDB table does (docs/architecture.md §2): items, conditions,
// TTL with a sweeper, and an ordered change feed that emits the records DynamoDB Streams would. The
// conformance suite in package storetest holds it to that.
//
// Every write commits its change records in the same transaction as the write, so the feed is
// durable and in commit order; a write returns only after its commit is synced to the
// write-ahead log (wal.go). Concurrent writes share commits (group commit, commit.go), so one
// fsync serves many writers. Commits reach the bbolt file later, many in one transaction, and
// reads see them from memory until then (pending.go, view.go); Open replays the log after a
// crash.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
)

// Interface guards: the embedded store is both the table and its change feed, and it can list
// its partitions.
var (
	_ store.Table           = (*Store)(nil)
	_ store.Feed            = (*Store)(nil)
	_ store.PartitionLister = (*Store)(nil)
)

// Errors of the embedded store, besides those of package store.
var (
	// ErrClosed is returned by every call on a closed Store, and by Cursor.Next once the
	// Store is closing.
	ErrClosed = errors.New("embedded: store closed")
	// ErrTrimmed is returned by Cursor.Next when the records the cursor was to read next were
	// already trimmed (older than Options.FeedRetention), like DynamoDB Streams'
	// TrimmedDataAccessException: the reader has lost changes and must resynchronise.
	ErrTrimmed = errors.New("embedded: feed records trimmed before they were read")
	// ErrFormat is returned by Open for a file written in an unknown format.
	ErrFormat = errors.New("embedded: unknown file format")
)

// Defaults of Options.
const (
	DefaultSweepInterval = time.Minute
	DefaultFeedRetention = 24 * time.Hour // as long as DynamoDB Streams keeps records
	// DefaultFlushBytes with flushAge lets a flush hold 4 s of publishing: more commits share
	// each page bbolt rewrites, so a publish costs fewer page writes (docs/performance.md §6).
	DefaultFlushBytes  = 64 << 20
	defaultOpenTimeout = 5 * time.Second
	// pageSize is the page size of a new file (an existing file keeps its own). A commit
	// rewrites every page it touches and every branch page above them, each with its own
	// write; 8 KiB pages make the tree shallower and split less, so a publish writes fewer
	// pages. Both 4 KiB and 16 KiB pages made publishing slower (docs/performance.md §6).
	pageSize = 8 << 10
	// initialMmapSize is the address space the file is mapped with from the start. bbolt maps
	// the file anew each time it outgrows its mapping (doubling up to 1 GiB), waiting for every
	// read to end and rereading the nodes of the transaction in progress: while a city was
	// published that took 5 % of the server's CPU (docs/performance.md §6). Address space only:
	// pages are resident as they are read.
	initialMmapSize = 1 << 30
	// commitQueue is how many writes may wait for the committer before writers block.
	commitQueue = 1024
)

// Options tune a Store; the zero value is ready to use.
type Options struct {
	// Clock decides TTL expiry and stamps change records; clock.System when nil.
	Clock clock.Clock
	// SweepInterval is how often the background sweeper deletes expired items and trims the
	// feed: DefaultSweepInterval when 0; no background sweeper when negative (call Sweep).
	SweepInterval time.Duration
	// FeedRetention is how long change records are kept: DefaultFeedRetention when 0 or less.
	FeedRetention time.Duration
	// Logger receives the sweeper's errors; slog.Default() when nil.
	Logger *slog.Logger
	// FlushBytes is the size past which the commits held in memory are written to the table
	// file (pending.go): DefaultFlushBytes when 0 or less. They are also written after
	// flushAge (4 s). Tests set 1 to write after every commit.
	FlushBytes int
	// WALFiles, when set, is given each segment file of the write-ahead log as it is created
	// and returns the file the log uses: tests wrap it to fail writes and syncs as a full or
	// failing disk does (docs/operations.md §2).
	WALFiles func(LogFile) LogFile
}

// Bucket and meta names, format 1 (see codec.go).
var (
	bucketItems = []byte("items")
	bucketTTL   = []byte("ttl")
	bucketFeed  = []byte("feed")
	bucketMeta  = []byte("meta")
	metaFormat  = []byte("format")
	formatV1    = []byte("1")
)

// Store is the embedded table and change feed. It is safe for concurrent use.
type Store struct {
	db         *bolt.DB
	clock      clock.Clock
	log        *slog.Logger
	retention  time.Duration
	flushBytes int

	// gate lets Close wait for calls in progress: every call holds it for reading, Close
	// takes it for writing and then sets closed.
	gate   sync.RWMutex
	closed bool

	closing   chan struct{} // closed when Close starts: wakes followers and the sweeper
	closeOnce sync.Once
	closeErr  error
	sweeper   sync.WaitGroup

	// commits feeds the committer goroutine (commit.go); Close closes it once no call is in
	// progress, and committerDone tells when the committer has finished.
	commits       chan *commitReq
	committerDone chan struct{}

	// wake is closed and replaced after every commit that appended to the feed, waking the
	// cursors waiting for it.
	wakeMu sync.Mutex
	wake   chan struct{}

	// The write-ahead log and the commits bbolt does not hold yet (pending.go). live belongs
	// to the committer; walMu orders the committer's appends and the flusher's releases.
	walMu    sync.Mutex
	wal      *wal
	walFiles func(LogFile) LogFile
	live     *layer
	// syncFailed is the error of a log sync that failed after its commit was shown (update);
	// once set, the committer refuses every write.
	syncFailed error
	// viewMu guards what new views see: layers (newest first), made of shown (a snapshot of
	// the live layer) and frozen (the layer being flushed), and the feed's last position.
	// flushed is closed and replaced after every flush.
	viewMu  sync.RWMutex
	layers  []*layer
	shown   *layer
	frozen  *layer
	feedSeq uint64
	flushed chan struct{}

	flushReq    chan struct{} // wakes the flusher; Close closes it
	flusherDone chan struct{}
	onRest      atomic.Pointer[func()] // OnRest
}

// OnRest sets fn to be called after each flush that leaves the store at rest: less than
// restBytes of commits came in while it ran (docs/performance.md §6). The process then
// holds all it will for a while; `go run .` returns its unused heap then (daemon.ReleaseMemory).
func (s *Store) OnRest(fn func()) { s.onRest.Store(&fn) }

// Open opens (creating it and its directory if needed) the store in file path.
func Open(path string, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = DefaultSweepInterval
	}
	if opts.FeedRetention <= 0 {
		opts.FeedRetention = DefaultFeedRetention
	}
	if opts.FlushBytes <= 0 {
		opts.FlushBytes = DefaultFlushBytes
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("embedded: create directory of %s: %w", path, err)
		}
	}
	// A timeout turns "another process has the file open" into an error instead of a hang.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: defaultOpenTimeout, PageSize: pageSize, InitialMmapSize: initialMmapSize})
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	if err := db.Update(initBuckets); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	s := &Store{
		db:         db,
		clock:      opts.Clock,
		log:        opts.Logger,
		retention:  opts.FeedRetention,
		flushBytes: opts.FlushBytes,
		walFiles:   opts.WALFiles,
		closing:    make(chan struct{}),
		wake:       make(chan struct{}),

		commits:       make(chan *commitReq, commitQueue),
		committerDone: make(chan struct{}),
		flushed:       make(chan struct{}),
		flushReq:      make(chan struct{}, 1),
		flusherDone:   make(chan struct{}),
	}
	if err := s.recover(path + walSuffix); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	go s.commitLoop()
	go s.flushLoop()
	if opts.SweepInterval > 0 {
		s.sweeper.Add(1)
		go s.sweepLoop(opts.SweepInterval)
	}
	return s, nil
}

// initBuckets creates the buckets of a new file and checks the format of an existing one.
func initBuckets(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketMeta, err)
	}
	switch f := meta.Get(metaFormat); {
	case f == nil:
		if err := meta.Put(metaFormat, formatV1); err != nil {
			return fmt.Errorf("write format: %w", err)
		}
	case string(f) != string(formatV1):
		return fmt.Errorf("%w %q", ErrFormat, f)
	}
	for _, name := range [][]byte{bucketItems, bucketTTL, bucketFeed} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// Close stops the sweeper, ends every cursor's Next with ErrClosed, waits for calls in progress
// and closes the file. Calling it again returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.sweeper.Wait()
		s.gate.Lock()
		s.closed = true
		s.gate.Unlock()
		close(s.commits) // no call is in progress, so no write is left to send
		<-s.committerDone
		close(s.flushReq)
		<-s.flusherDone
		// Every commit goes to the table file, so the next Open has nothing to replay; if that
		// fails, the log keeps them.
		var errs []error
		if err := s.flushAll(); err != nil {
			errs = append(errs, fmt.Errorf("write pending commits: %w", err))
		}
		if err := s.wal.close(); err != nil {
			errs = append(errs, err)
		}
		if err := s.db.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("embedded: close: %w", err)
		}
	})
	return s.closeErr
}

// enter admits a call unless the store is closed; the caller must call s.gate.RUnlock after.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.gate.RLock()
	if s.closed {
		s.gate.RUnlock()
		return ErrClosed
	}
	return nil
}

// notify wakes every cursor waiting for new records.
func (s *Store) notify() {
	s.wakeMu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.wakeMu.Unlock()
}

// wakeChan returns the channel the next notify closes.
func (s *Store) wakeChan() <-chan struct{} {
	s.wakeMu.Lock()
	defer s.wakeMu.Unlock()
	return s.wake
}

// now returns the current time of the store's clock in Unix seconds, the unit of AttrTTL.
func (s *Store) now() (time.Time, int64) {
	t := s.clock.Now()
	return t, t.Unix()
}
