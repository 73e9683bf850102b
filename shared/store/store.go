// Package store is the table the domain talks to: a small subset of DynamoDB's data plane
// (docs/architecture.md §2). Two adapters implement it, embedded (bbolt, for `go run .`) and
// dynamodb (aws-sdk-go-v2), and one conformance suite (package storetest) holds them to the
// same behaviour: a difference between them is a bug.
//
// The table has a string partition key and a string sort key. Items may carry a TTL attribute
// (AttrTTL, Unix seconds): an item whose TTL is at or before the adapter's clock is invisible to
// reads and to conditions, whether or not it has been deleted yet, because DynamoDB deletes
// expired items lazily (up to days later) and the domain must not see them meanwhile.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Names of the attributes every adapter maps to the table's key schema and TTL setting.
const (
	AttrPK  = "pk"
	AttrSK  = "sk"
	AttrTTL = "ttl"
)

// Limits of the table, the same as DynamoDB's.
const (
	MaxBatchGet     = 100 // keys in one BatchGet call (adapters split larger requests)
	MaxTransactOps  = 100 // operations in one TransactWrite
	MaxKeyBytes     = 1024
	MaxItemBytes    = 400 * 1024
	maxSortKeyBytes = 1024
)

// Errors returned by every adapter. Check them with errors.Is.
var (
	// ErrNotFound is returned by Get when no live item has the key.
	ErrNotFound = errors.New("store: item not found")
	// ErrConditionFailed is returned when a write's condition does not hold; nothing was
	// written. In a transaction it means the whole transaction was refused; errors.As with
	// *ConditionError tells which operation failed.
	ErrConditionFailed = errors.New("store: condition failed")
	// ErrInvalid is returned for a request the table cannot hold: an empty key, an attribute of
	// an unsupported type, too many operations, an item over the size limit.
	ErrInvalid = errors.New("store: invalid request")
	// ErrConflict is returned when a transaction collided with another write to the same
	// items and was refused as a whole; the caller may retry it.
	ErrConflict = errors.New("store: transaction conflict")
	// ErrUnavailable is returned when the table cannot answer now but may shortly: DynamoDB
	// throttled, timed out, reset the connection or failed on its side even after the
	// adapter's retries (docs/operations.md §1), or the embedded store's disk refused a write
	// (§2). A write that gets it was carried out whole or not at all, and which is unknown:
	// DynamoDB may have carried it out and lost the answer. The HTTP layer answers 503 with
	// Retry-After.
	ErrUnavailable = errors.New("store: temporarily unavailable")
)

// ConditionError says which operation of a TransactWrite had its condition fail
// (Op is its index), or -1 for a single-item write. It unwraps to ErrConditionFailed.
type ConditionError struct {
	Op int
}

func (e *ConditionError) Error() string {
	if e.Op < 0 {
		return ErrConditionFailed.Error()
	}
	return fmt.Sprintf("%s (transaction operation %d)", ErrConditionFailed, e.Op)
}

// Unwrap makes errors.Is(err, ErrConditionFailed) true.
func (e *ConditionError) Unwrap() error { return ErrConditionFailed }

// Key names one item.
type Key struct {
	PK string
	SK string
}

func (k Key) String() string { return k.PK + "|" + k.SK }

// Table is the storage interface of the domain.
type Table interface {
	// Get returns the live item with key k, or ErrNotFound. Reads are strongly consistent unless
	// a Query says otherwise (Query.Eventual).
	Get(ctx context.Context, k Key) (Item, error)
	// Put writes item (which holds its own AttrPK and AttrSK) if cond holds; a zero Condition
	// always holds.
	Put(ctx context.Context, item Item, cond Condition) error
	// Delete removes the item with key k if cond holds. Deleting an absent item is no error.
	Delete(ctx context.Context, k Key, cond Condition) error
	// Update applies u to the item with key k (creating it when absent, as DynamoDB's
	// UpdateItem does) if cond holds, and returns the item as it is after the update.
	Update(ctx context.Context, k Key, u Update, cond Condition) (Item, error)
	// Query returns the live items of one partition whose sort keys match q, in sort-key
	// order (descending with q.Desc), at most q.Limit of them when q.Limit > 0.
	Query(ctx context.Context, q Query) ([]Item, error)
	// BatchGet returns the live items among keys, in the order of keys; absent keys are
	// skipped, repeated keys answered once.
	BatchGet(ctx context.Context, keys []Key) ([]Item, error)
	// TransactWrite applies every operation or none. At most MaxTransactOps operations, each
	// on a different item.
	TransactWrite(ctx context.Context, ops []Op) error
	// Close releases the adapter's resources; pending writes are finished first.
	Close() error
}

// PartitionLister is a Table that can name its partitions whose key begins with a prefix. The
// embedded store can (its items are ordered by partition); DynamoDB cannot without reading the
// whole table, so callers treat it as optional.
type PartitionLister interface {
	Partitions(ctx context.Context, prefix string) ([]string, error)
}

// Query selects items of one partition by sort key: by prefix, or by an inclusive range
// (From and/or To), not both. An empty selection matches the whole partition.
type Query struct {
	PK     string
	Prefix string
	From   string // sort key >= From, when not empty
	To     string // sort key <= To, when not empty
	Desc   bool
	Limit  int
	// Eventual lets the read miss writes of the last moment (on DynamoDB, about a second) for
	// half the price: an eventually consistent read. Only for a read whose answer nothing is
	// written on and that the service's rules let lag (docs/architecture.md §2, consistency);
	// every read that guards a write stays strongly consistent. The embedded adapter always
	// reads consistently.
	Eventual bool
}

// Validate reports a query that neither adapter can run.
func (q Query) Validate() error {
	if q.PK == "" {
		return fmt.Errorf("%w: query without a partition key", ErrInvalid)
	}
	if q.Prefix != "" && (q.From != "" || q.To != "") {
		return fmt.Errorf("%w: query with both a prefix and a range", ErrInvalid)
	}
	if q.From != "" && q.To != "" && q.From > q.To {
		return fmt.Errorf("%w: query range From %q > To %q", ErrInvalid, q.From, q.To)
	}
	if q.Limit < 0 {
		return fmt.Errorf("%w: negative query limit", ErrInvalid)
	}
	return nil
}

// Update changes some attributes of an item in one atomic step.
type Update struct {
	Set    map[string]any   // attributes written as given
	Add    map[string]int64 // atomic counters: added to the current value, absent counts as 0
	Remove []string         // attributes removed
}

// Op is one operation of a TransactWrite; build it with PutOp, DeleteOp, UpdateOp or CheckOp.
type Op struct {
	Kind   OpKind
	Item   Item // OpPut
	Key    Key  // every other kind
	Update Update
	Cond   Condition
}

// OpKind says what an Op does.
type OpKind int

// The kinds of transaction operation.
const (
	OpPut OpKind = iota + 1
	OpDelete
	OpUpdate
	OpCheck // only checks Cond, writes nothing
)

// PutOp writes item if cond holds.
func PutOp(item Item, cond Condition) Op { return Op{Kind: OpPut, Item: item, Cond: cond} }

// DeleteOp deletes the item at k if cond holds.
func DeleteOp(k Key, cond Condition) Op { return Op{Kind: OpDelete, Key: k, Cond: cond} }

// CountUpOp raises the counter attr of the item at k by one, on condition that it is below
// limit: in the transaction that writes what it counts, a cap that writes at once cannot
// pass (a ConditionError of this operation says the cap is reached).
func CountUpOp(k Key, attr string, limit int64) Op {
	return UpdateOp(k, Update{Add: map[string]int64{attr: 1}}, Or(IfAttrNotExists(attr), IfLess(attr, limit)))
}

// CountDownOp lowers the counter attr of the item at k by one, on condition that it is above
// zero.
func CountDownOp(k Key, attr string) Op {
	return UpdateOp(k, Update{Add: map[string]int64{attr: -1}}, IfGreater(attr, int64(0)))
}

// UpdateOp applies u to the item at k if cond holds.
func UpdateOp(k Key, u Update, cond Condition) Op {
	return Op{Kind: OpUpdate, Key: k, Update: u, Cond: cond}
}

// CheckOp makes the transaction depend on cond holding for the item at k.
func CheckOp(k Key, cond Condition) Op { return Op{Kind: OpCheck, Key: k, Cond: cond} }

// TargetKey returns the key the operation acts on.
func (o Op) TargetKey() Key {
	if o.Kind == OpPut {
		return o.Item.Key()
	}
	return o.Key
}

// ChangeKind says what a change record records.
type ChangeKind string

// The kinds of change, as DynamoDB Streams names them.
const (
	ChangeInsert ChangeKind = "INSERT"
	ChangeModify ChangeKind = "MODIFY"
	ChangeRemove ChangeKind = "REMOVE"
)

// Change is one committed write, as the table's change feed reports it: the same record from
// the embedded store's feed and from DynamoDB Streams.
type Change struct {
	Seq     string // position in the feed; increases in commit order for one item
	Kind    ChangeKind
	Key     Key
	Old     Item // nil for INSERT
	New     Item // nil for REMOVE
	Expired bool // a REMOVE done by TTL expiry rather than by a caller
	At      time.Time
}

// Feed is the table's change feed.
type Feed interface {
	// Follow starts reading at the feed's end: every write committed after Follow returns is
	// delivered by the returned Cursor, and writes of one item in commit order.
	Follow(ctx context.Context) (Cursor, error)
}

// Replayer is a Feed whose positions are one total order of all its changes, each Change.Seq a
// decimal number, and that can be read again from a past position: the embedded store's. A
// DynamoDB Stream orders the changes of one item only, so it is not one.
type Replayer interface {
	Feed
	// FollowAfter returns a cursor at the change after position pos: every change from pos+1
	// on, in order. It fails with ErrReplay when changes after pos are no longer kept, or pos
	// is past the end of the feed.
	FollowAfter(ctx context.Context, pos uint64) (Cursor, error)
	// Last returns the position of the last change recorded (0 when none): every change up to
	// it is committed.
	Last(ctx context.Context) (uint64, error)
}

// PositionedCursor is a cursor of a Replayer that tells where it reads from: After is the
// position of the change before the first it delivers (0 for a feed with none yet).
type PositionedCursor interface {
	Cursor
	After() uint64
}

// ErrReplay is returned by Replayer.FollowAfter for a position it cannot read on from.
var ErrReplay = errors.New("store: the feed cannot be read on from that position")

// Cursor reads a feed forward.
type Cursor interface {
	// Next blocks until the next change, ctx ends, or the cursor is closed.
	Next(ctx context.Context) (Change, error)
	Close() error
}

// ImageFilter is implemented by a Cursor that can leave out the images (Old and New) of the
// changes whose key wants rejects, so that a reader that ignores those items does not pay for
// decoding them; such changes are still delivered, with their key, kind and position.
type ImageFilter interface {
	FilterImages(wants func(Key) bool)
}
