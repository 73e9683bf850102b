package stream_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/stream"
)

// signalled returns ev after reporter's action at the given minute.
func signalled(t testing.TB, ev event.Event, reporter, action string, minute int) event.Event {
	t.Helper()
	if _, _, err := ev.Signal(reporter, nil, action, t0.Add(time.Duration(minute)*time.Minute)); err != nil {
		t.Fatal(err)
	}
	return ev
}

// docs/api.md §10.2: which operation emits which delta kind.
func TestClassify(t *testing.T) {
	t.Parallel()
	fresh := newEvent(t, "ev_a", "accident", event.EnvironmentLive, center)
	revised := moved(t, fresh, offset(center, 200)).After
	confirmed := signalled(t, fresh, "org_b/", event.ActionConfirm, 1)
	denied := fresh
	for i := range event.DenyQuorum {
		denied = signalled(t, denied, fmt.Sprintf("org_b/v%d", i), event.ActionDeny, i+1)
	}
	if denied.Status != event.StatusExpired {
		t.Fatalf("after %d denials status %q; want expired", event.DenyQuorum, denied.Status)
	}
	almost := fresh
	for i := range event.DenyQuorum - 1 {
		almost = signalled(t, almost, fmt.Sprintf("org_b/v%d", i), event.ActionDeny, i+1)
	}
	merged := confirmed
	merged.Status, merged.Version = event.StatusMerged, merged.Version+1
	old := denied // an item of an earlier event under the same id, not yet deleted by the table

	cases := []struct {
		name   string
		before *event.Event
		after  event.Event
		want   stream.Kind
		ok     bool
	}{
		{"publish", nil, fresh, stream.KindCreated, true},
		{"publish over an old item", &old, fresh, stream.KindCreated, true},
		{"revision", &fresh, revised, stream.KindUpdated, true},
		{"confirmation", &fresh, confirmed, stream.KindSignal, true},
		{"denial short of the quorum", &fresh, almost, stream.KindSignal, true},
		{"deny quorum", &almost, denied, stream.KindEnded, true},
		{"merge", &confirmed, merged, stream.KindEnded, true},
		{"write that changes nothing seen", &fresh, fresh, "", false},
		{"write to an event already over", &denied, denied, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := stream.Classify(tc.before, tc.after)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Classify = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// A codec standing in for the events package's stored form.
func testItem(ev event.Event) store.Item {
	b, _ := json.Marshal(ev)
	return store.Item{store.AttrPK: "event#" + ev.ID, store.AttrSK: "event", "data": string(b)}
}

var errBadItem = errors.New("bad item")

var testDecoder = stream.NewDecoder(
	func(k store.Key) bool { return k.SK == "event" && strings.HasPrefix(k.PK, "event#") },
	func(it store.Item) (event.Event, error) {
		var ev event.Event
		if err := json.Unmarshal([]byte(it.String("data")), &ev); err != nil {
			return event.Event{}, errBadItem
		}
		return ev, nil
	})

func TestDecoder(t *testing.T) {
	t.Parallel()
	fresh := newEvent(t, "ev_a", "accident", event.EnvironmentLive, center)
	revised := moved(t, fresh, offset(center, 200)).After
	key := testItem(fresh).Key()
	cases := []struct {
		name string
		ch   store.Change
		want stream.Kind
		ok   bool
	}{
		{"insert", store.Change{Kind: store.ChangeInsert, Key: key, New: testItem(fresh)}, stream.KindCreated, true},
		{"modify", store.Change{Kind: store.ChangeModify, Key: key, Old: testItem(fresh), New: testItem(revised)}, stream.KindUpdated, true},
		{"TTL removal", store.Change{Kind: store.ChangeRemove, Key: key, Old: testItem(revised), Expired: true}, "", false},
		{"removal", store.Change{Kind: store.ChangeRemove, Key: key, Old: testItem(revised)}, "", false},
		{"not an event item", store.Change{Kind: store.ChangeInsert, Key: store.Key{PK: "event#ev_a", SK: "vote#x"}, New: store.Item{}}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ok, err := testDecoder.Decode(tc.ch)
			if err != nil || ok != tc.ok || c.Kind != tc.want {
				t.Fatalf("Decode = %q, %v, %v; want %q, %v, nil", c.Kind, ok, err, tc.want, tc.ok)
			}
			if ok && c.After.ID != fresh.ID {
				t.Errorf("After.ID = %q; want %q", c.After.ID, fresh.ID)
			}
			if tc.want == stream.KindUpdated && (c.Before == nil || c.Before.Lat != fresh.Lat) {
				t.Errorf("Before = %+v; want the event before the revision", c.Before)
			}
			if tc.want == stream.KindCreated && c.Before != nil {
				t.Errorf("Before = %+v on created; want nil", c.Before)
			}
		})
	}
	bad := store.Change{Kind: store.ChangeInsert, Key: key, New: store.Item{"data": "{"}}
	if _, _, err := testDecoder.Decode(bad); !errors.Is(err, errBadItem) {
		t.Errorf("Decode(undecodable) error = %v; want the codec's error", err)
	}
}
