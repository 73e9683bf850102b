package eventstore

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/uber/h3-go/v4"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// Duplicate merge (docs/network.md §1). A report published or revised near another source's
// active report of the same hazard is stored merged into it, and counts there as one
// confirmation from its organisation.
//
// Concurrent reports of one hazard must leave exactly one survivor, across processes too, so
// the decision "no report to merge into, stay active" is written on condition that nothing
// changed where it looked. Merge guards are the items that say so:
//
//	pk "merge#<environment>#<type>#<h3 cell at GuardLevel>"  sk "guard"   v (a counter), ttl
//
// An active report bumps the guards of the cells its extent is indexed under at GuardLevel
// (geo.IndexCells) and checks those of the cells covering its merge distance around its point
// (geo.CoverCircle), all on condition that they hold the counts read before searching. When a
// new report's point lies within the merge distance of another's extent, the cover of the one
// and the extent cells of the other share a cell (the property the area index rests on). So
// of two such reports written at once, if the one that would find the other commits second, a
// guard it checks has changed: it searches again and merges. The outcome is always that of
// the reports written one after the other. Within a process the guards are also locked, so
// that such a collision waits rather than retries.

// GuardLevel is the H3 resolution of merge guards: cells of about 5 km², so that a point
// report bumps one to three guards and a 20 km segment about twenty.
const GuardLevel = 7

const (
	guardPrefix = "merge#"
	guardSK     = "guard"
	attrGuard   = "v"
	// guardTTL keeps a guard a day past its last bump; one that expired reads as 0, and a
	// write conditioned on a count read before fails, which is all a guard must do.
	guardTTL = 24 * time.Hour
)

// guard is one merge guard and the count read from it.
type guard struct {
	key   store.Key
	count int64
	bump  bool // a cell of the extent: bumped, not only checked
}

// guardKeys returns the keys of the guards ev bumps or checks when it stays active, sorted,
// and which of them it bumps.
func guardKeys(ev event.Event) ([]store.Key, map[store.Key]bool, error) {
	t, ok := taxonomy.Lookup(ev.Type)
	if !ok || t.MergeDistance <= 0 {
		return nil, nil, nil
	}
	cells, err := geo.IndexCells(ev.Extent(), GuardLevel)
	if err != nil {
		return nil, nil, fmt.Errorf("guard cells of %s: %w", ev.ID, err)
	}
	cover, err := geo.CoverCircle(ev.Point(), t.MergeDistance, GuardLevel)
	if err != nil {
		return nil, nil, fmt.Errorf("guard cover of %s: %w", ev.ID, err)
	}
	key := func(c h3.Cell) store.Key {
		return store.Key{PK: guardPrefix + ev.Environment + "#" + ev.Type + "#" + geo.CellString(c), SK: guardSK}
	}
	bump := make(map[store.Key]bool, len(cells))
	for _, c := range cells {
		bump[key(c)] = true
	}
	keys := make([]store.Key, 0, len(cells)+len(cover))
	for k := range bump {
		keys = append(keys, k)
	}
	for _, c := range cover {
		if k := key(c); !bump[k] {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b store.Key) int { return cmp.Compare(a.PK, b.PK) })
	return keys, bump, nil
}

// guardLocks serialise, within a process, the reports that share a guard. They are apart from
// the event locks: Revise holds an event lock while it takes guard locks, and nothing takes an
// event lock while holding a guard lock, so the two never wait on each other in a cycle.
type guardLocks struct {
	seed  maphash.Seed
	locks [256]sync.Mutex
}

// lock takes the locks of keys, in a fixed order, and returns what releases them.
func (g *guardLocks) lock(keys []store.Key) func() {
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, int(maphash.String(g.seed, k.PK)%uint64(len(g.locks))))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		g.locks[i].Lock()
	}
	return func() {
		for _, i := range idx {
			g.locks[i].Unlock()
		}
	}
}

// readGuards reads the counts of the guards keys (0 for a guard never bumped); bump says which
// the report bumps.
func (s *Store) readGuards(ctx context.Context, keys []store.Key, bump map[store.Key]bool) ([]guard, error) {
	out := make([]guard, len(keys))
	at := make(map[store.Key]int, len(keys))
	for i, k := range keys {
		out[i] = guard{key: k, bump: bump[k]}
		at[k] = i
	}
	for batch := range slices.Chunk(keys, store.MaxBatchGet) {
		items, err := s.table.BatchGet(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("read merge guards: %w", err)
		}
		for _, it := range items {
			out[at[it.Key()]].count = it.Int(attrGuard)
		}
	}
	return out, nil
}

// guardOps bumps or checks every guard on condition that it still holds the count read.
func guardOps(guards []guard, now time.Time) []store.Op {
	ops := make([]store.Op, len(guards))
	for i, g := range guards {
		cond := store.IfEqual(attrGuard, g.count)
		if g.count == 0 {
			cond = store.IfAttrNotExists(attrGuard)
		}
		if !g.bump {
			ops[i] = store.CheckOp(g.key, cond)
			continue
		}
		ops[i] = store.PutOp(store.Item{
			store.AttrPK:  g.key.PK,
			store.AttrSK:  g.key.SK,
			store.AttrTTL: now.Add(guardTTL).Unix(),
			attrGuard:     g.count + 1,
		}, cond)
	}
	return ops
}

// maxCandidates bounds the events read to choose a survivor: the nearest ones the search finds.
const maxCandidates = 25

// survivor returns the report ev duplicates at now, if any: the oldest active event of
// another source reporting the same hazard (event.Event.SameHazard) whose extent lies within
// the type's merge distance of ev's point, as the area query measures (docs/network.md §1).
// ok is false when there is none.
func (s *Store) survivor(ctx context.Context, ev event.Event, now time.Time) (event.Event, bool, error) {
	t, known := taxonomy.Lookup(ev.Type)
	if !known || t.MergeDistance <= 0 {
		return event.Event{}, false, nil
	}
	res, err := s.area(ctx, []string{ev.Environment}, AreaQuery{Center: ev.Point(), Radius: t.MergeDistance, Types: []string{ev.Type}})
	if err != nil {
		return event.Event{}, false, fmt.Errorf("search duplicates of %s: %w", ev.ID, err)
	}
	source := ev.Source()
	keys := make([]store.Key, 0, min(len(res.Events), maxCandidates))
	for _, e := range res.Events {
		// The source's own reports are passed over by the index record, unread.
		if e.ID != ev.ID && len(keys) < maxCandidates && string(e.source) != source {
			keys = append(keys, EventKey(e.ID))
		}
	}
	if len(keys) == 0 {
		return event.Event{}, false, nil
	}
	items, err := s.table.BatchGet(ctx, keys)
	if err != nil {
		return event.Event{}, false, fmt.Errorf("read duplicates of %s: %w", ev.ID, err)
	}
	var (
		best  event.Event
		found bool
	)
	for _, it := range items {
		if it.String(attrSource) == source {
			continue // a record of the older format, which does not name its source
		}
		c, _, err := decodeEvent(it)
		if err != nil {
			return event.Event{}, false, err
		}
		if c.IsOver(now) || !ev.SameHazard(c) {
			continue
		}
		if !found || older(c, best) {
			best, found = c, true
		}
	}
	return best, found, nil
}

// mayMerge tells whether ev may be merged into surv, read again after the search found it: it
// must still be active, report the same hazard and lie within the merge distance.
func mayMerge(ev, surv event.Event, now time.Time) bool {
	t, _ := taxonomy.Lookup(ev.Type)
	return !surv.IsOver(now) && ev.SameHazard(surv) && geo.DistanceToExtent(ev.Point(), surv.Extent()) <= t.MergeDistance
}

// older is the survivor's order: created first, then the smaller id.
func older(a, b event.Event) bool {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c < 0
	}
	return cmp.Less(a.ID, b.ID)
}

// mergeOps is the transaction that stores dup merged into surv at now: dup (already
// MergeInto'd) written on dupCond and taken out of the cells dupCells, and on surv, as it was
// read at its version, the confirmation of dup's organisation (vote prev is that
// organisation's standing vote on it, nil if none), its history entry, and the corroboration
// its publisher's reputation counts. It returns surv as changed.
func (s *Store) mergeOps(dup event.Event, dupCond store.Condition, dupCells []string, surv event.Event, survCells []string, prev *event.Vote, now time.Time) ([]store.Op, event.Event, error) {
	ops, err := s.changeOps(dup, dupCond, dupCells, nil, nil, now)
	if err != nil {
		return nil, event.Event{}, err
	}
	read := surv.Version
	corroborated := surv.Corroborated
	entry := event.Entry{
		At: now.UTC(), Kind: event.EntryDuplicate, Action: event.ActionConfirm, Reporter: event.Reporter(dup.Org, nil),
		Distance: distance(dup.Point(), surv), Duplicate: dup.ID, ExpiresBefore: surv.ExpiresAt,
	}
	point := dup.Point()
	vote, outcome, err := surv.Signal(entry.Reporter, prev, event.ActionConfirm, &point, now)
	if err != nil {
		return nil, event.Event{}, err
	}
	surv.Corroborated = true
	cond := store.IfEqual(attrVersion, read)
	switch {
	case outcome != event.Unchanged:
		more, err := s.changeOps(surv, cond, survCells, survCells, &vote, now)
		if err != nil {
			return nil, event.Event{}, err
		}
		ops = append(ops, more...)
	case !corroborated:
		surv.Version++
		more, err := s.changeOps(surv, cond, survCells, survCells, nil, now)
		if err != nil {
			return nil, event.Event{}, err
		}
		ops = append(ops, more...)
	default:
		// The organisation had confirmed it already: nothing of the event changes, but it must
		// still be the active event that was read.
		ops = append(ops, store.CheckOp(EventKey(surv.ID), cond))
	}
	entry.ExpiresAfter = surv.ExpiresAt
	ei, err := s.entryItem(surv, entry, dup.ID)
	if err != nil {
		return nil, event.Event{}, err
	}
	ops = append(ops, store.PutOp(ei, store.Condition{}))
	if !corroborated {
		ops = append(ops, reputation.CountOp(surv.Org, surv.Environment, reputation.Tally{For: 1}, now))
	}
	return ops, surv, nil
}

// distance is from p to ev's extent, in metres, rounded to the metre (docs/network.md §4:
// distances, never positions).
func distance(p geo.Point, ev event.Event) *float64 {
	d := float64(int64(geo.DistanceToExtent(p, ev.Extent()) + 0.5))
	return &d
}

// orgPrefix is the partition prefix of the list of an organisation's events: one partition per
// organisation, environment and UTC day of publication, sorted by creation time.
//
//	pk "orgevents#<org_id>#<environment>#<YYYY-MM-DD>"  sk "<created_at, Unix ns, 20 digits>#<event_id>"  ttl
//
// A verdict reads it to find a publisher's active events (InvalidateOrg). One partition per
// day keeps a busy publisher's writes spread.
const orgPrefix = "orgevents#"

func orgPartition(org, env string, day time.Time) string {
	return orgPrefix + org + "#" + env + "#" + day.UTC().Format(time.DateOnly)
}

// orgItem lists ev among its publisher's events.
func (s *Store) orgItem(ev event.Event) store.Item {
	return store.Item{
		store.AttrPK:  orgPartition(ev.Org, ev.Environment, ev.CreatedAt),
		store.AttrSK:  fmt.Sprintf("%020d#%s", ev.CreatedAt.UnixNano(), ev.ID),
		store.AttrTTL: s.keepUntil(ev),
	}
}
