package config_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// docs/api.md §10.4: defaults of `go run .` and the ROADEVENTS_* overrides.
func TestFromEnv(t *testing.T) {
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || c.DataDir != "data" || c.Store != config.StoreEmbedded {
		t.Errorf("defaults = %q %q %q; want 127.0.0.1:8080 data embedded", c.Addr, c.DataDir, c.Store)
	}
	if !slices.Equal(c.CORSOrigins, []string{"*"}) {
		t.Errorf("CORSOrigins = %v; want [*] (docs/api.md §5: permissive by default)", c.CORSOrigins)
	}
	if c.Limits.MaxQueryRadiusM != 9780 || c.Limits.MaxEventsPerQuery != 500 {
		t.Errorf("limits = %+v; want docs/api.md §8 values", c.Limits)
	}

	c, err = config.FromEnv(env(map[string]string{
		"ROADEVENTS_ADDR": "127.0.0.1:9999", "ROADEVENTS_DATA": "/tmp/x",
		"ROADEVENTS_STORE": "dynamodb", "ROADEVENTS_TABLE": "events",
		"ROADEVENTS_CORS_ORIGINS":    "https://a.example, https://b.example",
		"ROADEVENTS_MAX_CONNECTIONS": "5000",
		"ROADEVENTS_BASEMAP_TILES":   "https://tiles.example/{z}/{x}/{y}.png", "ROADEVENTS_BASEMAP_ATTRIBUTION": "© Example",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9999" || c.DataDir != "/tmp/x" || c.Store != config.StoreDynamoDB || c.Table != "events" {
		t.Errorf("overrides not applied: %+v", c)
	}
	if c.Basemap != (config.Basemap{Tiles: "https://tiles.example/{z}/{x}/{y}.png", Attribution: "© Example"}) {
		t.Errorf("Basemap = %+v", c.Basemap)
	}
	if c.MaxConnections != 5000 {
		t.Errorf("MaxConnections = %d; want 5000", c.MaxConnections)
	}
	if !slices.Equal(c.CORSOrigins, []string{"https://a.example", "https://b.example"}) {
		t.Errorf("CORSOrigins = %v", c.CORSOrigins)
	}
}

func TestFromEnvRejects(t *testing.T) {
	for name, m := range map[string]map[string]string{
		"unknown store":            {"ROADEVENTS_STORE": "postgres"},
		"dynamodb no table":        {"ROADEVENTS_STORE": "dynamodb"},
		"bad log level":            {"ROADEVENTS_LOG_LEVEL": "loud"},
		"negative radius":          {"ROADEVENTS_MAX_QUERY_RADIUS_M": "-1"},
		"empty CORS list":          {"ROADEVENTS_CORS_ORIGINS": " , "},
		"no connections":           {"ROADEVENTS_MAX_CONNECTIONS": "0"},
		"connections not a number": {"ROADEVENTS_MAX_CONNECTIONS": "many"},
		"event id key not hex":     {"ROADEVENTS_EVENT_ID_KEY": "not-hex-at-all-not-hex-at-all-00"},
		"event id key short":       {"ROADEVENTS_EVENT_ID_KEY": "00112233445566778899aabbccddee"},
		"basemap without {z}":      {"ROADEVENTS_BASEMAP_TILES": "https://tiles.example/{x}/{y}.png"},
		"basemap not a URL":        {"ROADEVENTS_BASEMAP_TILES": "tiles.example/{z}/{x}/{y}.png"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := config.FromEnv(env(m)); err == nil {
				t.Fatalf("FromEnv(%v) = nil error; want an error", m)
			}
		})
	}
}

// The event-id key (docs/api.md §10.2: ids derived from organisation and client_event_id) comes
// from the environment when set, and wins over the data folder.
func TestEventIDKeyFromEnv(t *testing.T) {
	t.Parallel()
	hexKey := strings.Repeat("ab", 32)
	c, err := config.FromEnv(env(map[string]string{"ROADEVENTS_EVENT_ID_KEY": hexKey, "ROADEVENTS_DATA": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureEventIDKey(); err != nil {
		t.Fatal(err)
	}
	if want := bytes.Repeat([]byte{0xab}, 32); !bytes.Equal(c.EventIDKey, want) {
		t.Errorf("EventIDKey = %x; want %x", c.EventIDKey, want)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir, config.EventIDKeyFile)); err == nil {
		t.Errorf("a key file was written although ROADEVENTS_EVENT_ID_KEY was set")
	}
}

// `go run .` generates the key once and keeps it in the data folder, so derived ids survive a
// restart.
func TestEnsureEventIDKeyKeepsOneKeyInTheDataFolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	first := config.Default()
	first.DataDir = dir
	if err := first.EnsureEventIDKey(); err != nil {
		t.Fatal(err)
	}
	if len(first.EventIDKey) < config.MinEventIDKeyBytes {
		t.Fatalf("generated key of %d bytes; want at least %d", len(first.EventIDKey), config.MinEventIDKeyBytes)
	}
	info, err := os.Stat(filepath.Join(dir, config.EventIDKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode = %o; want 600 (a secret)", perm)
	}
	again := config.Default()
	again.DataDir = dir
	if err := again.EnsureEventIDKey(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.EventIDKey, first.EventIDKey) {
		t.Errorf("second start read key %x; want the first one %x", again.EventIDKey, first.EventIDKey)
	}
	other := config.Default()
	other.DataDir = filepath.Join(t.TempDir(), "data")
	if err := other.EnsureEventIDKey(); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other.EventIDKey, first.EventIDKey) {
		t.Errorf("two data folders got the same key; want a random key per folder")
	}
}

func TestEnsureEventIDKeyRejectsADamagedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.EventIDKeyFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	c.DataDir = dir
	if err := c.EnsureEventIDKey(); err == nil {
		t.Errorf("EnsureEventIDKey with a damaged key file = nil; want an error (a new key would change every derived id)")
	}
}
