package embedded

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// sweepBatch bounds the deletions of one sweeper transaction, so that a large backlog of expired
// items does not hold the write lock for long.
const sweepBatch = 500

// Sweep deletes the items whose TTL is at or before the store's clock, recording each as a
// REMOVE with Expired set (as DynamoDB's TTL deletion appears in its stream), and trims change
// records older than Options.FeedRetention. The background sweeper calls it every
// SweepInterval; tests call it directly. Reads never depend on it: expired items are invisible
// as soon as they expire.
func (s *Store) Sweep(ctx context.Context) error {
	if err := s.enter(ctx); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	defer s.gate.RUnlock()
	at, now := s.now()
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		n, err := s.sweepExpired(at, now)
		if err != nil {
			return fmt.Errorf("sweep expired items: %w", err)
		}
		if n < sweepBatch {
			break
		}
	}
	cutoff := at.Add(-s.retention)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		n, err := s.trimFeed(cutoff)
		if err != nil {
			return fmt.Errorf("trim feed: %w", err)
		}
		if n < sweepBatch {
			return nil
		}
	}
}

// sweepExpired deletes up to sweepBatch expired items in one transaction and returns how many
// index entries it handled.
func (s *Store) sweepExpired(at time.Time, now int64) (int, error) {
	n := 0
	err := s.commit(func(w *wtx) error {
		n = 0
		type entry struct{ k, ik []byte }
		var due []entry
		c := w.cursor(bTTL)
		for k, v := c.First(); k != nil && len(due) < sweepBatch; k, v = c.Next() {
			ttl, ik, err := ttlEntry(k, v)
			if err != nil {
				return err
			}
			if ttl > now {
				break
			}
			due = append(due, entry{k: slices.Clone(k), ik: slices.Clone(ik)})
		}
		n = len(due)
		for _, e := range due {
			w.del(bTTL, e.k)
			it, err := storedItem(w.get(bItems, e.ik))
			if err != nil {
				return err
			}
			// Writes leave entries behind (indexTTL): the item, gone, rewritten with another
			// TTL or not yet expired, decides.
			if it == nil || !it.ExpiredAt(now) {
				continue
			}
			w.del(bItems, e.ik)
			err = appendChange(w, store.Change{Kind: store.ChangeRemove, Key: it.Key(), Old: it, Expired: true, At: at})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// trimFeed deletes up to sweepBatch change records older than cutoff, oldest first, and returns
// how many it deleted.
func (s *Store) trimFeed(cutoff time.Time) (int, error) {
	n := 0
	err := s.commit(func(w *wtx) error {
		n = 0
		var old [][]byte
		c := w.cursor(bFeed)
		for k, v := c.First(); k != nil && len(old) < sweepBatch; k, v = c.Next() {
			at, err := changeTime(v)
			if err != nil {
				return fmt.Errorf("feed record %x: %w", k, err)
			}
			if !at.Before(cutoff) {
				break
			}
			old = append(old, append([]byte(nil), k...))
		}
		for _, k := range old {
			w.del(bFeed, k)
		}
		n = len(old)
		return nil
	})
	return n, err
}

// sweepLoop runs Sweep every interval until Close.
func (s *Store) sweepLoop(interval time.Duration) {
	defer s.sweeper.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-tick.C:
			if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("embedded: TTL sweep failed", "err", err)
			}
		}
	}
}
