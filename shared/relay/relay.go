package relay

import (
	"context"
	"fmt"

	"github.com/roadevents/roadevents/shared/store"
)

// RestartMessage is what the relay logs each time it follows the table's changes again after
// a failure; on AWS a metric counts these lines (docs/operations.md §6.2).
const RestartMessage = "relay: following the table's changes again"

// maxBatch bounds the changes of one append.
const maxBatch = 256

// Run appends to log every change of src whose key wants accepts (the items a stream hub
// reads: stream.KeyFilter), from the moment it follows src, until ctx ends or either side
// fails. It appends a gap first: what src recorded before cannot be in the log, so a hub ends
// its streams there and no stream resumes across it. Changes that came while an append was
// under way go in the next one together.
func Run(ctx context.Context, src store.Feed, log *Log, wants func(store.Key) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cur, err := src.Follow(ctx)
	if err != nil {
		return fmt.Errorf("relay: follow the table's changes: %w", err)
	}
	defer cur.Close()
	if err := log.AppendGap(ctx); err != nil {
		return err
	}
	changes := make(chan store.Change, 4*maxBatch)
	readErr := make(chan error, 1)
	go func() {
		defer close(changes)
		for {
			ch, err := cur.Next(ctx)
			if err != nil {
				readErr <- fmt.Errorf("relay: read the table's changes: %w", err)
				return
			}
			if !wants(ch.Key) {
				continue
			}
			select {
			case changes <- ch:
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			}
		}
	}()
	batch := make([]store.Change, 0, maxBatch)
	for ch := range changes {
		batch = append(batch[:0], ch)
	gather:
		for len(batch) < maxBatch {
			select {
			case ch, ok := <-changes:
				if !ok {
					break gather
				}
				batch = append(batch, ch)
			default:
				break gather
			}
		}
		if err := log.Append(ctx, batch); err != nil {
			return err
		}
	}
	err = <-readErr
	if ctx.Err() != nil {
		return nil
	}
	return err
}
