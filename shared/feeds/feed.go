package feeds

import (
	"time"

	"github.com/roadevents/roadevents/shared/interop"
)

// Feed is a feed as a poll needs it: where, in which format, for which organisation and
// environment, under which licence.
type Feed struct {
	ID, Org, Environment string
	URL                  string
	Format               interop.Format
	License              string
}

// State is what one poll of a feed hands to the next.
type State struct {
	Validators Validators
	// Known holds the events of the records of the last document read.
	Known map[string]bool
}

// Health is what one poll did, for the feed's page in the console.
type Health struct {
	At time.Time
	// Err is why the poll read nothing (fetch or document); the feed's events stay as they
	// were until their own expiry.
	Err string
	// NotModified: the document was the one of the last poll.
	NotModified bool
	// Created, Revised and Unchanged count the records imported; Skipped those that could not
	// be ours; Ended the events of records that left the feed (closed now) or whose end
	// passed since the last poll.
	Created, Revised, Unchanged, Skipped, Ended int
}
