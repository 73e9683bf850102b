package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
)

// The states of a delivery (docs/webhooks.md §3).
const (
	StatePending   = "pending"
	StateDelivered = "delivered"
	// StateFailed: no attempt succeeded within GiveUpAfter.
	StateFailed = "failed"
	// StateDropped: its endpoint was deleted or disabled before it was delivered.
	StateDropped = "dropped"
)

// Queue limits.
const (
	// Keep is how long a delivery stays listed after it was made.
	Keep = 30 * 24 * time.Hour
	// claimLease is how long a dispatcher holds a delivery it is sending.
	claimLease = 2 * time.Minute
	dueShards  = 4
)

// ErrDeliveryNotFound is a delivery that is not the organisation's, or no longer kept.
var ErrDeliveryNotFound = errors.New("webhooks: delivery not found in this organisation")

// Attempt is one try of a delivery.
type Attempt struct {
	At time.Time `json:"at"`
	// Status is the receiver's HTTP status; 0 when none came (Error says why).
	Status    int    `json:"status"`
	Error     string `json:"error,omitempty"`
	LatencyMS int64  `json:"latency_ms"`
}

// Delivery is one message to one endpoint, sent until the receiver takes it (§3).
type Delivery struct {
	ID, Org, Endpoint, Kind string
	// Body is the JSON body, fixed when the delivery is made so that every attempt sends the
	// same bytes.
	Body      []byte
	CreatedAt time.Time
	State     string
	// Reason says why a delivery was dropped or given up.
	Reason   string
	Attempts []Attempt
	// FirstAttemptAt starts the 24 hours of retries; NextAttemptAt is when a pending one is due.
	FirstAttemptAt, NextAttemptAt time.Time
	rev                           int64
}

// Queue keeps deliveries in the table, so that none is lost when a process stops
// (docs/webhooks.md §3).
//
// # Storage layout
//
//	pk "org#<org_id>"        sk "delivery#<endpoint_id>#<delivery_id>"         the delivery and its attempts; TTL Keep
//	pk "webhookdue#<shard>"  sk "<next attempt>#<org_id>#<delivery_id>"        a pending delivery's turn
//
// A delivery lives in its organisation's partition under its endpoint, its id ordered by time
// (DeliveryID), so that the console reads an endpoint's newest deliveries and nothing else. Each
// pending one has a turn in one of four due partitions, ordered by time, so that a dispatcher
// reads what is due with four range queries and no scan; a retry moves the turn.
//
// On AWS the turns are messages of a queue instead (a Sender: SQS), delayed until they are due,
// which invoke the dispatcher (Dispatcher.Turn); the deliveries stay in the table.
type Queue struct {
	table  store.Table
	clock  clock.Clock
	sender Sender
}

// Turn is a pending delivery's turn: which delivery, and when it is due.
type Turn struct {
	Org      string    `json:"org_id"`
	Endpoint string    `json:"endpoint_id"`
	Delivery string    `json:"delivery_id"`
	At       time.Time `json:"at"`
}

// Sender carries turns as messages that come back to a dispatcher when they are due (or
// earlier: a message waits at most so long). A turn sent twice is harmless: the dispatcher
// takes a delivery at one turn once.
type Sender interface {
	Send(ctx context.Context, t Turn) error
}

// NewQueue returns the queue on table, its turns in the table.
func NewQueue(table store.Table, c clock.Clock) *Queue { return NewQueueSending(table, c, nil) }

// NewQueueSending returns the queue on table, its turns sent by sender (in the table when
// sender is nil).
func NewQueueSending(table store.Table, c clock.Clock, sender Sender) *Queue {
	if c == nil {
		c = clock.System
	}
	return &Queue{table: table, clock: c, sender: sender}
}

func (d Delivery) turn() Turn {
	return Turn{Org: d.Org, Endpoint: d.Endpoint, Delivery: d.ID, At: d.NextAttemptAt}
}

// turnOps are the writes that store d's turn beside the delivery's own: none when a sender
// carries turns.
func (q *Queue) turnOps(d Delivery) []store.Op {
	if q.sender != nil {
		return nil
	}
	return []store.Op{store.PutOp(dueItem(d), store.Condition{})}
}

// sendTurn sends d's turn once the delivery is committed, when a sender carries turns.
func (q *Queue) sendTurn(ctx context.Context, d Delivery) error {
	if q.sender == nil {
		return nil
	}
	if err := q.sender.Send(ctx, d.turn()); err != nil {
		return fmt.Errorf("webhooks: send the turn of %s: %w", d.ID, err)
	}
	return nil
}

const (
	skDelivery = "delivery#"
	pkDue      = "webhookdue#"
)

// DeliveryPrefix begins the sort keys of an organisation's deliveries in its partition: records
// that expire on their own (30 days), which the deletion of an organisation leaves to their
// expiry instead of reading them all (docs/privacy.md §6).
const DeliveryPrefix = skDelivery

const (
	attrDeliveryID, attrKind, attrBody, attrState, attrReason  = "delivery_id", "kind", "body", "state", "reason"
	attrAttempts, attrFirstAttempt, attrNextAttempt, attrLease = "attempts", "first_attempt_at", "next_attempt_at", "lease_until"
	attrDeliverySK                                             = "delivery_sk"
)

func deliveryKey(org, endpoint, id string) store.Key {
	return store.Key{PK: pkOrg + org, SK: skDelivery + endpoint + "#" + id}
}

// DeliveryID is the id of the delivery of source (what happened, for example a change of the
// feed) to endpoint, made at at: the same for the same pair, so that a producer repeating
// itself stores nothing twice; ordered by time, so that an endpoint's deliveries list newest
// first by id.
func DeliveryID(at time.Time, source, endpoint string) string {
	h := fnv.New64a()
	h.Write([]byte(source))
	h.Write([]byte{0})
	h.Write([]byte(endpoint))
	return fmt.Sprintf("dlv_%013x%016x", at.UnixMilli(), h.Sum64())
}

var validDeliveryID = regexp.MustCompile(`^dlv_[0-9a-f]{29}$`).MatchString

func dueKey(d Delivery) store.Key {
	h := fnv.New32a()
	h.Write([]byte(d.ID))
	return store.Key{PK: pkDue + strconv.Itoa(int(h.Sum32()%dueShards)),
		SK: store.FormatTime(d.NextAttemptAt) + "#" + d.Org + "#" + d.ID}
}

// Enqueue stores d as pending, due at once. Enqueuing a delivery with the id of one already
// stored does nothing, so that a producer that repeats itself after a crash sends nothing twice;
// when a sender carries turns, the turn of one still pending is sent again, in case the crash
// came between the delivery's write and its turn's.
func (q *Queue) Enqueue(ctx context.Context, d Delivery) error {
	now := q.clock.Now().UTC()
	d.State, d.FirstAttemptAt, d.NextAttemptAt = StatePending, now, now
	if d.CreatedAt.IsZero() {
		d.CreatedAt = now
	}
	it := d.item()
	it[store.AttrTTL] = d.CreatedAt.Add(Keep).Unix()
	err := q.table.TransactWrite(ctx, append([]store.Op{store.PutOp(it, store.IfNotExists())}, q.turnOps(d)...))
	var ce *store.ConditionError
	if errors.As(err, &ce) && ce.Op == 0 {
		if q.sender == nil {
			return nil
		}
		stored, err := q.Get(ctx, d.Org, d.Endpoint, d.ID)
		if err != nil || stored.State != StatePending {
			return err
		}
		return q.sendTurn(ctx, stored)
	}
	if err != nil {
		return fmt.Errorf("webhooks: enqueue delivery %s: %w", d.ID, err)
	}
	return q.sendTurn(ctx, d)
}

// List returns the deliveries to org's endpoint, newest first, at most limit.
func (q *Queue) List(ctx context.Context, org, endpoint string, limit int) ([]Delivery, error) {
	items, err := q.table.Query(ctx, store.Query{PK: pkOrg + org, Prefix: skDelivery + endpoint + "#", Desc: true, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("webhooks: list the deliveries to %s: %w", endpoint, err)
	}
	out := make([]Delivery, len(items))
	for i, it := range items {
		out[i] = deliveryFrom(it)
	}
	return out, nil
}

// Get returns the delivery id to org's endpoint.
func (q *Queue) Get(ctx context.Context, org, endpoint, id string) (Delivery, error) {
	if !validDeliveryID(id) || !validEndpointID(endpoint) {
		return Delivery{}, fmt.Errorf("%w: a malformed id", ErrDeliveryNotFound)
	}
	it, err := q.table.Get(ctx, deliveryKey(org, endpoint, id))
	if errors.Is(err, store.ErrNotFound) {
		return Delivery{}, fmt.Errorf("%w: %s", ErrDeliveryNotFound, id)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("webhooks: read delivery %s: %w", id, err)
	}
	return deliveryFrom(it), nil
}

// Redeliver makes the delivery id to org's endpoint pending again and due at once, with 24
// hours of retries of its own: a delivery delivered, failed or dropped is sent again as it was.
// A pending one keeps its turn (sent again when a sender carries turns).
func (q *Queue) Redeliver(ctx context.Context, org, endpoint, id string) (Delivery, error) {
	d, err := q.Get(ctx, org, endpoint, id)
	if err != nil {
		return Delivery{}, err
	}
	if d.State == StatePending {
		return d, q.sendTurn(ctx, d)
	}
	now := q.clock.Now().UTC()
	d.State, d.Reason, d.FirstAttemptAt, d.NextAttemptAt = StatePending, "", now, now
	err = q.table.TransactWrite(ctx, append([]store.Op{
		store.UpdateOp(d.key(), store.Update{
			Set: map[string]any{attrState: d.State, attrReason: "", attrFirstAttempt: store.FormatTime(now),
				attrNextAttempt: store.FormatTime(now)},
			Add: map[string]int64{attrRev: 1},
		}, store.IfEqual(attrRev, d.rev)),
	}, q.turnOps(d)...))
	if errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrConflict) {
		return Delivery{}, fmt.Errorf("%w: delivery %s", ErrBusy, id)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("webhooks: redeliver %s: %w", id, err)
	}
	d.rev++
	return d, q.sendTurn(ctx, d)
}

// due returns the pending deliveries whose turn has come, oldest turn first, at most limit.
func (q *Queue) due(ctx context.Context, now time.Time, limit int) ([]Delivery, error) {
	var turns []store.Item
	for shard := range dueShards {
		items, err := q.table.Query(ctx, store.Query{PK: pkDue + strconv.Itoa(shard), To: store.FormatTime(now) + "#~", Limit: limit})
		if err != nil {
			return nil, fmt.Errorf("webhooks: read the due deliveries: %w", err)
		}
		turns = append(turns, items...)
	}
	slices.SortFunc(turns, func(a, b store.Item) int { return strings.Compare(a.Key().SK, b.Key().SK) })
	if len(turns) > limit {
		turns = turns[:limit]
	}
	keys := make([]store.Key, len(turns))
	for i, t := range turns {
		keys[i] = store.Key{PK: pkOrg + t.String(attrOrg), SK: t.String(attrDeliverySK)}
	}
	items, err := q.table.BatchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("webhooks: read the due deliveries: %w", err)
	}
	byKey := map[store.Key]Delivery{}
	for _, it := range items {
		byKey[it.Key()] = deliveryFrom(it)
	}
	var out []Delivery
	for i, t := range turns {
		d, ok := byKey[keys[i]]
		if !ok || d.State != StatePending || !d.NextAttemptAt.Equal(t.Time(attrNextAttempt)) {
			// A turn its delivery has moved on from (a crash between the two writes, or a
			// delivery no longer kept): remove it.
			q.table.Delete(ctx, t.Key(), store.Condition{})
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// claim takes d for an attempt at now, unless another dispatcher has it or it changed.
func (q *Queue) claim(ctx context.Context, d Delivery, now time.Time) (bool, error) {
	_, err := q.table.Update(ctx, d.key(), store.Update{Set: map[string]any{attrLease: store.FormatTime(now.Add(claimLease))}},
		store.And(store.IfEqual(attrRev, d.rev), store.Or(store.IfAttrNotExists(attrLease), store.IfLessEqual(attrLease, store.FormatTime(now)))))
	if errors.Is(err, store.ErrConditionFailed) {
		return false, nil
	}
	return err == nil, err
}

// settle writes what an attempt of d made of it (d as it now is: its new state, attempts and
// turn), moves its turn, and releases it.
func (q *Queue) settle(ctx context.Context, before, d Delivery) error {
	attempts, err := json.Marshal(d.Attempts)
	if err != nil {
		return err
	}
	set := map[string]any{attrState: d.State, attrReason: d.Reason, attrAttempts: string(attempts),
		attrNextAttempt: store.FormatTime(d.NextAttemptAt)}
	ops := []store.Op{
		store.UpdateOp(d.key(), store.Update{Set: set, Add: map[string]int64{attrRev: 1}, Remove: []string{attrLease}},
			store.IfEqual(attrRev, before.rev)),
	}
	if q.sender == nil {
		ops = append(ops, store.DeleteOp(dueKey(before), store.Condition{}))
	}
	if d.State == StatePending {
		ops = append(ops, q.turnOps(d)...)
	}
	if err := q.table.TransactWrite(ctx, ops); err != nil {
		return fmt.Errorf("webhooks: record an attempt of %s: %w", d.ID, err)
	}
	if d.State != StatePending {
		return nil
	}
	return q.sendTurn(ctx, d)
}

func (d Delivery) key() store.Key { return deliveryKey(d.Org, d.Endpoint, d.ID) }

func dueItem(d Delivery) store.Item {
	k := dueKey(d)
	return store.Item{store.AttrPK: k.PK, store.AttrSK: k.SK, attrOrg: d.Org, attrDeliverySK: d.key().SK,
		attrNextAttempt: store.FormatTime(d.NextAttemptAt)}
}

func (d Delivery) item() store.Item {
	attempts, _ := json.Marshal(d.Attempts)
	k := d.key()
	return store.Item{
		store.AttrPK: k.PK, store.AttrSK: k.SK, attrDeliveryID: d.ID, attrOrg: d.Org, attrEndpointID: d.Endpoint,
		attrKind: d.Kind, attrBody: string(d.Body), attrCreatedAt: store.FormatTime(d.CreatedAt), attrState: d.State,
		attrReason: d.Reason, attrAttempts: string(attempts), attrFirstAttempt: store.FormatTime(d.FirstAttemptAt),
		attrNextAttempt: store.FormatTime(d.NextAttemptAt), attrRev: d.rev,
	}
}

func deliveryFrom(it store.Item) Delivery {
	d := Delivery{
		ID: it.String(attrDeliveryID), Org: it.String(attrOrg), Endpoint: it.String(attrEndpointID), Kind: it.String(attrKind),
		Body: []byte(it.String(attrBody)), CreatedAt: it.Time(attrCreatedAt), State: it.String(attrState),
		Reason: it.String(attrReason), FirstAttemptAt: it.Time(attrFirstAttempt), NextAttemptAt: it.Time(attrNextAttempt),
		rev: it.Int(attrRev),
	}
	json.Unmarshal([]byte(it.String(attrAttempts)), &d.Attempts)
	return d
}
