// Package webhookfeed turns the table's change feed into webhook deliveries
// (docs/webhooks.md §1): it reads what happened to each event from the entries of its history
// as they are written (a confirmation or denial counted, another source merged in, a close, a
// verdict, a deny quorum), from a publication merged at once, and from the expiry of its area
// index items (an event that expired on its own), and enqueues one delivery per
// endpoint of the event's organisation that subscribed to that kind. It reads the feed after
// the write is committed, so no delivery ever delays a publish or a signal, and it keeps its
// place in the feed in the table, so that a process that stops loses nothing: on start it
// reads on from there, and a change read twice makes the same delivery, stored once.
package webhookfeed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// Body is a delivery's JSON body (docs/webhooks.md §1, §5).
type Body struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	CreatedAt   time.Time `json:"created_at"`
	Environment string    `json:"environment"`
	Data        struct {
		Event event.EventPublic `json:"event"`
		// Rule is the alert rule an alert.* delivery is of.
		Rule *RuleRef `json:"rule,omitempty"`
		// Reason says why an alert.ended came: the event is no longer active, left the
		// rule's area, or fell below its confidence.
		Reason string `json:"reason,omitempty"`
	} `json:"data"`
}

// RuleRef names an alert rule in a delivery.
type RuleRef struct {
	RuleID string `json:"rule_id"`
	Name   string `json:"name"`
}

// The reasons of an alert.ended (docs/webhooks.md §5).
const (
	ReasonNotActive     = "not_active"
	ReasonLeftArea      = "left_area"
	ReasonLowConfidence = "below_confidence"
)

// rulesRefreshInterval bounds how long a producer fed by a stream in shards keeps the rules it
// read: a rule's change in another shard than the producer reads is seen within it.
const rulesRefreshInterval = 15 * time.Second

// Producer makes the deliveries of the changes it is given.
type Producer struct {
	Table     store.Table
	Endpoints *webhooks.Endpoints
	Queue     *webhooks.Queue
	// Rules are the alert rules; nil makes no alert deliveries.
	Rules *alerts.Rules
	Clock clock.Clock
	// Logger is slog.Default() when nil.
	Logger *slog.Logger

	mu sync.Mutex
	// byID holds every rule, as the feed has changed them since they were read at
	// rulesAt; index is built from them.
	byID    map[string]alerts.Rule
	rulesAt time.Time
	index   *alerts.Index
	// sharded: the changes come from a stream in shards (HandleStream), where a rule's change
	// may come in another shard than the events', so the rules are read again now and then.
	sharded bool
}

// entryKinds returns the kinds of delivery to its publisher an entry of an event's history
// makes: a confirmation or denial counted, another source merged in, a close, a verdict, and a
// deny quorum (the signal that reached it ends the event too).
func entryKinds(e event.Entry) []string {
	switch e.Kind {
	case event.EntrySignal:
		kinds := []string{webhooks.KindDenied}
		if e.Action == event.ActionConfirm {
			kinds = []string{webhooks.KindConfirmed}
		}
		if e.Ended {
			kinds = append(kinds, webhooks.KindEnded)
		}
		return kinds
	case event.EntryDuplicate, event.EntryMerged:
		return []string{webhooks.KindMerged}
	case event.EntryClosed, event.EntryInvalidated:
		return []string{webhooks.KindEnded}
	}
	return nil
}

// handledImages tells which changes' images Handle reads: alert rules, and the items of an
// event's partition (the event, its history and signals). An area index item's expiry is
// known by its key; the other items (the index, publishers' lists) are none of Handle's
// business, and decoding their images was most of what following the feed cost after a burst
// of publishes (docs/performance.md §6).
func handledImages(k store.Key) bool {
	return k.PK == alerts.Partition || eventstore.IsEventPartition(k.PK)
}

// Handle enqueues the deliveries of ch and returns how many. Handling a change again
// enqueues nothing new.
func (p *Producer) Handle(ctx context.Context, ch store.Change) (int, error) {
	s := &sender{p: p, endpoints: map[string][]webhooks.Endpoint{}}
	switch {
	case ch.Key.PK == alerts.Partition:
		return 0, p.ruleChanged(ch)
	case ch.Kind == store.ChangeRemove && ch.Expired:
		// An area index item expires with its event: an event that reached its expiry active.
		if id, ok := eventstore.AreaEventID(ch.Key); ok {
			return p.expired(ctx, s, id)
		}
	case ch.New == nil:
	case eventstore.IsEventItem(ch.Key):
		return p.eventChanged(ctx, s, ch)
	case ch.Kind == store.ChangeInsert:
		return p.entry(ctx, s, ch)
	}
	return 0, nil
}

// entry makes the deliveries of a new entry of an event's history to the event's publisher
// (§1).
func (p *Producer) entry(ctx context.Context, s *sender, ch store.Change) (int, error) {
	id, e, ok, err := eventstore.DecodeEntry(ch.New)
	if !ok || err != nil {
		return 0, err
	}
	kinds := entryKinds(e)
	if len(kinds) == 0 {
		return 0, nil
	}
	ev, ok, err := p.event(ctx, id)
	if !ok || err != nil {
		return 0, err
	}
	made := 0
	for _, kind := range kinds {
		n, err := s.deliver(ctx, ev.Org, kind, ch.Key.String(), ch.At, ev, nil)
		if made += n; err != nil {
			return made, err
		}
	}
	return made, nil
}

// expired makes the deliveries of an event that reached its expiry while active: event.expired
// to its publisher (§1), and alert.ended for the rules it matched (§5). Only an event still
// active when its time ran out expired on its own (an ended one removes its index items
// itself); each of its index items says so, and each delivery is made once.
func (p *Producer) expired(ctx context.Context, s *sender, id string) (int, error) {
	ev, ok, err := p.event(ctx, id)
	if !ok || err != nil || ev.Status != event.StatusActive || ev.ExpiresAt.After(p.Clock.Now()) {
		return 0, err
	}
	made, err := s.deliver(ctx, ev.Org, webhooks.KindExpired, ev.ID, ev.ExpiresAt, ev, nil)
	if err != nil || p.Rules == nil {
		return made, err
	}
	index, err := p.ruleIndex(ctx)
	if err != nil {
		return made, err
	}
	for _, rule := range index.Matching(ev) {
		n, err := s.deliver(ctx, rule.Org, webhooks.KindAlertEnded, ev.ID+"#expired#"+rule.ID, ev.ExpiresAt, ev,
			func(b *Body) { b.Data.Rule, b.Data.Reason = &RuleRef{rule.ID, rule.Name}, ReasonNotActive })
		if made += n; err != nil {
			return made, err
		}
	}
	return made, nil
}

// eventChanged makes the deliveries of a change of an event's item: a publication merged at
// once into a report already there (it has no entry of its own) to its publisher (§1), and
// the alerts of the rules the event matched before or matches now (§5).
func (p *Producer) eventChanged(ctx context.Context, s *sender, ch store.Change) (int, error) {
	// The rules come first (their index is kept), so that a change that can make no delivery,
	// not a publication merged at once and no rule to match, is not decoded: that had been
	// every publish (docs/performance.md §13). An error reading them is returned once the
	// merged delivery is made.
	var (
		index    *alerts.Index
		rulesErr error
	)
	if p.Rules != nil {
		index, rulesErr = p.ruleIndex(ctx)
	}
	alerting := index != nil && rulesErr == nil && index.Len() > 0
	merging := ch.Kind == store.ChangeInsert && eventstore.MayBeMerged(ch.New)
	if !merging && !alerting {
		return 0, rulesErr
	}
	now, err := eventstore.DecodeEvent(ch.New)
	if err != nil {
		return 0, err
	}
	made := 0
	if merging && now.Status == event.StatusMerged {
		if made, err = s.deliver(ctx, now.Org, webhooks.KindMerged, ch.Key.String(), ch.At, now, nil); err != nil {
			return made, err
		}
	}
	if !alerting {
		return made, rulesErr
	}
	var before event.Event
	if ch.Old != nil {
		if before, err = eventstore.DecodeEvent(ch.Old); err != nil {
			return made, err
		}
	}
	was, is := index.Matching(before), index.Matching(now)
	// Whether a receiver would see the event changed: its served form differs.
	at := p.Clock.Now()
	changed := !reflect.DeepEqual(before.Public(at), now.Public(at))
	for _, rule := range union(was, is) {
		in, out := containsRule(was, rule), containsRule(is, rule)
		var kind, reason string
		switch {
		case !in && out:
			kind = webhooks.KindAlertCreated
		case in && out && changed:
			kind = webhooks.KindAlertUpdated
		case in && !out:
			kind, reason = webhooks.KindAlertEnded, endReason(rule, now)
		default:
			continue
		}
		source := ch.Key.String() + "#" + ch.Seq + "#" + rule.ID
		n, err := s.deliver(ctx, rule.Org, kind, source, ch.At, now,
			func(b *Body) { b.Data.Rule, b.Data.Reason = &RuleRef{rule.ID, rule.Name}, reason })
		if made += n; err != nil {
			return made, err
		}
	}
	return made, nil
}

// endReason says why ev, matched by rule before, no longer is.
func endReason(rule alerts.Rule, ev event.Event) string {
	switch {
	case ev.Status != event.StatusActive:
		return ReasonNotActive
	case !rule.Area.Touches(ev.Extent()):
		return ReasonLeftArea
	default:
		return ReasonLowConfidence
	}
}

// event reads the event id; false when its retention ended already.
func (p *Producer) event(ctx context.Context, id string) (event.Event, bool, error) {
	it, err := p.Table.Get(ctx, eventstore.EventKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return event.Event{}, false, nil
	}
	if err != nil {
		return event.Event{}, false, fmt.Errorf("webhookfeed: read event %s: %w", id, err)
	}
	ev, err := eventstore.DecodeEvent(it)
	return ev, err == nil, err
}

// sender makes the deliveries of one change, reading each organisation's endpoints once
// however many kinds and rules the change concerns.
type sender struct {
	p         *Producer
	endpoints map[string][]webhooks.Endpoint
}

// deliver enqueues a delivery of kind about ev to each enabled endpoint of org subscribed to
// it; source names what happened, so that the same news makes the same delivery ids.
func (s *sender) deliver(ctx context.Context, org, kind, source string, at time.Time, ev event.Event, fill func(*Body)) (int, error) {
	endpoints, ok := s.endpoints[org]
	if !ok {
		var err error
		if endpoints, err = s.p.Endpoints.List(ctx, org); err != nil {
			return 0, err
		}
		s.endpoints[org] = endpoints
	}
	now, made := s.p.Clock.Now(), 0
	public := ev.Public(now)
	for _, ep := range endpoints {
		if !ep.Enabled || !slices.Contains(ep.Kinds, kind) {
			continue
		}
		d := webhooks.Delivery{ID: webhooks.DeliveryID(at, source+"#"+kind, ep.ID), Org: org, Endpoint: ep.ID, Kind: kind, CreatedAt: now}
		b := Body{ID: d.ID, Kind: kind, CreatedAt: now.UTC(), Environment: public.Environment}
		b.Data.Event = public
		if fill != nil {
			fill(&b)
		}
		var err error
		if d.Body, err = json.Marshal(b); err != nil {
			return made, err
		}
		if err := s.p.Queue.Enqueue(ctx, d); err != nil {
			return made, err
		}
		made++
	}
	return made, nil
}

// LoadRules reads every alert rule now. From then on the producer keeps them as the feed
// changes them, so that a rule applies to the changes after its own in the feed's order; Run
// calls it before it follows the feed.
func (p *Producer) LoadRules(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loadRules(ctx)
}

// ruleIndex returns the index of every alert rule: read at the first change of an event if
// LoadRules was not called, and, fed by a stream in shards, again after rulesRefreshInterval.
func (p *Producer) ruleIndex(ctx context.Context) (*alerts.Index, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.index != nil && (!p.sharded || p.Clock.Now().Sub(p.rulesAt) < rulesRefreshInterval) {
		return p.index, nil
	}
	if err := p.loadRules(ctx); err != nil {
		return nil, err
	}
	return p.index, nil
}

func (p *Producer) loadRules(ctx context.Context) error {
	now := p.Clock.Now()
	all, err := p.Rules.All(ctx)
	if err != nil {
		return fmt.Errorf("webhookfeed: read the alert rules: %w", err)
	}
	p.byID, p.rulesAt = map[string]alerts.Rule{}, now
	for _, r := range all {
		p.byID[r.ID] = r
	}
	p.index = alerts.NewIndex(all)
	return nil
}

// ruleChanged applies a change of the rules' partition to the rules kept.
func (p *Producer) ruleChanged(ch store.Change) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.index == nil {
		return nil // not read yet: they will be read as they are
	}
	it := ch.New
	if it == nil {
		it = ch.Old
	}
	rule, ok, err := alerts.Decode(it)
	if !ok || err != nil {
		return err
	}
	if ch.New == nil {
		delete(p.byID, rule.ID)
	} else {
		p.byID[rule.ID] = rule
	}
	p.index = alerts.NewIndex(slices.Collect(maps.Values(p.byID)))
	return nil
}

func containsRule(rules []alerts.Rule, r alerts.Rule) bool {
	return slices.ContainsFunc(rules, func(x alerts.Rule) bool { return x.ID == r.ID })
}

func union(a, b []alerts.Rule) []alerts.Rule {
	out := append([]alerts.Rule{}, a...)
	for _, r := range b {
		if !containsRule(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// HandleStream makes the deliveries of a batch of the table's stream, as Lambda hands it to
// the producer function on AWS (docs/webhooks.md §3). The records of a shard come in order; at
// the first that cannot be handled it stops and reports it, so that Lambda hands that record
// and the ones after it again (the event source's ReportBatchItemFailures): nothing is skipped,
// and what is handled twice makes the same deliveries, stored once.
func (p *Producer) HandleStream(ctx context.Context, ev events.DynamoDBEvent) events.DynamoDBEventResponse {
	p.mu.Lock()
	p.sharded = true
	p.mu.Unlock()
	for _, rec := range ev.Records {
		ch, err := dynamodb.ChangeFromLambda(rec)
		if err == nil {
			_, err = p.Handle(ctx, ch)
		}
		if err != nil {
			p.logger().Warn("webhookfeed: a change could not be handled; the batch is handed again from it", "event", rec.EventID, "err", err)
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: rec.Change.SequenceNumber}}}
		}
	}
	return events.DynamoDBEventResponse{}
}

// The producer's place in the feed, kept in the table.
var checkpointKey = store.Key{PK: "webhookfeed#checkpoint", SK: "position"}

const attrPosition = "position"

// recordEvery is how often the producer records its place while it reads changes that make
// no delivery; after one that makes deliveries it records it at once.
const recordEvery = 5 * time.Second

// Run follows feed from the position it last recorded (its end, the first time) until ctx
// ends, handling each change and recording its position after it. A change it cannot handle
// is retried, so that none is skipped; when the feed no longer holds the recorded position
// (the process was stopped longer than the feed keeps changes), it reads on from the end and
// logs the gap.
func (p *Producer) Run(ctx context.Context, feed store.Replayer) error {
	pos, err := p.position(ctx)
	if err != nil {
		return err
	}
	if p.Rules != nil {
		if err := p.LoadRules(ctx); err != nil {
			return err
		}
	}
	if pos == 0 {
		// The first start: from the feed's end, recorded at once, so that a process stopped
		// before its first delivery reads on from here too.
		if pos, err = feed.Last(ctx); err != nil {
			return fmt.Errorf("webhookfeed: read the feed's end: %w", err)
		}
		if err := p.record(ctx, pos); err != nil {
			return err
		}
	}
	cur, err := feed.FollowAfter(ctx, pos)
	if errors.Is(err, store.ErrReplay) {
		p.logger().Warn("webhookfeed: the feed no longer holds the changes after the recorded position; deliveries of the gap are lost",
			"position", pos)
		cur, err = feed.Follow(ctx)
	}
	if err != nil {
		return fmt.Errorf("webhookfeed: follow the feed: %w", err)
	}
	defer cur.Close()
	if f, ok := cur.(store.ImageFilter); ok {
		f.FilterImages(handledImages)
	}
	var recorded time.Time
	for {
		ch, err := cur.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("webhookfeed: read the feed: %w", err)
		}
		if ch.Key == checkpointKey {
			continue // its own record of its place
		}
		made := 0
		for attempt := 0; ; attempt++ {
			if made, err = p.Handle(ctx, ch); err == nil || ctx.Err() != nil {
				break
			}
			p.logger().Warn("webhookfeed: a change could not be handled; retrying", "key", ch.Key.String(), "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(min(attempt+1, 30)) * time.Second):
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		n, err := strconv.ParseUint(ch.Seq, 10, 64)
		if err != nil || made == 0 && time.Since(recorded) < recordEvery {
			continue
		}
		if err := p.record(ctx, n); err != nil {
			p.logger().Warn("webhookfeed: the position could not be recorded; changes since the last one are read again at start", "err", err)
		}
		recorded = time.Now()
	}
}

func (p *Producer) record(ctx context.Context, pos uint64) error {
	_, err := p.Table.Update(ctx, checkpointKey, store.Update{Set: map[string]any{attrPosition: int64(pos)}}, store.Condition{})
	if err != nil {
		return fmt.Errorf("webhookfeed: record the position: %w", err)
	}
	return nil
}

func (p *Producer) position(ctx context.Context) (uint64, error) {
	it, err := p.Table.Get(ctx, checkpointKey)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("webhookfeed: read the recorded position: %w", err)
	}
	return uint64(it.Int(attrPosition)), nil
}

func (p *Producer) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}
