package config_test

import (
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/config"
)

// docs/network.md §2: the reputation thresholds are deployment values, 20 decided events,
// 80 % ended by deny quorum, over 30 days unless the variables say otherwise.
func TestReputationFromEnv(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := (config.Reputation{MinHistory: 20, VerdictPercent: 80, WindowDays: 30}); c.Reputation != want {
		t.Errorf("default Reputation = %+v; want %+v", c.Reputation, want)
	}
	c, err = config.FromEnv(env(map[string]string{
		"ROADEVENTS_REPUTATION_MIN_HISTORY":     "50",
		"ROADEVENTS_REPUTATION_VERDICT_PERCENT": "90",
		"ROADEVENTS_REPUTATION_WINDOW_DAYS":     "14",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (config.Reputation{MinHistory: 50, VerdictPercent: 90, WindowDays: 14}); c.Reputation != want {
		t.Errorf("Reputation = %+v; want %+v", c.Reputation, want)
	}
}

// A value the rule cannot work with refuses to start, naming the variable.
func TestReputationFromEnvRejects(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, value string }{
		{"ROADEVENTS_REPUTATION_MIN_HISTORY", "0"},
		{"ROADEVENTS_REPUTATION_MIN_HISTORY", "twenty"},
		{"ROADEVENTS_REPUTATION_MIN_HISTORY", "100001"},
		{"ROADEVENTS_REPUTATION_VERDICT_PERCENT", "49"},
		{"ROADEVENTS_REPUTATION_VERDICT_PERCENT", "101"},
		{"ROADEVENTS_REPUTATION_VERDICT_PERCENT", "0.8"},
		{"ROADEVENTS_REPUTATION_WINDOW_DAYS", "0"},
		{"ROADEVENTS_REPUTATION_WINDOW_DAYS", "91"},
		{"ROADEVENTS_REPUTATION_WINDOW_DAYS", "-3"},
	} {
		_, err := config.FromEnv(env(map[string]string{tt.name: tt.value}))
		if err == nil || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%s=%q: FromEnv = %v; want an error naming the variable", tt.name, tt.value, err)
		}
	}
	// A configuration built in code is held to the same bounds.
	cfg := config.Default()
	cfg.Reputation.WindowDays = 0
	if err := cfg.Validate(); err == nil {
		t.Errorf("Validate with a 0-day window = nil; want an error")
	}
}
