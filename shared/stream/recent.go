package stream

import (
	"sort"
	"time"
)

// recentBytes bounds the deltas the hub keeps for resuming streams (recent): at 200 changes a
// second of about 1 KB each, a quarter of an hour.
const recentBytes = 16 << 20

// recent holds the deltas the hub dispatched lately, by feed position, so that a stream that
// resumes is served from memory: reading its gap from the feed again decodes and renders every
// change once per resuming stream, which, when thousands come back together (a network blip),
// costs far more than the changes did (docs/performance.md §8). It is complete from position
// from on: every change after from that a subscriber could want is in it. It is used under
// Hub.dmu.
type recent struct {
	from    uint64
	entries []recentDelta // in position order
	bytes   int
}

type recentDelta struct {
	q     *Queued
	sides []side
	at    time.Time
}

// add keeps q, dispatched at at, dropping the oldest beyond recentBytes or window.
func (r *recent) add(q *Queued, sides []side, at time.Time, window time.Duration) {
	r.entries = append(r.entries, recentDelta{q: q, sides: sides, at: at})
	r.bytes += len(q.Data)
	n := 0
	for n < len(r.entries)-1 && (r.bytes > recentBytes || at.Sub(r.entries[n].at) > window) {
		r.bytes -= len(r.entries[n].q.Data)
		r.from = r.entries[n].q.Position + 1
		n++
	}
	if n > 0 {
		clear(r.entries[:n])
		r.entries = r.entries[n:]
	}
}

// reset forgets every delta: the changes up to pos were not dispatched (no subscriber wanted
// them), so the record is complete only after it.
func (r *recent) reset(pos uint64) {
	clear(r.entries)
	r.entries, r.bytes, r.from = r.entries[:0], 0, pos+1
}

// covers reports whether every change after position after is in r.
func (r *recent) covers(after uint64) bool { return r.from > 0 && after+1 >= r.from }

// since returns the deltas after position after up to upTo, oldest first.
func (r *recent) since(after, upTo uint64) []recentDelta {
	i := sort.Search(len(r.entries), func(i int) bool { return r.entries[i].q.Position > after })
	j := sort.Search(len(r.entries), func(i int) bool { return r.entries[i].q.Position > upTo })
	return r.entries[i:max(i, j)]
}
