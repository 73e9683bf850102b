package webhookfeed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/roadevents/roadevents/shared/alerts"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/webhookfeed"
	"github.com/roadevents/roadevents/shared/webhooks"
)

var idKey = []byte("0123456789abcdef0123456789abcdef")

type rig struct {
	tab       tables.Table
	events    *eventstore.Store
	endpoints *webhooks.Endpoints
	queue     *webhooks.Queue
	rules     *alerts.Rules
	producer  *webhookfeed.Producer
}

func newRig(t *testing.T, tab tables.Table) *rig {
	t.Helper()
	evs, err := eventstore.New(tab, eventstore.Options{IDKey: idKey, Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := seal.NewAESGCM(bytes.Repeat([]byte{7}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{tab: tab, events: evs, queue: webhooks.NewQueue(tab, tab.Clock),
		endpoints: webhooks.NewEndpoints(tab, audit.New(tab, audit.Options{Clock: tab.Clock}), sealer, webhooks.EndpointsOptions{Clock: tab.Clock})}
	r.rules = alerts.NewRules(tab, audit.New(tab, audit.Options{Clock: tab.Clock}), tab.Clock)
	r.producer = &webhookfeed.Producer{Table: tab, Endpoints: r.endpoints, Queue: r.queue, Rules: r.rules, Clock: tab.Clock}
	return r
}

// follow hands every change of the feed to the producer until the test ends.
func (r *rig) follow(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// As Run does: the rules as they are now, then as the feed changes them.
	if err := r.producer.LoadRules(ctx); err != nil {
		t.Fatal(err)
	}
	cur, err := r.tab.Feed.Follow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ch, err := cur.Next(ctx)
			if err != nil {
				return
			}
			// A change still being handled when the test ends fails with the cancelled
			// context; that is the end of following, not a fault.
			if _, err := r.producer.Handle(ctx, ch); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	}()
	t.Cleanup(func() { cancel(); cur.Close(); <-done })
}

func (r *rig) endpoint(t *testing.T, org string, kinds ...string) webhooks.Endpoint {
	t.Helper()
	ep, _, err := r.endpoints.Create(context.Background(), org, webhooks.Actor{}, webhooks.EndpointDraft{
		URL: ptr("https://hooks.example/" + org), Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// rule makes an alert rule of org.
func (r *rig) rule(t *testing.T, org string, d alerts.Draft) alerts.Rule {
	t.Helper()
	if d.Environment == nil {
		d.Environment = ptr(event.EnvironmentLive)
	}
	rule, err := r.rules.Create(context.Background(), org, alerts.Actor{}, d)
	if err != nil {
		t.Fatal(err)
	}
	return rule
}

// alerted lists the alert deliveries to ep as "kind rule-name event [reason]", sorted.
func (r *rig) alerted(t *testing.T, ep webhooks.Endpoint) []string {
	t.Helper()
	list, err := r.queue.List(context.Background(), ep.Org, ep.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range list {
		var b webhookfeed.Body
		if err := json.Unmarshal(d.Body, &b); err != nil || b.Data.Rule == nil {
			t.Fatalf("delivery %s body %s: %v; want a rule", d.ID, d.Body, err)
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", d.Kind, b.Data.Rule.Name, b.Data.Event.EventID, b.Data.Reason)))
	}
	return sorted(out)
}

// delivered lists the kinds delivered to ep, each with the event it is about, in order.
func (r *rig) delivered(t *testing.T, ep webhooks.Endpoint) []string {
	t.Helper()
	list, err := r.queue.List(context.Background(), ep.Org, ep.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range slices.Backward(list) {
		var b webhookfeed.Body
		if err := json.Unmarshal(d.Body, &b); err != nil || b.ID != d.ID || b.Kind != d.Kind {
			t.Fatalf("delivery %s body %s: %v; want its id and kind", d.ID, d.Body, err)
		}
		out = append(out, d.Kind+" "+b.Data.Event.EventID)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func circle(lat, lon, r float64) *alerts.Area {
	return &alerts.Area{Circle: &alerts.Circle{Center: geo.Point{Lat: lat, Lon: lon}, RadiusM: r}}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func caller(org string) eventstore.Caller {
	return eventstore.Caller{Org: org, Environment: event.EnvironmentLive}
}

// docs/webhooks.md §1: each kind fires exactly when it happens to one of the organisation's
// events, to the endpoints that subscribed to it: a confirmation and a denial counted (a
// repeated one is not), another source merged in, a publication merged at once into another's,
// a close, a deny quorum; an endpoint of another organisation hears nothing of them.
func TestEveryKindFiresWhenItHappens(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newRig(t, tab)
		all := r.endpoint(t, "org_pub", webhooks.KindConfirmed, webhooks.KindDenied, webhooks.KindMerged, webhooks.KindEnded)
		ended := r.endpoint(t, "org_pub", webhooks.KindEnded)
		other := r.endpoint(t, "org_other", webhooks.Kinds...)
		r.follow(t)
		ctx := context.Background()
		publish := func(org string, lat float64) event.Event {
			t.Helper()
			ev, _, err := r.events.Publish(ctx, caller(org), event.EventIn{Type: "object_on_road", Lat: lat, Lon: 11.5})
			if err != nil {
				t.Fatal(err)
			}
			return ev
		}
		signal := func(org, id, action, reporter string) {
			t.Helper()
			if _, _, err := r.events.Signal(ctx, caller(org), id, event.SignalIn{Action: action, ReporterToken: &reporter}); err != nil {
				t.Fatal(err)
			}
		}

		a := publish("org_pub", 48.10)
		signal("org_x", a.ID, event.ActionConfirm, "car-1")
		signal("org_x", a.ID, event.ActionConfirm, "car-1") // the same reporter again: nothing new
		signal("org_y", a.ID, event.ActionDeny, "van-1")
		publish("org_x", 48.10) // another source's report of a: merged into it
		if _, err := r.events.Close(ctx, caller("org_pub"), a.ID); err != nil {
			t.Fatal(err)
		}
		theirs := publish("org_other", 48.20)
		c := publish("org_pub", 48.20) // merged at once into org_other's report
		d := publish("org_pub", 48.30)
		for i := range event.DenyQuorum {
			signal("org_y", d.ID, event.ActionDeny, fmt.Sprint("van-", i))
		}

		want := []string{
			"event.confirmed " + a.ID, "event.denied " + a.ID, "event.merged " + a.ID, "event.ended " + a.ID,
			"event.merged " + c.ID,
			"event.denied " + d.ID, "event.denied " + d.ID, "event.denied " + d.ID, "event.ended " + d.ID,
		}
		apitest.Eventually(t, "every delivery made", func() bool { return len(r.delivered(t, all)) >= len(want) })
		// Deliveries made in one millisecond list in no particular order.
		slices.Sort(want)
		if got := r.delivered(t, all); !slices.Equal(sorted(got), want) {
			t.Errorf("deliveries to the endpoint of every kind:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// The producer enqueues one endpoint's delivery after another's: the last change's
		// may reach this endpoint after the first has heard everything.
		apitest.Eventually(t, "the ended deliveries", func() bool { return len(r.delivered(t, ended)) >= 2 })
		if got := r.delivered(t, ended); !slices.Equal(sorted(got), sorted([]string{"event.ended " + a.ID, "event.ended " + d.ID})) {
			t.Errorf("deliveries to the endpoint of ended only: %v; want a's close and d's quorum", got)
		}
		// org_other's report was corroborated by org_pub's duplicate: that is news for it.
		if got := r.delivered(t, other); !slices.Equal(got, []string{"event.merged " + theirs.ID}) {
			t.Errorf("deliveries to org_other: %v; want only the merge into its own report", got)
		}
	})
}

// docs/webhooks.md §1, §3: a producer stopped between a commit and its delivery loses nothing:
// the next one reads on from the place the last recorded, and what it reads again is not sent
// twice.
func TestProducerRestartLosesNothing(t *testing.T) {
	tab := tables.Embedded(t)
	r := newRig(t, tab)
	ep := r.endpoint(t, "org_pub", webhooks.KindConfirmed)
	feed := tab.Feed.(store.Replayer)
	ctx := context.Background()
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.producer.Run(ctx, feed); err != nil {
				t.Error(err)
			}
		}()
		return func() { cancel(); wg.Wait() }
	}
	stop := run()
	a, _, err := r.events.Publish(ctx, caller("org_pub"), event.EventIn{Type: "accident", Lat: 48.1, Lon: 11.5})
	if err != nil {
		t.Fatal(err)
	}
	confirm := func(reporter string) {
		if _, _, err := r.events.Signal(ctx, caller("org_x"), a.ID, event.SignalIn{Action: event.ActionConfirm, ReporterToken: &reporter}); err != nil {
			t.Fatal(err)
		}
	}
	confirm("car-1")
	apitest.Eventually(t, "the first delivery", func() bool { return len(r.delivered(t, ep)) == 1 })
	stop()
	// Changes while no producer runs.
	confirm("car-2")
	confirm("car-3")
	stop = run()
	defer stop()
	confirm("car-4")
	apitest.Eventually(t, "the deliveries of the changes made while it was stopped", func() bool { return len(r.delivered(t, ep)) >= 4 })
	// A third producer that reads everything again from the start of the feed makes nothing new.
	cur, err := feed.FollowAfter(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := feed.Last(ctx)
	for {
		ch, err := cur.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.producer.Handle(ctx, ch); err != nil {
			t.Fatal(err)
		}
		if n, _ := strconv.ParseUint(ch.Seq, 10, 64); n >= last {
			break
		}
	}
	cur.Close()
	if got := r.delivered(t, ep); len(got) != 4 {
		t.Errorf("after reading the feed again: %d deliveries; want the 4 confirmations once each", len(got))
	}
}

// docs/webhooks.md §1: an event that reaches its expiry while active makes one event.expired,
// when the store removes its expired index items; one closed before makes none.
func TestExpiryOnItsOwn(t *testing.T) {
	tab := tables.Embedded(t)
	r := newRig(t, tab)
	ep := r.endpoint(t, "org_pub", webhooks.KindExpired, webhooks.KindEnded)
	r.follow(t)
	ctx := context.Background()
	// A line crosses several cells: several index items, one delivery.
	line := &event.LineString{Type: "LineString", Coordinates: [][2]float64{{11.50, 48.10}, {11.53, 48.10}}}
	a, _, err := r.events.Publish(ctx, caller("org_pub"), event.EventIn{Type: "roadworks", Lat: 48.10, Lon: 11.50, Geometry: line})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := r.events.Publish(ctx, caller("org_pub"), event.EventIn{Type: "roadworks", Lat: 48.30, Lon: 11.50})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.events.Close(ctx, caller("org_pub"), b.ID); err != nil {
		t.Fatal(err)
	}
	tab.Clock.Set(a.ExpiresAt.Add(time.Minute))
	if err := tab.Table.(interface{ Sweep(context.Context) error }).Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	want := sorted([]string{"event.ended " + b.ID, "event.expired " + a.ID})
	apitest.Eventually(t, "the expiry's delivery", func() bool { return len(r.delivered(t, ep)) >= len(want) })
	if got := r.delivered(t, ep); !slices.Equal(sorted(got), want) {
		t.Errorf("deliveries %v; want %v", got, want)
	}
}

// docs/webhooks.md §5: an alert rule hears any organisation's events in its environment, of
// its types, at or above its confidence, inside its area: alert.created when one comes to
// match (published, confirmed back above the minimum), alert.updated when one that matches
// changes, alert.ended when it stops (below the minimum, moved out, closed), each with the
// reason. Only the rule's organisation hears it, on endpoints subscribed to alert kinds; a
// disabled rule hears nothing.
func TestAlertRulesFire(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newRig(t, tab)
		watch := r.endpoint(t, "org_watch", webhooks.KindAlertCreated, webhooks.KindAlertUpdated, webhooks.KindAlertEnded)
		created := r.endpoint(t, "org_watch", webhooks.KindAlertCreated)
		ownOnly := r.endpoint(t, "org_watch", webhooks.KindConfirmed, webhooks.KindEnded)
		publisher := r.endpoint(t, "org_pub", webhooks.Kinds...)
		r.rule(t, "org_watch", alerts.Draft{Name: ptr("motorway"), Area: circle(48.10, 11.50, 2000),
			Types: &[]string{"accident"}, MinConfidence: ptr(0.5)})
		// A polygon of 48.30..48.40 by 11.40..11.60.
		ring := []geo.Point{{Lat: 48.30, Lon: 11.40}, {Lat: 48.30, Lon: 11.60}, {Lat: 48.40, Lon: 11.60}, {Lat: 48.40, Lon: 11.40}, {Lat: 48.30, Lon: 11.40}}
		r.rule(t, "org_watch", alerts.Draft{Name: ptr("city"), Area: &alerts.Area{Polygon: ring}})
		r.rule(t, "org_watch", alerts.Draft{Name: ptr("off"), Area: circle(48.2, 11.5, 100_000), Enabled: ptr(false)})
		r.rule(t, "org_watch", alerts.Draft{Name: ptr("sandbox"), Environment: ptr(event.EnvironmentSandbox), Area: circle(48.35, 11.5, 1000)})
		r.follow(t)
		ctx := context.Background()
		publish := func(c eventstore.Caller, in event.EventIn) event.Event {
			t.Helper()
			ev, _, err := r.events.Publish(ctx, c, in)
			if err != nil {
				t.Fatal(err)
			}
			return ev
		}
		signal := func(id, action, reporter string) {
			t.Helper()
			if _, _, err := r.events.Signal(ctx, caller("org_x"), id, event.SignalIn{Action: action, ReporterToken: &reporter}); err != nil {
				t.Fatal(err)
			}
		}

		a := publish(caller("org_pub"), event.EventIn{Type: "accident", Lat: 48.10, Lon: 11.50}) // 0.667: created
		publish(caller("org_pub"), event.EventIn{Type: "roadworks", Lat: 48.10, Lon: 11.51})     // not a type heard
		sandbox := eventstore.Caller{Org: "org_pub", Environment: event.EnvironmentSandbox}
		publish(sandbox, event.EventIn{Type: "accident", Lat: 48.101, Lon: 11.49}) // a sandbox event: the live rule does not hear it
		signal(a.ID, event.ActionDeny, "van-1")                                    // 0.5: updated
		signal(a.ID, event.ActionDeny, "van-2")                                    // 0.4: ended, below the minimum
		signal(a.ID, event.ActionConfirm, "car-1")                                 // 0.5: created again
		if _, err := r.events.Revise(ctx, caller("org_pub"), a.ID, event.RevisionIn{Lat: 48.20, Lon: 11.50}); err != nil {
			t.Fatal(err) // 11 km north: ended, left the area
		}
		c := publish(caller("org_pub"), event.EventIn{Type: "object_on_road", Lat: 48.35, Lon: 11.50}) // city and sandbox: created
		if _, err := r.events.Close(ctx, caller("org_pub"), c.ID); err != nil {
			t.Fatal(err) // ended, no longer active
		}
		// A line from outside the polygon whose end is inside it.
		line := &event.LineString{Type: "LineString", Coordinates: [][2]float64{{11.50, 48.25}, {11.50, 48.31}}}
		d := publish(caller("org_pub"), event.EventIn{Type: "roadworks", Lat: 48.25, Lon: 11.50, Geometry: line})
		publish(caller("org_pub"), event.EventIn{Type: "roadworks", Lat: 48.45, Lon: 11.50}) // outside every rule

		want := sorted([]string{
			"alert.created motorway " + a.ID, "alert.updated motorway " + a.ID, "alert.ended motorway " + a.ID + " below_confidence",
			"alert.created motorway " + a.ID, "alert.ended motorway " + a.ID + " left_area",
			"alert.created city " + c.ID, "alert.created sandbox " + c.ID,
			"alert.ended city " + c.ID + " not_active", "alert.ended sandbox " + c.ID + " not_active",
			"alert.created city " + d.ID,
		})
		apitest.Eventually(t, "every alert", func() bool { return len(r.alerted(t, watch)) >= len(want) })
		if got := r.alerted(t, watch); !slices.Equal(got, want) {
			t.Errorf("alerts:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		var createdOnly []string
		for _, w := range want {
			if strings.HasPrefix(w, webhooks.KindAlertCreated) {
				createdOnly = append(createdOnly, w)
			}
		}
		// The producer enqueues one endpoint's delivery after another's: the last alert may
		// reach this endpoint after the other has heard everything.
		apitest.Eventually(t, "every alert.created", func() bool { return len(r.alerted(t, created)) >= len(createdOnly) })
		if got := r.alerted(t, created); !slices.Equal(got, createdOnly) {
			t.Errorf("the endpoint of alert.created only heard %v; want %v", got, createdOnly)
		}
		if got := r.delivered(t, ownOnly); len(got) != 0 {
			t.Errorf("an endpoint of own kinds, with no event of its own, heard %v", got)
		}
		for _, got := range r.delivered(t, publisher) {
			if strings.HasPrefix(got, "alert.") {
				t.Errorf("the publisher heard another organisation's alert: %s", got)
			}
		}
	})
}

// docs/webhooks.md §5: an event that expires while it matches a rule ends it (not_active),
// once however many index items it had; a rule made, changed or deleted applies to the changes
// after it.
func TestAlertRuleExpiryAndChanges(t *testing.T) {
	tab := tables.Embedded(t)
	r := newRig(t, tab)
	watch := r.endpoint(t, "org_watch", webhooks.KindAlertCreated, webhooks.KindAlertUpdated, webhooks.KindAlertEnded)
	r.follow(t)
	ctx := context.Background()
	line := &event.LineString{Type: "LineString", Coordinates: [][2]float64{{11.50, 48.10}, {11.53, 48.10}}}
	before, _, err := r.events.Publish(ctx, caller("org_pub"), event.EventIn{Type: "roadworks", Lat: 48.10, Lon: 11.50, Geometry: line})
	if err != nil {
		t.Fatal(err)
	}
	rule := r.rule(t, "org_watch", alerts.Draft{Name: ptr("works"), Area: circle(48.10, 11.515, 3000)})
	line2 := &event.LineString{Type: "LineString", Coordinates: [][2]float64{{11.50, 48.11}, {11.53, 48.11}}}
	a, _, err := r.events.Publish(ctx, caller("org_pub"), event.EventIn{Type: "roadworks", Lat: 48.11, Lon: 11.50, Geometry: line2})
	if err != nil || a.Status != event.StatusActive {
		t.Fatal(err, a.Status)
	}
	apitest.Eventually(t, "the created alert", func() bool { return len(r.alerted(t, watch)) == 1 })
	if _, err := r.rules.Update(ctx, "org_watch", rule.ID, alerts.Actor{}, alerts.Draft{Types: &[]string{"accident"}}); err != nil {
		t.Fatal(err)
	}
	reporter := "car-1"
	if _, _, err := r.events.Signal(ctx, caller("org_x"), a.ID, event.SignalIn{Action: event.ActionConfirm, ReporterToken: &reporter}); err != nil {
		t.Fatal(err) // the rule hears accidents only now: nothing
	}
	if _, err := r.rules.Update(ctx, "org_watch", rule.ID, alerts.Actor{}, alerts.Draft{Types: &[]string{}}); err != nil {
		t.Fatal(err)
	}
	tab.Clock.Set(a.ExpiresAt.Add(time.Minute))
	if err := tab.Table.(interface{ Sweep(context.Context) error }).Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	// The event published before the rule existed ended too: it matches the rule when it
	// expires, so it is announced as ended without a created before it.
	want := sorted([]string{"alert.created works " + a.ID, "alert.ended works " + a.ID + " not_active", "alert.ended works " + before.ID + " not_active"})
	apitest.Eventually(t, "the expiry's alerts", func() bool { return len(r.alerted(t, watch)) >= len(want) })
	if got := r.alerted(t, watch); !slices.Equal(got, want) {
		t.Errorf("alerts %v; want %v", got, want)
	}
}

// lambdaImage writes an item as a stream record of Lambda holds it.
func lambdaImage(t *testing.T, it store.Item) map[string]events.DynamoDBAttributeValue {
	t.Helper()
	out := map[string]events.DynamoDBAttributeValue{}
	for name, v := range it {
		switch v := v.(type) {
		case string:
			out[name] = events.NewStringAttribute(v)
		case int64:
			out[name] = events.NewNumberAttribute(strconv.FormatInt(v, 10))
		case float64:
			out[name] = events.NewNumberAttribute(strconv.FormatFloat(v, 'f', -1, 64))
		case bool:
			out[name] = events.NewBooleanAttribute(v)
		case []byte:
			out[name] = events.NewBinaryAttribute(v)
		case []string:
			var l []events.DynamoDBAttributeValue
			for _, s := range v {
				l = append(l, events.NewStringAttribute(s))
			}
			out[name] = events.NewListAttribute(l)
		default:
			t.Fatalf("attribute %s of type %T", name, v)
		}
	}
	return out
}

// docs/webhooks.md §3, on AWS: the producer function takes the table's stream in batches, as
// Lambda hands them; a record it cannot handle is reported, so that Lambda hands it and the
// ones after it again, and the records before it made their deliveries.
func TestHandleStreamReportsTheFirstFailure(t *testing.T) {
	tab := tables.Embedded(t)
	r := newRig(t, tab)
	ep := r.endpoint(t, "org_watch", webhooks.KindAlertCreated)
	r.rule(t, "org_watch", alerts.Draft{Name: ptr("all"), Area: circle(48.1, 11.5, 5000)})
	ctx := context.Background()
	record := func(seq string, ev event.Event) events.DynamoDBEventRecord {
		it, err := tab.Get(ctx, eventstore.EventKey(ev.ID))
		if err != nil {
			t.Fatal(err)
		}
		return events.DynamoDBEventRecord{EventID: seq, EventName: "INSERT", EventSource: "aws:dynamodb", Change: events.DynamoDBStreamRecord{
			SequenceNumber: seq, ApproximateCreationDateTime: events.SecondsEpochTime{Time: tab.Clock.Now()},
			Keys: lambdaImage(t, store.Item{store.AttrPK: it.Key().PK, store.AttrSK: it.Key().SK}), NewImage: lambdaImage(t, it)}}
	}
	var evs []event.Event
	for _, lat := range []float64{48.10, 48.11, 48.12} {
		ev, _, err := r.events.Publish(ctx, caller("org_pub"), event.EventIn{Type: "accident", Lat: lat, Lon: 11.5})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	bad := record("101", evs[1])
	bad.Change.NewImage["odd"] = events.NewNumberSetAttribute([]string{"1"})
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record("100", evs[0]), bad, record("102", evs[2])}}
	// Through JSON, as Lambda hands it.
	raw, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	var handed events.DynamoDBEvent
	if err := json.Unmarshal(raw, &handed); err != nil {
		t.Fatal(err)
	}
	res := r.producer.HandleStream(ctx, handed)
	if len(res.BatchItemFailures) != 1 || res.BatchItemFailures[0].ItemIdentifier != "101" {
		t.Fatalf("failures %+v; want the second record", res.BatchItemFailures)
	}
	if got := r.alerted(t, ep); !slices.Equal(got, []string{"alert.created all " + evs[0].ID}) {
		t.Errorf("alerts %v; want the first record's only", got)
	}
	// Lambda hands the batch again from the failed record, which now reads.
	res = r.producer.HandleStream(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record("101", evs[1]), record("102", evs[2])}})
	if len(res.BatchItemFailures) != 0 || len(r.alerted(t, ep)) != 3 {
		t.Errorf("after the batch again: failures %+v, alerts %v; want none and three", res.BatchItemFailures, r.alerted(t, ep))
	}
}

// unreadableRules fails every read of the alert rules' partition.
type unreadableRules struct{ store.Table }

func (u unreadableRules) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	if q.PK == alerts.Partition {
		return nil, fmt.Errorf("rules: %w", store.ErrUnavailable)
	}
	return u.Table.Query(ctx, q)
}

// docs/webhooks.md §1, §5: while the alert rules cannot be read, an event's change fails, so
// that the feed hands it again rather than lose its alerts; a publication merged at once still
// has its merged delivery made first, and a plain one fails the same way.
func TestUnreadableRulesFailTheChange(t *testing.T) {
	tab := tables.Embedded(t)
	r := newRig(t, tab)
	r.producer.Rules = alerts.NewRules(unreadableRules{tab}, audit.New(tab, audit.Options{Clock: tab.Clock}), tab.Clock)
	ep := r.endpoint(t, "org_pub", webhooks.KindMerged)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur, err := tab.Feed.Follow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	publish := func(org string) event.Event {
		ev, _, err := r.events.Publish(ctx, caller(org), event.EventIn{Type: "object_on_road", Lat: 48.2, Lon: 11.5})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	theirs := publish("org_other")
	mine := publish("org_pub") // merged at once into theirs
	if mine.Status != event.StatusMerged {
		t.Fatalf("the second report is %s; want merged", mine.Status)
	}
	for _, ev := range []event.Event{theirs, mine} {
		var ch store.Change
		for ch.Kind != store.ChangeInsert || ch.Key != eventstore.EventKey(ev.ID) {
			if ch, err = cur.Next(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.producer.Handle(ctx, ch); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("the insert of %s (%s) handled with %v; want the rules' error", ev.ID, ev.Status, err)
		}
	}
	if got := r.delivered(t, ep); !slices.Equal(got, []string{"event.merged " + mine.ID}) {
		t.Errorf("deliveries %v; want the merge made before the rules failed", got)
	}
}
