package eventstore_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// evidenceDoc is GET /v1/events/{id}/evidence as a client decodes it.
type evidenceDoc struct {
	EventID      string  `json:"event_id"`
	Status       string  `json:"status"`
	Confidence   float64 `json:"confidence"`
	Verification string  `json:"verification"`
	Reporters    struct {
		Confirming, Denying, Organisations int
	} `json:"reporters"`
	Timeline []struct {
		At        time.Time `json:"at"`
		Kind      string    `json:"kind"`
		Action    string    `json:"action"`
		By        string    `json:"by"`
		DistanceM *float64  `json:"distance_m"`
		EventID   string    `json:"event_id"`
	} `json:"timeline"`
	TimelineTruncated bool `json:"timeline_truncated"`
	Duplicates        []struct {
		EventID   string   `json:"event_id"`
		DistanceM *float64 `json:"distance_m"`
		By        string   `json:"by"`
	} `json:"duplicates"`
	Expiry []struct {
		At        time.Time `json:"at"`
		ExpiresAt time.Time `json:"expires_at"`
		Cause     string    `json:"cause"`
	} `json:"expiry"`
	Publisher struct {
		By         string `json:"by"`
		Reputation string `json:"reputation"`
	} `json:"publisher"`
}

func (h *harness) evidence(t *testing.T, key, id string) (evidenceDoc, string) {
	t.Helper()
	r := h.do("GET", "/v1/events/"+id+"/evidence", key, nil)
	r.expect(t, http.StatusOK)
	var d evidenceDoc
	if err := json.Unmarshal(r.Body, &d); err != nil {
		t.Fatalf("decode evidence %s: %v", r.Body, err)
	}
	return d, string(r.Body)
}

// docs/network.md §4: the evidence document explains an event's confidence: the distinct
// reporters behind the tallies and their organisations, each signal with the reporter's
// distance, the duplicates merged in, every change of expiry and its cause, relative to the
// caller ("your organisation" or "another organisation"), and never an organisation's id, a
// reporter_token or a position.
func TestEvidenceExplainsConfidence(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		pub, fleet, nav, auth := h.key("org_pub", live), h.key("org_fleet", live), h.key("org_nav", live), h.key("org_auth", live)
		start := tab.Clock.Now()
		ev := h.publish(pub, point("accident", 48.13743, 11.57549))
		signal := func(key string, body map[string]any) {
			t.Helper()
			h.do("POST", "/v1/events/"+ev.EventID+"/signals", key, body).expect(t, http.StatusOK)
		}
		// Near the end of the accident's 2 h, a fleet's driver confirms from about 111 m north:
		// the 15-minute extension moves expiry.
		tab.Clock.Advance(110 * time.Minute)
		signal(fleet, map[string]any{"action": "confirm", "reporter_token": "driver-secret-7", "lat": 48.13843, "lon": 11.57549})
		// Another organisation's report of the same crash 30 m away is merged in.
		dup := h.publish(nav, point("accident", 48.13770, 11.57549))
		if dup.Status != "merged" {
			t.Fatalf("duplicate status = %s; want merged", dup.Status)
		}
		// A denial without a position, and a second token of the fleet confirming.
		signal(auth, map[string]any{"action": "deny"})
		signal(fleet, map[string]any{"action": "confirm", "reporter_token": "driver-secret-8"})

		d, raw := h.evidence(t, nav, ev.EventID)
		if d.EventID != ev.EventID || d.Status != "active" || d.Verification != "confirmed" || d.Confidence != 0.714 {
			t.Errorf("head = %s %s %s %v; want %s active confirmed 0.714 (3 confirmations, 1 denial)", d.EventID, d.Status, d.Verification, d.Confidence, ev.EventID)
		}
		if r := d.Reporters; r.Confirming != 3 || r.Denying != 1 || r.Organisations != 3 {
			t.Errorf("reporters = %+v; want 3 confirming (two fleet tokens, the merged organisation), 1 denying, 3 organisations", r)
		}
		var kinds, by []string
		for _, s := range d.Timeline {
			kinds = append(kinds, s.Kind+"/"+s.Action)
			by = append(by, s.By)
		}
		if want := []string{"signal/confirm", "duplicate/confirm", "signal/deny", "signal/confirm"}; !slices.Equal(kinds, want) {
			t.Fatalf("timeline = %v; want %v", kinds, want)
		}
		// Seen by the organisation whose duplicate was merged: that step is its own.
		if want := []string{"another_organisation", "your_organisation", "another_organisation", "another_organisation"}; !slices.Equal(by, want) {
			t.Errorf("timeline by = %v; want %v", by, want)
		}
		if d0 := d.Timeline[0].DistanceM; d0 == nil || *d0 != 111 {
			t.Errorf("first confirmation's distance = %v; want 111 m", d0)
		}
		if d1 := d.Timeline[1].DistanceM; d1 == nil || *d1 != 30 {
			t.Errorf("duplicate's distance = %v; want 30 m", d1)
		}
		if d2 := d.Timeline[2].DistanceM; d2 != nil {
			t.Errorf("denial without a position has distance %v; want null", *d2)
		}
		if len(d.Duplicates) != 1 || d.Duplicates[0].EventID != dup.EventID || d.Duplicates[0].By != "your_organisation" {
			t.Errorf("duplicates = %+v; want %s by your_organisation", d.Duplicates, dup.EventID)
		}
		causes := []string{}
		for _, x := range d.Expiry {
			causes = append(causes, x.Cause)
		}
		if want := []string{"published", "confirmation"}; !slices.Equal(causes, want) {
			t.Errorf("expiry causes = %v; want %v (later confirmations land before the extended expiry)", causes, want)
		} else if first, ext := d.Expiry[0], d.Expiry[1]; !first.ExpiresAt.Equal(start.Add(2*time.Hour)) ||
			!ext.ExpiresAt.Equal(start.Add(125*time.Minute)) {
			t.Errorf("expiry = %+v; want published to %v, extended to %v", d.Expiry, start.Add(2*time.Hour), start.Add(125*time.Minute))
		}
		if d.Publisher.By != "another_organisation" || d.Publisher.Reputation == "" {
			t.Errorf("publisher = %+v; want another_organisation and a band", d.Publisher)
		}
		for _, secret := range []string{"org_pub", "org_fleet", "org_nav", "org_auth", "driver-secret", "48.138", "11.575"} {
			if strings.Contains(raw, secret) {
				t.Errorf("evidence shows %q: %s", secret, raw)
			}
		}
		// The publisher sees itself as the publisher.
		if d, _ := h.evidence(t, pub, ev.EventID); d.Publisher.By != "your_organisation" || d.Timeline[1].By != "another_organisation" {
			t.Errorf("publisher's view: publisher %s, duplicate by %s; want your_organisation, another_organisation", d.Publisher.By, d.Timeline[1].By)
		}
	})
}

// docs/network.md §4: the evidence document has the read access of GET /v1/events/{id}: an
// unknown id, and a sandbox event asked with a live key, are 404; a closed event's document
// ends with its closing.
func TestEvidenceAccessAndEndings(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		h := newHarness(t, tab)
		liveKey, sandboxKey := h.key("org_a", live), h.key("org_a", sandbox)
		h.do("GET", "/v1/events/ev_aaaaaaaaaaaaaaaaaaaaaaaaaa/evidence", liveKey, nil).detail(t, http.StatusNotFound)
		sb := h.publish(sandboxKey, point("object_on_road", 50, 8))
		h.do("GET", "/v1/events/"+sb.EventID+"/evidence", liveKey, nil).detail(t, http.StatusNotFound)

		ev := h.publish(liveKey, point("object_on_road", 50, 9))
		tab.Clock.Advance(time.Minute)
		h.do("POST", "/v1/events/"+ev.EventID+"/close", liveKey, nil).expect(t, http.StatusOK)
		d, _ := h.evidence(t, sandboxKey, ev.EventID)
		last := d.Expiry[len(d.Expiry)-1]
		if d.Status != "expired" || last.Cause != "closed" || !last.ExpiresAt.Equal(tab.Clock.Now()) {
			t.Errorf("closed event: status %s, last expiry %+v; want expired, closed at %v", d.Status, last, tab.Clock.Now())
		}
	})
}

// docs/network.md §4: the evidence document names the publisher's band, one of the bands a
// standing can have (docs/network.md §2) or unknown; the document's list is the ledger's.
func TestEvidenceBandsAreTheReputationBands(t *testing.T) {
	t.Parallel()
	want := append(slices.Clone(reputation.Bands), event.BandUnknown)
	got := slices.Clone(event.EvidenceBands)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("evidence bands %v; want the reputation bands and %q: %v", got, event.BandUnknown, want)
	}
}
