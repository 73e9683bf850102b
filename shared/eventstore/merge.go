package eventstore

import (
	"bytes"
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
// The duplicates of a report are searched in the cells at FineLevel that cover its merge
// distance around its point (dupSearch). An active report bumps the guards of the parents, at
// GuardLevel, of the cells its extent is indexed under at FineLevel, and checks those of the
// parents of its search cells, all on condition that they hold the counts read before
// searching. When a new report's point lies within the merge distance of another's extent,
// its search cells and the other's index cells share a cell (the property the area query
// rests on, and by which the search finds the other), so their parents share a guard. So of
// two such reports written at once, if the one that would find the other commits second, a
// guard it checks has changed: it searches again and merges. The outcome is always that of
// the reports written one after the other. Within a process the guards are also locked, so
// that such a collision waits rather than retries. A Store that is its table's only writer
// (Options.SoleWriter) has nobody to race but its own requests, which those locks already
// serialise: it neither reads nor writes guards.

// GuardLevel is the H3 resolution of merge guards: cells of about 5 km², seven times
// FineLevel's, so that a point report bumps one guard and a 20 km segment about twenty.
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

// dupSearch returns the cells where the reports ev may duplicate are searched: those at
// FineLevel covering the type's merge distance around ev's point, none for a type that never
// merges. Every extent is indexed at FineLevel, and a merge distance's cover there stays a
// handful of cells.
func dupSearch(ev event.Event) ([]h3.Cell, error) {
	t, ok := taxonomy.Lookup(ev.Type)
	if !mergeCheck || !ok || t.MergeDistance <= 0 {
		return nil, nil
	}
	cells, err := geo.CoverCircle(ev.Point(), t.MergeDistance, FineLevel)
	if err != nil {
		return nil, fmt.Errorf("duplicate search of %s: %w", ev.ID, err)
	}
	return cells, nil
}

// guardsOf returns the guards ev bumps or checks when it stays active, sorted by key, their
// counts not read yet: the parents at level of its index cells at FineLevel (fine) are
// bumped, those of its search cells (search) checked. A report searching nowhere has none.
func guardsOf(ev event.Event, fine, search []h3.Cell, level int) ([]guard, error) {
	if len(search) == 0 {
		return nil, nil
	}
	guards := make([]guard, 0, len(fine)+len(search))
	at := make(map[h3.Cell]int, len(fine)+len(search)) // parent -> its guard
	add := func(c h3.Cell, bump bool) error {
		p, err := c.Parent(level)
		if err != nil {
			return fmt.Errorf("guard of %s: %w", ev.ID, err)
		}
		if i, ok := at[p]; ok {
			guards[i].bump = guards[i].bump || bump
			return nil
		}
		at[p] = len(guards)
		k := store.Key{PK: guardPrefix + ev.Environment + "#" + ev.Type + "#" + geo.CellString(p), SK: guardSK}
		guards = append(guards, guard{key: k, bump: bump})
		return nil
	}
	for _, c := range fine {
		if err := add(c, true); err != nil {
			return nil, err
		}
	}
	for _, c := range search {
		if err := add(c, false); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(guards, func(a, b guard) int { return cmp.Compare(a.key.PK, b.key.PK) })
	return guards, nil
}

// takeGuards locks the guards of ev (guardsOf) and returns them, their counts read unless the
// Store is the only writer, with what releases the locks. guardOps writes nothing for guards
// not read.
//
// The only writer locks guards at FineLevel, the search and index cells themselves: the
// locks are held until the report is written, and two reports that need not wait for each
// other then share one less often (a cell of GuardLevel holds seven). The guard items stay
// at GuardLevel, where a long extent bumps fewer of them.
func (s *Store) takeGuards(ctx context.Context, ev event.Event, fine, search []h3.Cell) ([]guard, func(), error) {
	level := GuardLevel
	if s.soleWriter {
		level = FineLevel
	}
	guards, err := guardsOf(ev, fine, search, level)
	if err != nil {
		return nil, nil, err
	}
	unlock := s.guards.lock(guards)
	if s.soleWriter {
		return nil, unlock, nil
	}
	if err := s.readGuards(ctx, guards); err != nil {
		unlock()
		return nil, nil, err
	}
	return guards, unlock, nil
}

// guardLocks serialise, within a process, the reports that share a guard. They are apart from
// the event locks: Revise holds an event lock while it takes guard locks, and nothing takes an
// event lock while holding a guard lock, so the two never wait on each other in a cycle.
//
// Guards hash onto a fixed set of locks; with 64 requests at once each holding two or three,
// a few hundred locks would make most of them wait on a stranger.
type guardLocks struct {
	seed  maphash.Seed
	locks [4096]sync.Mutex
}

// lock takes the locks of guards, in a fixed order, and returns what releases them.
func (g *guardLocks) lock(guards []guard) func() {
	idx := make([]int, 0, len(guards))
	for _, gd := range guards {
		idx = append(idx, int(maphash.String(g.seed, gd.key.PK)%uint64(len(g.locks))))
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

// readGuards reads the counts of guards (0 for a guard never bumped).
func (s *Store) readGuards(ctx context.Context, guards []guard) error {
	keys := make([]store.Key, len(guards))
	at := make(map[store.Key]int, len(guards))
	for i, g := range guards {
		keys[i] = g.key
		at[g.key] = i
	}
	for batch := range slices.Chunk(keys, store.MaxBatchGet) {
		items, err := s.table.BatchGet(ctx, batch)
		if err != nil {
			return fmt.Errorf("read merge guards: %w", err)
		}
		for _, it := range items {
			guards[at[it.Key()]].count = it.Int(attrGuard)
		}
	}
	return nil
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

// placement is where a report about to be stored active stands for the merge: the cells it is
// indexed under, its merge guards, locked (and read, unless the Store is the only writer)
// until release, and the report it duplicates, if found.
type placement struct {
	cells    []h3.Cell
	guards   []guard
	release  func()
	survivor event.Event
	found    bool
}

// place computes ev's index cells, takes its merge guards and then searches, at now, the report
// it duplicates: the order that makes the guards catch a report written meanwhile. On success
// the caller must call release once its transaction is written (or abandoned).
func (s *Store) place(ctx context.Context, ev event.Event, now time.Time) (placement, error) {
	cells, err := indexCells(ev.Extent())
	if err != nil {
		return placement{}, err
	}
	search, err := dupSearch(ev)
	if err != nil {
		return placement{}, err
	}
	guards, release, err := s.takeGuards(ctx, ev, cells, search)
	if err != nil {
		return placement{}, err
	}
	surv, found, err := s.survivor(ctx, ev, search, now)
	if err != nil {
		release()
		return placement{}, err
	}
	return placement{cells: cells, guards: guards, release: release, survivor: surv, found: found}, nil
}

// maxCandidates bounds the events read to choose a survivor: the nearest ones the search finds.
const maxCandidates = 25

// survivor returns the report ev duplicates at now, if any: the oldest active event of
// another source reporting the same hazard (event.Event.SameHazard) whose extent lies within
// the type's merge distance of ev's point, as the area query measures, searched in the cells
// search (dupSearch) (docs/network.md §1). ok is false when there is none.
func (s *Store) survivor(ctx context.Context, ev event.Event, search []h3.Cell, now time.Time) (event.Event, bool, error) {
	if len(search) == 0 {
		return event.Event{}, false, nil
	}
	t, _ := taxonomy.Lookup(ev.Type)
	q := AreaQuery{Center: ev.Point(), Radius: t.MergeDistance, Types: []string{ev.Type}}
	// Strongly consistent: the merge guards only catch a report written after this search
	// read, so the search must see every report written before it.
	res, err := s.areaIn(ctx, []string{ev.Environment}, q, cover{level: FineLevel, cells: search}, false)
	if err != nil {
		return event.Event{}, false, fmt.Errorf("search duplicates of %s: %w", ev.ID, err)
	}
	defer res.Release()
	source := sourceID(ev.Source())
	keys := make([]store.Key, 0, min(len(res.Events), maxCandidates))
	for _, e := range res.Events {
		// The source's own reports are passed over by the index record, unread.
		if e.ID != ev.ID && len(keys) < maxCandidates && !bytes.Equal(e.source, source) {
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

// mergeOps merges dup into survivor at now and returns dup merged and the transaction that
// stores it so: dup written on dupCond and taken out of the cells dupCells, and on the
// survivor, read again under the condition of its version, the confirmation of dup's
// organisation, its history entry, and the corroboration its publisher's reputation counts.
// A survivor that ended or changed since the search found it is store.ErrConflict: search
// again.
func (s *Store) mergeOps(ctx context.Context, dup event.Event, dupCond store.Condition, dupCells []h3.Cell, survivor string, now time.Time) (event.Event, []store.Op, error) {
	surv, prev, survCells, err := s.loadWithVote(ctx, survivor, event.Reporter(dup.Org, nil))
	if err != nil {
		return event.Event{}, nil, err
	}
	if !mayMerge(dup, surv, now) {
		return event.Event{}, nil, fmt.Errorf("survivor %s: %w", survivor, store.ErrConflict)
	}
	if err := dup.MergeInto(survivor, now); err != nil {
		return event.Event{}, nil, err
	}
	ops, err := s.changeOps(dup, dupCond, dupCells, nil, nil, now)
	if err != nil {
		return event.Event{}, nil, err
	}
	read := surv.Version
	corroborated := surv.Corroborated
	entry := event.Entry{
		At: now.UTC(), Kind: event.EntryDuplicate, Action: event.ActionConfirm, Reporter: event.Reporter(dup.Org, nil),
		Distance: distance(dup.Point(), surv), Duplicate: dup.ID, ExpiresBefore: surv.ExpiresAt,
	}
	vote, outcome, err := surv.Signal(entry.Reporter, prev, event.ActionConfirm, now)
	if err != nil {
		return event.Event{}, nil, err
	}
	surv.Corroborated = true
	entry.ExpiresAfter = surv.ExpiresAt
	cond := store.IfEqual(attrVersion, read)
	if outcome != event.Unchanged {
		// The organisation's new vote, its item holding the entry.
		more, err := s.changeOps(surv, cond, survCells, survCells, &signalRecord{vote, entry}, now)
		if err != nil {
			return event.Event{}, nil, err
		}
		ops = append(ops, more...)
	} else {
		if corroborated {
			// The organisation had confirmed it already: nothing of the event changes, but it
			// must still be the active event that was read.
			ops = append(ops, store.CheckOp(EventKey(surv.ID), cond))
		} else {
			surv.Version++ // only its corroboration changes
			more, err := s.changeOps(surv, cond, survCells, survCells, nil, now)
			if err != nil {
				return event.Event{}, nil, err
			}
			ops = append(ops, more...)
		}
		ei, err := s.entryItem(surv, entry, dup.ID)
		if err != nil {
			return event.Event{}, nil, err
		}
		ops = append(ops, store.PutOp(ei, store.Condition{}))
	}
	if !corroborated {
		ops = append(ops, reputation.CountOp(surv.Org, surv.Environment, reputation.Tally{For: 1}, now))
	}
	return dup, ops, nil
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
