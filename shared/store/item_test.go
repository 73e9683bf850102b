package store_test

import (
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/store"
)

// TestFormatTime: timestamps written with FormatTime read back with Item.Time, to the
// nanosecond, and their text orders as the times do whatever zone they were taken in (sort
// keys and conditions compare the text).
func TestFormatTime(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CET", 3600)
	times := []time.Time{
		time.Date(2040, 3, 1, 14, 0, 0, 0, time.UTC),
		time.Date(2040, 3, 1, 15, 0, 0, 1, paris), // 14:00:00.000000001 UTC
		time.Date(2040, 3, 1, 14, 0, 0, 500_000_000, time.UTC),
		time.Date(2040, 3, 1, 14, 0, 1, 0, time.UTC),
	}
	for i, at := range times {
		text := store.FormatTime(at)
		got := store.Item{"at": text}.Time("at")
		if !got.Equal(at) || got.Location() != time.UTC {
			t.Errorf("Time(FormatTime(%v)) = %v; want the same instant in UTC", at, got)
		}
		if i > 0 {
			if prev := store.FormatTime(times[i-1]); prev >= text {
				t.Errorf("FormatTime(%v) = %q, not after FormatTime(%v) = %q", at, text, times[i-1], prev)
			}
		}
	}
}

// TestItemTimeZero: an absent attribute, or one that is not a FormatTime timestamp, reads as
// the zero time.
func TestItemTimeZero(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		item store.Item
	}{
		{"Absent", store.Item{}},
		{"NotAString", store.Item{"at": int64(1)}},
		{"OtherFormat", store.Item{"at": "2040-03-01T14:00:00Z"}},
		{"Garbage", store.Item{"at": "yesterday"}},
	}
	for _, tc := range cases {
		if got := tc.item.Time("at"); !got.IsZero() {
			t.Errorf("%s: Time = %v; want the zero time", tc.name, got)
		}
	}
}
