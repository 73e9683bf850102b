package feedpoll_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/feedpoll"
	"github.com/roadevents/roadevents/shared/feeds"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// pollRig is a registry and a poller on one table, with a CIFS upstream.
type pollRig struct {
	tab    tables.Table
	reg    *feeds.Registry
	events *eventstore.Store
	log    *audit.Log
	up     *upstream
}

func newPollRig(t *testing.T, tab tables.Table) *pollRig {
	t.Helper()
	evs, err := eventstore.New(tab, eventstore.Options{IDKey: idKey, Clock: tab.Clock})
	if err != nil {
		t.Fatal(err)
	}
	log := audit.New(tab, audit.Options{Clock: tab.Clock})
	return &pollRig{tab: tab, reg: feeds.NewRegistry(tab, log, tab.Clock), events: evs, log: log, up: newUpstream(t)}
}

func (r *pollRig) poller() *feedpoll.Poller {
	return &feedpoll.Poller{Registry: r.reg, Fetcher: feeds.NewFetcher(feeds.Options{AllowPrivate: true}), Importer: r.events, Clock: r.tab.Clock}
}

func (r *pollRig) pass(t *testing.T) int {
	t.Helper()
	n, err := r.poller().Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (r *pollRig) status(t *testing.T, f feeds.Registered, upstreamID string) string {
	t.Helper()
	ev, err := r.events.Get(context.Background(), eventstore.Caller{Org: f.Org, Environment: f.Environment},
		r.events.FeedEventID(f.Org, f.ID, upstreamID))
	if err != nil {
		t.Fatalf("event of %s: %v", upstreamID, err)
	}
	return ev.Public(r.tab.Clock.Now()).Status
}

func ptr[T any](v T) *T { return &v }

var owner = feeds.Actor{UserID: "usr_owner", Email: "owner@authority.test"}

// docs/interop.md §13: a registered feed is polled at once and then every interval, its health
// kept with it; a pass before it is due leaves it alone.
func TestPollerFollowsTheSchedule(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newPollRig(t, tab)
		ctx := context.Background()
		r.up.doc.Store("motorway-1.json")
		f, err := r.reg.Create(ctx, "org_authority", owner, feeds.Draft{Name: ptr("A99"), URL: ptr(r.up.srv.URL + "/feed.json"),
			Format: ptr("cifs"), Environment: ptr(apikey.Live), License: ptr("CC BY 4.0"), Interval: ptr(2 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if n := r.pass(t); n != 1 {
			t.Fatalf("first pass polled %d feeds; want the new one", n)
		}
		got, err := r.reg.Get(ctx, f.Org, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Last.Created != 3 || got.Last.Skipped != 3 || got.Active != 3 || got.Imported != 3 || got.LastSuccessAt.IsZero() ||
			!got.NextPollAt.Equal(tab.Clock.Now().Add(2*time.Minute)) {
			t.Fatalf("after the first poll: %+v; want 3 created, 3 skipped, due in 2 minutes", got)
		}
		if s := r.status(t, f, "mw-101"); s != "active" {
			t.Errorf("mw-101 is %s; want active", s)
		}

		tab.Clock.Advance(time.Minute)
		if n := r.pass(t); n != 0 {
			t.Errorf("a pass a minute later polled %d feeds; want none before the interval", n)
		}
		tab.Clock.Advance(time.Minute)
		r.up.doc.Store("motorway-2.json")
		if n := r.pass(t); n != 1 {
			t.Fatalf("a pass at the interval polled %d feeds; want 1", n)
		}
		got, _ = r.reg.Get(ctx, f.Org, f.ID)
		if got.Last.Created != 1 || got.Last.Revised != 1 || got.Last.Ended != 1 || got.Imported != 5 || got.Ended != 1 || got.Skipped != 3 {
			t.Errorf("after the second poll: %+v; want 1 created, 1 revised, 1 ended and the totals added up", got)
		}
		if s := r.status(t, f, "mw-102"); s != "expired" {
			t.Errorf("mw-102, gone from the feed, is %s; want expired", s)
		}

		// An outage keeps every event and shows the error; the next good poll clears it.
		tab.Clock.Advance(2 * time.Minute)
		r.up.broken.Store(true)
		r.pass(t)
		got, _ = r.reg.Get(ctx, f.Org, f.ID)
		if !strings.Contains(got.LastError, "500") || got.Last.Err == "" || got.Active != 3 || !got.LastErrorAt.Equal(tab.Clock.Now()) {
			t.Errorf("during an outage: %+v; want the error shown and the 3 records kept", got)
		}
		tab.Clock.Advance(2 * time.Minute)
		r.up.broken.Store(false)
		r.pass(t)
		got, _ = r.reg.Get(ctx, f.Org, f.ID)
		if got.LastError != "" || !got.Last.NotModified || got.LastErrorAt.IsZero() {
			t.Errorf("after the outage: %+v; want the error cleared, the document not modified, the error's time kept", got)
		}
	})
}

// docs/interop.md §13: two pollers at once (two Lambda invocations overlapping, or two
// processes) poll a due feed once between them.
func TestTwoPollersPollAFeedOnce(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newPollRig(t, tab)
		r.up.doc.Store("motorway-1.json")
		for i := range 3 {
			if _, err := r.reg.Create(context.Background(), "org_"+string(rune('a'+i)), owner,
				feeds.Draft{URL: ptr(r.up.srv.URL), Format: ptr("cifs")}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		counts := make([]int, 2)
		for i := range counts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := r.poller().Pass(context.Background())
				if err != nil {
					t.Error(err)
				}
				counts[i] = n
			}()
		}
		wg.Wait()
		if counts[0]+counts[1] != 3 {
			t.Errorf("two pollers polled %v feeds; want 3 between them, each once", counts)
		}
	})
}

// docs/interop.md §13: a paused feed is not polled; a deleted one leaves the list at once, and
// the next pass ends its events and forgets it; a changed URL makes the feed due at once and
// is fetched without the old address's validators.
func TestPausedChangedAndDeletedFeeds(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newPollRig(t, tab)
		ctx := context.Background()
		r.up.doc.Store("motorway-1.json")
		f, err := r.reg.Create(ctx, "org_authority", owner, feeds.Draft{URL: ptr(r.up.srv.URL + "/a"), Format: ptr("cifs"),
			Environment: ptr(apikey.Live)})
		if err != nil {
			t.Fatal(err)
		}
		r.pass(t)
		if _, err := r.reg.Update(ctx, f.Org, f.ID, owner, feeds.Draft{Paused: ptr(true)}); err != nil {
			t.Fatal(err)
		}
		tab.Clock.Advance(10 * time.Minute) // twice the interval
		if n := r.pass(t); n != 0 {
			t.Errorf("a pass polled %d feeds while the only one is paused", n)
		}
		// Same document, new address: a full fetch, not a 304 on the old validators.
		f, err = r.reg.Update(ctx, f.Org, f.ID, owner, feeds.Draft{Paused: ptr(false), URL: ptr(r.up.srv.URL + "/b")})
		if err != nil {
			t.Fatal(err)
		}
		if n := r.pass(t); n != 1 {
			t.Fatalf("a pass after the URL changed polled %d feeds; want 1 at once", n)
		}
		if got, _ := r.reg.Get(ctx, f.Org, f.ID); got.Last.NotModified || got.Last.Unchanged != 3 {
			t.Errorf("the poll of the new address: %+v; want the document read, 3 records unchanged", got.Last)
		}

		if err := r.reg.Delete(ctx, f.Org, f.ID, owner); err != nil {
			t.Fatal(err)
		}
		if list, _ := r.reg.List(ctx, f.Org); len(list) != 0 {
			t.Errorf("the list after the delete holds %d feeds; want none", len(list))
		}
		if _, err := r.reg.Get(ctx, f.Org, f.ID); !errors.Is(err, feeds.ErrNotFound) {
			t.Errorf("Get of a deleted feed: %v; want ErrNotFound", err)
		}
		if err := r.reg.Delete(ctx, f.Org, f.ID, owner); !errors.Is(err, feeds.ErrNotFound) {
			t.Errorf("a second delete: %v; want ErrNotFound", err)
		}
		if s := r.status(t, f, "mw-101"); s != "active" {
			t.Errorf("mw-101 before the pass after the delete is %s; want active still", s)
		}
		if n := r.pass(t); n != 1 {
			t.Fatalf("the pass after the delete handled %d feeds; want the deleted one", n)
		}
		for _, id := range []string{"mw-101", "mw-102", "mw-103"} {
			if s := r.status(t, f, id); s != "expired" {
				t.Errorf("%s of the deleted feed is %s; want expired", id, s)
			}
		}
		if n := r.pass(t); n != 0 {
			t.Errorf("a later pass handled %d feeds; want the deleted feed forgotten", n)
		}
		entries, err := r.log.List(ctx, f.Org, 10)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range entries {
			actions = append(actions, e.Action)
		}
		if strings.Join(actions, " ") != "feed.deleted feed.updated feed.updated feed.created" {
			t.Errorf("audit log %v; want created, updated twice, deleted, newest first", actions)
		}
	})
}

// docs/interop.md §13: what an owner may register, and the cap of feeds per organisation.
func TestRegistryRefusesBadFeeds(t *testing.T) {
	tab := tables.Embedded(t)
	r := newPollRig(t, tab)
	ctx := context.Background()
	good := func() feeds.Draft {
		return feeds.Draft{URL: ptr("https://feeds.example/cifs.json"), Format: ptr("cifs")}
	}
	for name, mutate := range map[string]func(*feeds.Draft){
		"no URL":                func(d *feeds.Draft) { d.URL = nil },
		"no format":             func(d *feeds.Draft) { d.Format = nil },
		"an ftp URL":            func(d *feeds.Draft) { d.URL = ptr("ftp://feeds.example/x") },
		"a relative URL":        func(d *feeds.Draft) { d.URL = ptr("/cifs.json") },
		"credentials":           func(d *feeds.Draft) { d.URL = ptr("https://user:hunter2@feeds.example/x") },
		"an unknown format":     func(d *feeds.Draft) { d.Format = ptr("gtfs-rt") },
		"an interval of 59 s":   func(d *feeds.Draft) { d.Interval = ptr(59 * time.Second) },
		"an interval of 2 days": func(d *feeds.Draft) { d.Interval = ptr(48 * time.Hour) },
		"a fractional interval": func(d *feeds.Draft) { d.Interval = ptr(90*time.Second + time.Millisecond) },
		"an environment":        func(d *feeds.Draft) { d.Environment = ptr("staging") },
		"a long name":           func(d *feeds.Draft) { d.Name = ptr(strings.Repeat("n", feeds.MaxNameLen+1)) },
		"a long licence":        func(d *feeds.Draft) { d.License = ptr(strings.Repeat("l", feeds.MaxLicenseLen+1)) },
	} {
		d := good()
		mutate(&d)
		_, err := r.reg.Create(ctx, "org_a", owner, d)
		if !errors.Is(err, feeds.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the refusal repeats the password: %v", name, err)
		}
	}
	for i := range feeds.MaxPerOrg {
		if _, err := r.reg.Create(ctx, "org_a", owner, good()); err != nil {
			t.Fatalf("feed %d: %v", i+1, err)
		}
	}
	if _, err := r.reg.Create(ctx, "org_a", owner, good()); !errors.Is(err, feeds.ErrCap) {
		t.Errorf("feed %d: %v; want ErrCap", feeds.MaxPerOrg+1, err)
	}
	if _, err := r.reg.Create(ctx, "org_b", owner, good()); err != nil {
		t.Errorf("another organisation's first feed: %v", err)
	}
}

// docs/interop.md §13: registrations at once cannot pass the cap of feeds, and a deleted feed
// frees its place.
func TestRegistrationsAtOnceKeepTheCap(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		r := newPollRig(t, tab)
		ctx := context.Background()
		draft := feeds.Draft{URL: ptr("https://feeds.example/cifs.json"), Format: ptr("cifs")}
		var first feeds.Registered
		for i := range feeds.MaxPerOrg - 2 {
			f, err := r.reg.Create(ctx, "org_a", owner, draft)
			if err != nil {
				t.Fatalf("feed %d: %v", i+1, err)
			}
			first = f
		}
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = r.reg.Create(ctx, "org_a", owner, draft)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil && !errors.Is(err, feeds.ErrCap) && !errors.Is(err, feeds.ErrBusy) {
				t.Errorf("a registration at once: %v; want success, ErrCap or ErrBusy", err)
			}
		}
		list, err := r.reg.List(ctx, "org_a")
		if err != nil || len(list) > feeds.MaxPerOrg {
			t.Fatalf("after registrations at once the organisation has %d feeds, %v; want at most %d", len(list), err, feeds.MaxPerOrg)
		}
		for len(list) < feeds.MaxPerOrg {
			f, err := r.reg.Create(ctx, "org_a", owner, draft)
			if err != nil {
				t.Fatalf("filling up to the cap: %v", err)
			}
			list = append(list, f)
		}
		if _, err := r.reg.Create(ctx, "org_a", owner, draft); !errors.Is(err, feeds.ErrCap) {
			t.Fatalf("past the cap: %v; want ErrCap", err)
		}
		if err := r.reg.Delete(ctx, "org_a", first.ID, owner); err != nil {
			t.Fatal(err)
		}
		if _, err := r.reg.Create(ctx, "org_a", owner, draft); err != nil {
			t.Errorf("after a delete: %v; want the freed place taken", err)
		}
	})
}
