// Package eventstore is the events route group (docs/architecture.md §4): publishing, the
// area query, reading, revising and signalling road events (docs/api.md §4.1 rules 1-6, §7),
// on the table of package store. The domain rules themselves (validation, lifecycle,
// confidence, ids) are package event's; this package stores events, indexes them by area and
// serves them over HTTP.
//
// # Storage layout
//
// An event is a few items, all written by one transaction per change (single-table design,
// docs/architecture.md §2):
//
//	pk "event#<event_id>"               sk "event"             event item
//	    data (event.Event as JSON, without the content as first published while the current
//	    fields still say the same), version, idx (the cells its area index items are under), ttl
//	pk "event#<event_id>"               sk "vote#<reporter>#<time>#<version>"  signal item, one
//	    data (the vote, event.Vote, and the history entry of    per vote a reporter gave (its
//	    its change, as JSON), ttl                               newest stands, docs/api.md §4.1 rule 6)
//	pk "area#<h3 cell at level 6>"      sk "<2 digits><l|s><event_id>"  area index item, one per
//	    d (the record of record.go), ttl                         cell at level 8 of the extent
//	pk "event#<event_id>"               sk "log#<time>#<version>#"  history entry, one per
//	    data (event.Entry as JSON), ttl                             other change (evidence.go)
//	pk "orgevents#<org>#<env>#<day>"    sk "<created_at>#<id>"  the publisher's list of
//	    ttl                                                     events (end.go, InvalidateOrg)
//	pk "merge#<env>#<type>#<h3 cell>"   sk "guard"              merge guard (merge.go)
//
// The reporter of a vote is event.Reporter: the organisation and the reporter_token.
//
// Every change is conditioned on the version read (optimistic concurrency, event.Event.Version):
// publishing on the event item not existing (so of concurrent identical publishes one creates the
// event and the others find it, docs/api.md §4.1 rule 1), revising and signalling on the version
// being the one the change was computed from. Within a process the changes of one event are
// serialised, so a burst of signals on one event queues rather than collides; a change that lost to
// another process reads the event again and is redone, with backoff (Store.Signal). A signal writes
// the event, its signal item and every index item (the items carry the confidence, tallies and
// expiry the signal changed); a revision moves the index to the new extent in the same transaction,
// deleting the cells no longer touched; an event ended by the deny quorum loses its index items.
//
// TTLs. The event and its votes carry the TTL created_at + the type's ceiling + Retention (14
// days): past the latest moment the event can leave active, so it stays readable by id at
// least 7 days after that (docs/api.md §10.2), and the votes never outlive the event. Index items
// carry the event's expires_at, so the table drops them once they are expired; but DynamoDB
// deletes expired items up to days late, so every read filters on expires_at itself: an event
// is gone from GET /v1/events the moment it expires (docs/api.md §3), with no sweeper.
//
// # Area index
//
// GET /v1/events reads the index only, never the events: each index item holds what filtering,
// measuring, sorting and answering need (record.go): expiry, version, tallies, type, the
// extent's positions and the members of the event's public JSON that nothing else gives, from
// which the answer is rendered, byte for byte what json.Marshal of event.Public writes. The
// items are small (about 120 bytes for a point, where the public JSON alone is 550), because
// DynamoDB bills a query by the kilobytes it reads (docs/operations.md §5).
//
// An extent is indexed under the cells geo.IndexCells gives at FineLevel 8, each item in the
// partition of its cell's parent at CoarseLevel 6, sorted by the cell's two digits between the
// levels, then the environment: a point has one index item. A query reads the cells of
// geo.CoverCircle at level 8 when its cover needs at most MaxLookups (20) cells, each cell a
// prefix of its partition and consecutive cells one range (both environments at once: a
// sandbox credential, served both, docs/api.md §1, costs no more); wider queries read whole
// partitions, those of geo.CoverParents (H3 cells do not nest exactly, so a partition's items may
// lie up to about 460 m outside its own cell). Measured over 2000 random centres (latitudes up to
// 60°), with cover area standing for the items read at a uniform density:
//
//	radius   level  cells (min-avg-max)  cover area   circle
//	1000 m     8       7 - 11.0 - 17        8.1 km²    3.1 km²
//	1000 m     7       1 -  3.5 -  5       18.4 km²
//	9780 m     6      12 - 15.6 - 24        566 km²    300 km²
//	9780 m     5       3 -  4.5 -  7       1150 km²
//	9780 m     7      61 - 76.7 - 118       396 km²
//
// Level 8 serves the default radius with the fewest items within the budget (at the benchmark
// city's 40 events per km², about 390 items read for 140 answered, against about 740 at level 7),
// in about 7 table Queries; up to 1.1 km its cover stays within 20 cells (up to 1.6 km for half the
// centres). Larger radii read level 6 partitions: 12 to 24 of them, where level 5 would read a
// third of the partitions but twice the items, and level 7 five times the partitions. They are
// read nearest first, in waves of growing size, and the query stops once 500 events
// (MaxEventsPerQuery, docs/api.md §8) are nearer than any unread partition could hold: over a
// dense city the widest query reads the 2 to 4 partitions around its centre.
//
// Each record also carries what lets a query skip most exact distances (record.go, cache.go):
// a point whose chord to the centre is longer than the bound's (geo.ChordSquared; the bound is
// the radius, or once 500 events are found the 500th's distance), or a LineString whose
// vertices are all farther than the bound by half its longest segment, is not measured. The
// points found are ordered and capped by their squared chord, which rises with the distance;
// only a point within a metre of the radius, or whose chord is too close to another's to tell
// their order, is measured, as geo.Distance measures it. A cached partition
// keeps its records in groups, points apart from LineStrings, by grid square (0.02°) of their
// first position, each with a span that holds its records' whole extents: a query reads a
// partition's groups nearest first once its answer can fill, by their chord to the centre
// less their span (a lower bound that takes no trigonometry), and skips those that cannot come
// within the bound, so a wide query touches a fraction of the records its cells hold. Within
// a group the records lie in runs by type, so that a query for some types, and the duplicate
// search of every publish, reads only theirs (docs/performance.md §4).
//
// A query answers from the index as it stands a moment ago: GET /v1/events reads it eventually
// consistent (AreaQuery.Eventual), for half the read units; the stream's snapshot and the
// duplicate search, on which a write or a promise of every later change depends, read it
// strongly consistent (docs/architecture.md §2).
//
// # Area cache
//
// Reading an index item through store.Table builds a map and allocates several times per item,
// and that, not the geometry, bounded the query rate: a 1000 m query reads about 390 items.
// With Options.CacheBytes a Store keeps the partitions it read, whole, decoded and with each
// event's public JSON rendered, and applies its own index writes to them (cache.go), so a query
// over partitions read before touches the table not at all. Reading partitions whole, such a
// query needs only their list: it reads those of geo.CoverParents, kept for the cell at level 8
// of its centre and its radius (covers.go), rather than making a fine cover of its own, a tenth
// of a 1000 m query's CPU. That is exact only where this Store is the only writer of the area index, which service
// arranges for the embedded store of `go run .` (one process by its file lock); Lambdas
// sharing DynamoDB read the table every time. The CPU time per query with and without the
// cache (bench_test.go) is in docs/performance.md §4.
//
// Every change is one transaction of at most 100 operations (store.MaxTransactOps), and a
// revision may delete every old index item and put every new one, so an extent is refused with
// 422 past MaxIndexCells (49) cells counted at levels 8 and 6, about 20 km (measured over random
// 10-vertex lines: 20 km spans 33 such cells on average and 45 at most, 30 km 48 and 66), rather
// than written in several transactions, which a failure between them would leave serving a
// stale or half-moved event.
package eventstore
