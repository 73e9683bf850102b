package eventstore

import (
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store"
)

// SeedOps returns what publishing in as c stores when the event merges with nothing: the
// writes a test loads a large city with, many events to a transaction, instead of publishing
// them one by one (which searches for duplicates each time).
func (s *Store) SeedOps(c Caller, in event.EventIn) ([]store.Op, error) {
	id := event.DerivedID(s.idKey, c.Org, *in.ClientEventID)
	now := s.clock.Now()
	ev := event.New(in, c.Org, c.Environment, id, now)
	cells, err := indexCells(ev.Extent())
	if err != nil {
		return nil, err
	}
	ops, err := s.changeOps(ev, store.IfNotExists(), nil, cells, nil, now)
	if err != nil {
		return nil, err
	}
	return append(ops, store.PutOp(s.orgItem(ev), store.Condition{})), nil
}
