// Package stream is the live stream of road events (docs/api.md §4.1 rule 7, §5 stream ticket
// rules, §6, §10.2 (Stream); docs/architecture.md §3): the tickets of
// POST /v1/stream/tickets, the SSE framing, the hub that routes the table's changes to
// subscribers, and the handler of GET /v1/stream. streamer/ (DynamoDB Streams) and main.go
// (the embedded store's feed) run the same code.
//
// # Flow of a change
//
// Hub.Run follows the table's change feed (store.Feed); a Decoder (NewDecoder, EventsDecoder) turns
// each record of an event item into an EventChange of the kind docs/api.md §10.2 names (Classify):
// created, updated, signal or ended; removals and natural expiry emit nothing
// (docs/api.md §6 rule 4). Hub.Dispatch encodes the delta once and finds the subscriptions through
// an index of H3 cells (the cells of the event's old and new extent), matches each exactly
// (viewer's environment, type, min_confidence, distance to the full extent: the rules of GET
// /v1/events), and puts the delta in each matching subscription's queue of QueueSize, dropping the
// oldest when full (docs/api.md §6 rule 3). It never waits for a subscriber.
//
// # A connection
//
// The route's middleware has checked the credential and the router the query, so a refusal is a
// status with the usual body (docs/api.md §6 rule 1). The handler subscribes first, then reads the
// snapshot (Snapshotter: the query of GET /v1/events), so that no change falls between the two; a
// delta the snapshot already shows is not sent again. It then writes deltas as they come, a
// keepalive every KeepaliveInterval, busy or idle, so that a connection is never silent for
// longer (docs/api.md §6; the dropped counter reaches a busy client too), and a bye before closing:
// max_connection_age after MaxConnectionAge, and also when the server drains or the hub lost its
// feed (docs/api.md §10.2 names only two reasons; both ask the client to reconnect, which is what
// it must do), snapshot_unavailable when no snapshot could be read or the hub does not follow its feed.
//
// Over HTTP/1 the stream takes its TCP connection over from net/http once the header is sent
// (Hijack), and runs in a goroutine of its own, so that an idle stream costs one small
// goroutine rather than net/http's two and their buffers (docs/performance.md §8); the access
// log therefore records the stream when it begins, with no byte count. Over HTTP/2 it stays in
// the handler and writes through the ResponseWriter. Writes run under a deadline
// (Deps.WriteTimeout), so a client that stops reading is disconnected without holding anyone
// else up.
package stream
