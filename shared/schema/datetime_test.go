package schema_test

import (
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/schema"
)

func TestParseDateTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in          string
		wantUTC     string // RFC 3339 in UTC when it parses aware
		wantAware   bool
		wantProblem string
	}{
		{"2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z", true, ""},
		{"2024-05-01t10:00:00z", "2024-05-01T10:00:00Z", true, ""},
		{"2024-05-01T10:00:00+02:00", "2024-05-01T08:00:00Z", true, ""},
		{"2024-05-01T10:00:00-05:30", "2024-05-01T15:30:00Z", true, ""},
		{"2024-05-01T10:00:00.123456789Z", "2024-05-01T10:00:00.123456789Z", true, ""},
		{"2024-05-01T10:00:00.5Z", "2024-05-01T10:00:00.5Z", true, ""},
		{"2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z", true, ""},
		{"2024-05-01T10:00:00", "", false, ""},
		{"2024-05-01", "", false, ""},
		{"", "", false, "input is too short"},
		{"2024", "", false, "input is too short"},
		{"20x4-05-01T10:00:00Z", "", false, "invalid character in year"},
		{"2024/05/01T10:00:00Z", "", false, "invalid date separator, expected `-`"},
		{"2024-13-01T10:00:00Z", "", false, "month value is outside expected range of 1-12"},
		{"2023-02-29T10:00:00Z", "", false, "day value is outside expected range"},
		{"2024-05-01 10:00:00Z", "", false, "invalid datetime separator, expected `T`"},
		{"2024-05-01T24:00:00Z", "", false, "hour value is outside expected range of 0-23"},
		{"2024-05-01T10:60:00Z", "", false, "minute value is outside expected range of 0-59"},
		{"2024-05-01T10:00:60Z", "", false, "second value is outside expected range of 0-59"},
		{"2024-05-01T10:00Z", "", false, "invalid time separator, expected `:`"},
		{"2024-05-01T10:00:00.Z", "", false, "invalid character in second fraction"},
		{"2024-05-01T10:00:00.1234567890Z", "", false, "second fraction value is more than 9 digits long"},
		{"2024-05-01T10:00:00+0200", "", false, "invalid timezone separator, expected `:`"},
		{"2024-05-01T10:00:00+02", "", false, "input is too short"},
		{"2024-05-01T10:00:00 UTC", "", false, "invalid timezone sign"},
		{"2024-05-01T10:00:00Zjunk", "", false, "unexpected extra characters at the end of the input"},
		{"2024-05-01T10:00:00+24:00", "", false, "timezone offset must be less than 24 hours"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, aware, problem := schema.ParseDateTime(tc.in)
			if problem != tc.wantProblem || aware != tc.wantAware {
				t.Fatalf("ParseDateTime(%q) = aware %v, problem %q; want aware %v, problem %q", tc.in, aware, problem, tc.wantAware, tc.wantProblem)
			}
			if tc.wantUTC != "" {
				if s := got.UTC().Format(time.RFC3339Nano); s != tc.wantUTC {
					t.Errorf("ParseDateTime(%q) = %s; want %s", tc.in, s, tc.wantUTC)
				}
			}
		})
	}
}
