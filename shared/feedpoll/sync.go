package feedpoll

import (
	"context"
	"errors"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/interop"
	"github.com/roadevents/roadevents/shared/store"
)

// MaxRecords bounds the records imported from one document; those past it are skipped and
// counted (docs/interop.md §12). It keeps a feed's state within one item of the table.
const MaxRecords = 5000

// Importer is what a poll writes through (*eventstore.Store).
type Importer interface {
	Import(ctx context.Context, c eventstore.Caller, p eventstore.Provenance, rec interop.Record) (event.Event, eventstore.ImportOutcome, error)
	Close(ctx context.Context, c eventstore.Caller, id string) (event.Event, error)
	FeedEventID(org, feedID, upstreamID string) string
}

var _ Importer = (*eventstore.Store)(nil)

// Sync polls feed once (docs/interop.md §12): it fetches the document conditionally on st,
// imports each record, ends the events of records that left the document or whose end has
// passed, and returns the state for the next poll with what it did. Bad data never stops a
// poll: a record that cannot be imported is skipped and counted, and a document that cannot
// be fetched or read leaves every event as it was.
func Sync(ctx context.Context, f *feeds.Fetcher, imp Importer, now time.Time, feed feeds.Feed, st feeds.State) (feeds.State, feeds.Health) {
	h := feeds.Health{At: now}
	doc, err := f.Fetch(ctx, feed.URL, st.Validators)
	if err != nil {
		h.Err = err.Error()
		return st, h
	}
	if doc.NotModified {
		h.NotModified = true
		return st, h
	}
	recs, skipped, err := interop.Parse(feed.Format, doc.Body)
	if err != nil {
		h.Err = err.Error()
		return st, h
	}
	h.Skipped = skipped
	c := eventstore.Caller{Org: feed.Org, Environment: feed.Environment}
	p := eventstore.Provenance{FeedID: feed.ID, License: feed.License, Fetched: now}
	next := feeds.State{Validators: doc.Validators, Known: map[string]bool{}}
	for i, rec := range recs {
		id := imp.FeedEventID(feed.Org, feed.ID, rec.UpstreamID)
		if next.Known[id] || i >= MaxRecords {
			h.Skipped++
			continue
		}
		_, outcome, err := imp.Import(ctx, c, p, rec)
		switch {
		case errors.Is(err, eventstore.ErrRecordOver):
			// Its event expired with the record's end, or is closed now if the end moved
			// earlier.
			if st.Known[id] {
				end(ctx, imp, c, id)
				h.Ended++
			}
			continue
		case failing(ctx, err):
			// The table, not the record: stop here and keep every event, those of this
			// poll's records too, so that none is ended for a record the poll did not read.
			h.Err = "the poll stopped: " + err.Error()
			for id := range st.Known {
				next.Known[id] = true
			}
			next.Validators = feeds.Validators{}
			return next, h
		case err != nil:
			h.Skipped++
			continue
		}
		next.Known[id] = true
		switch outcome {
		case eventstore.ImportCreated:
			h.Created++
		case eventstore.ImportRevised:
			h.Revised++
		default:
			h.Unchanged++
		}
	}
	for id := range st.Known {
		if !next.Known[id] && end(ctx, imp, c, id) {
			h.Ended++
		}
	}
	return next, h
}

// end closes the event of a record that left its feed; false when it was over already.
func end(ctx context.Context, imp Importer, c eventstore.Caller, id string) bool {
	_, err := imp.Close(ctx, c, id)
	return err == nil
}

// failing tells an error of the table or of the poll's context from one of the record.
func failing(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, store.ErrUnavailable) || errors.Is(err, eventstore.ErrBusy)
}
