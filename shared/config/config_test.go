package config_test

import (
	"slices"
	"testing"

	"github.com/roadevents/roadevents/shared/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// contract 4: defaults of `go run .` and the ROADEVENTS_* overrides.
func TestFromEnv(t *testing.T) {
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || c.DataDir != "data" || c.Store != config.StoreEmbedded {
		t.Errorf("defaults = %q %q %q; want 127.0.0.1:8080 data embedded", c.Addr, c.DataDir, c.Store)
	}
	if !slices.Equal(c.CORSOrigins, []string{"*"}) {
		t.Errorf("CORSOrigins = %v; want [*] (spec 5: permissive by default)", c.CORSOrigins)
	}
	if c.Limits.MaxQueryRadiusM != 9780 || c.Limits.MaxEventsPerQuery != 500 {
		t.Errorf("limits = %+v; want spec 8 values", c.Limits)
	}

	c, err = config.FromEnv(env(map[string]string{
		"ROADEVENTS_ADDR": "127.0.0.1:9999", "ROADEVENTS_DATA": "/tmp/x",
		"ROADEVENTS_STORE": "dynamodb", "ROADEVENTS_TABLE": "events",
		"ROADEVENTS_CORS_ORIGINS": "https://a.example, https://b.example",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9999" || c.DataDir != "/tmp/x" || c.Store != config.StoreDynamoDB || c.Table != "events" {
		t.Errorf("overrides not applied: %+v", c)
	}
	if !slices.Equal(c.CORSOrigins, []string{"https://a.example", "https://b.example"}) {
		t.Errorf("CORSOrigins = %v", c.CORSOrigins)
	}
}

func TestFromEnvRejects(t *testing.T) {
	for name, m := range map[string]map[string]string{
		"unknown store":     {"ROADEVENTS_STORE": "postgres"},
		"dynamodb no table": {"ROADEVENTS_STORE": "dynamodb"},
		"bad log level":     {"ROADEVENTS_LOG_LEVEL": "loud"},
		"negative radius":   {"ROADEVENTS_MAX_QUERY_RADIUS_M": "-1"},
		"empty CORS list":   {"ROADEVENTS_CORS_ORIGINS": " , "},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := config.FromEnv(env(m)); err == nil {
				t.Fatalf("FromEnv(%v) = nil error; want an error", m)
			}
		})
	}
}
