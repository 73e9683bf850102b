package event_test

import (
	"regexp"
	"testing"

	"github.com/roadevents/roadevents/shared/event"
)

var idShape = regexp.MustCompile(`^ev_[a-z2-7]{26}$`) // docs/api.md §10.2

func TestNewID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := event.NewID()
		if !idShape.MatchString(id) {
			t.Fatalf("NewID() = %q; want ev_ and 26 lower-case base32 characters", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

// TestDerivedID checks docs/api.md §10.2: with a client_event_id the id is a keyed hash of
// (organisation, client_event_id), the same in either environment.
func TestDerivedID(t *testing.T) {
	t.Parallel()
	key := []byte("test key")
	base := event.DerivedID(key, "org-a", "c-1")
	if !idShape.MatchString(base) {
		t.Fatalf("DerivedID() = %q; want ev_ and 26 lower-case base32 characters", base)
	}
	if again := event.DerivedID(key, "org-a", "c-1"); again != base {
		t.Errorf("DerivedID repeated = %q; want the same id %q", again, base)
	}
	differ := []struct {
		name          string
		key           []byte
		org, clientID string
	}{
		{"other organisation", key, "org-b", "c-1"},
		{"other client_event_id", key, "org-a", "c-2"},
		{"other key", []byte("other key"), "org-a", "c-1"},
	}
	for _, tc := range differ {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := event.DerivedID(tc.key, tc.org, tc.clientID); got == base {
				t.Errorf("DerivedID(%q, %q) = %q; want an id other than %q", tc.org, tc.clientID, got, base)
			}
		})
	}
	if a, b := event.DerivedID(key, "ab", "c"), event.DerivedID(key, "a", "bc"); a == b {
		t.Errorf("DerivedID(ab, c) = DerivedID(a, bc) = %q; want distinct pairs to give distinct ids", a)
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id   string
		want bool
	}{
		{event.NewID(), true},
		{event.DerivedID([]byte("k"), "o", "c"), true},
		{"ev_abcdefghijklmnopqrstuvwxyz", true},
		{"ev_ABCDEFGHIJKLMNOPQRSTUVWXYZ", false},
		{"ev_abcdefghijklmnopqrstuvwxy", false},
		{"ev_abcdefghijklmnopqrstuvwxyz0", false},
		{"ev_abcdefghijklmnopqrstuvwx01", false},
		{"xx_abcdefghijklmnopqrstuvwxyz", false},
		{"", false},
	}
	for _, tc := range cases {
		if got := event.ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v; want %v", tc.id, got, tc.want)
		}
	}
}
