package embedded

import (
	"fmt"
	"time"
)

// Group commit. Every write goes to one committer goroutine, which runs all the writes waiting
// at that moment in one transaction, so one log record and one fsync serve them all; a write
// that finds the committer idle is committed at once. bbolt's own DB.Batch does the same
// grouping but first waits a fixed MaxBatchDelay for company, so each round of writers waits
// out the timer. Grouping whatever queued up during the previous commit was several times
// faster than any delay tried, and has no timer to tune (docs/performance.md §6).

// maxGroup bounds the writes of one transaction, so one commit's work stays short.
const maxGroup = 256

// commitReq is one write waiting for the committer.
type commitReq struct {
	fn   func(*wtx) error
	done chan error
}

// commit runs fn in a write transaction shared with other writes and returns once that
// transaction is durably committed (or failed). fn may run more than once, so it must decide
// everything from the transaction it is given.
func (s *Store) commit(fn func(*wtx) error) error {
	req := &commitReq{fn: fn, done: make(chan error, 1)}
	s.commits <- req
	return <-req.done
}

// commitLoop is the committer goroutine; it ends when Close closes s.commits. Between groups
// it hands the live layer to the flusher when due (pending.go), also when no writes come.
func (s *Store) commitLoop() {
	defer close(s.committerDone)
	tick := time.NewTicker(flushQuiet / 2)
	defer tick.Stop()
	for {
		var req *commitReq
		select {
		case r, ok := <-s.commits:
			if !ok {
				return
			}
			req = r
		case <-tick.C:
			s.maybeFreeze()
			continue
		}
		group := []*commitReq{req}
	gather:
		for len(group) < maxGroup {
			select {
			case r, ok := <-s.commits:
				if !ok {
					break gather
				}
				group = append(group, r)
			default:
				break gather
			}
		}
		s.runGroup(group)
		s.maybeFreeze()
	}
}

// runGroup commits a group in one transaction. If one write fails, the transaction is
// discarded and every write of the group runs again alone, so that only the failing one fails.
func (s *Store) runGroup(group []*commitReq) {
	err := s.update(func(w *wtx) error {
		for _, r := range group {
			if err := safeCall(r.fn, w); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(group) == 1 {
		for _, r := range group {
			r.done <- err
		}
		return
	}
	for _, r := range group {
		r.done <- s.update(func(w *wtx) error { return safeCall(r.fn, w) })
	}
}

// safeCall turns a panic in a write into an error of that write, so one bad write cannot
// stop the committer and with it every other writer.
func safeCall(fn func(*wtx) error, w *wtx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("embedded: write panicked: %v", p)
		}
	}()
	return fn(w)
}
