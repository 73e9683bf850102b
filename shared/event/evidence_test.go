package event

import (
	"slices"
	"testing"
	"time"
)

// docs/network.md §4: the expiry list starts at publication and has one setting per change
// that moved expires_at, named by its cause; a confirmation that leaves expiry where it was is
// in the timeline only, and an invalidation carries the verdict's reason.
func TestEvidenceExpiryCauses(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	e := New(EventIn{Type: "accident", Lat: 48, Lon: 11}, "org_a", EnvironmentLive, "ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", now)
	at := func(m int) time.Time { return now.Add(time.Duration(m) * time.Minute) }
	// change is an entry of kind k at minute m moving expiry from minute from to minute to.
	change := func(m int, k string, from, to int, edit func(*Entry)) Entry {
		h := Entry{At: at(m), Kind: k, ExpiresBefore: at(from), ExpiresAfter: at(to)}
		if edit != nil {
			edit(&h)
		}
		return h
	}
	confirm := func(h *Entry) { h.Action, h.Reporter = ActionConfirm, "org_b/driver" }
	ended := func(h *Entry) { h.Ended = true }
	history := []Entry{
		change(1, EntrySignal, 120, 135, confirm),
		change(2, EntrySignal, 135, 135, confirm), // no move: timeline only
		change(3, EntryDuplicate, 135, 150, func(h *Entry) { h.Action, h.Reporter, h.Duplicate = ActionConfirm, "org_c", "ev_dup" }),
		change(4, EntryRevision, 150, 160, nil),
		change(5, EntrySignal, 160, 5, func(h *Entry) { h.Action, h.Reporter, h.Ended = ActionDeny, "org_d/", true }),
		change(6, EntryMerged, 160, 6, ended),
		change(7, EntryClosed, 160, 7, ended),
		change(8, EntryInvalidated, 160, 8, func(h *Entry) { h.Ended, h.Reason = true, "key leaked" }),
	}
	d := BuildEvidence(e, nil, history, false, "org_b", "good", at(9))

	var causes []string
	for _, x := range d.Expiry {
		causes = append(causes, x.Cause)
	}
	want := []string{CausePublished, CauseConfirmation, CauseDuplicate, CauseRevision, CauseDenyQuorum, CauseMerged, CauseClosed, CauseInvalidated}
	if !slices.Equal(causes, want) {
		t.Errorf("expiry causes = %v; want %v", causes, want)
	}
	if first := d.Expiry[0]; first.At != FormatTime(now) || first.ExpiresAt != FormatTime(now.Add(2*time.Hour)) {
		t.Errorf("published expiry = %+v; want at %v until the accident's 2 h", first, now)
	}
	if len(d.Timeline) != len(history) {
		t.Errorf("timeline has %d steps; want %d, the unmoving confirmation included", len(d.Timeline), len(history))
	}
	if last := d.Timeline[len(d.Timeline)-1]; last.Reason != "key leaked" {
		t.Errorf("invalidation step = %+v; want the verdict's reason", last)
	}
}
