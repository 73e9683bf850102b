package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/config"
)

// The streamer's change feed settings: defaults and overrides (docs/operations.md §6).
func TestStreamFromEnv(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Stream.ARN != "" || c.Stream.PollInterval != 400*time.Millisecond || c.Stream.ResumeWindow != 5*time.Minute {
		t.Errorf("default Stream = %+v; want no ARN, 400ms (two readers a shard within 5 reads a second), resume within 5m", c.Stream)
	}
	c, err = config.FromEnv(env(map[string]string{
		"ROADEVENTS_STREAM_ARN":           "arn:aws:dynamodb:eu-west-1:1:table/t/stream/2026",
		"ROADEVENTS_STREAM_POLL_INTERVAL": "250ms",
		"ROADEVENTS_STREAM_RESUME_WINDOW": "0",
		"ROADEVENTS_RELAY_REDIS":          "rediss://relay.cache.internal:6379",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Stream.ARN != "arn:aws:dynamodb:eu-west-1:1:table/t/stream/2026" || c.Stream.PollInterval != 250*time.Millisecond ||
		c.Stream.ResumeWindow != 0 || c.Stream.Relay != "rediss://relay.cache.internal:6379" || c.Stream.RelayKey != "roadevents:changes" {
		t.Errorf("Stream = %+v; want the variables' values", c.Stream)
	}
	for _, v := range []string{"fast", "10ms", "2m", "-1s"} {
		if _, err := config.FromEnv(env(map[string]string{"ROADEVENTS_STREAM_POLL_INTERVAL": v})); err == nil {
			t.Errorf("ROADEVENTS_STREAM_POLL_INTERVAL=%q accepted; want an error", v)
		}
	}
	for _, v := range []string{"relay:6379", "redis://relay", "redis://:secret@relay:6379", "http://relay:6379", "redis://relay:6379/0"} {
		_, err := config.FromEnv(env(map[string]string{"ROADEVENTS_RELAY_REDIS": v}))
		if err == nil {
			t.Errorf("ROADEVENTS_RELAY_REDIS=%q accepted; want an error", v)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("the refusal %q repeats the password", err)
		}
	}
	// The relay's counter takes the key in braces, to share its hash slot in a cluster.
	for _, v := range []string{"{roadevents}:changes", "changes}"} {
		if _, err := config.FromEnv(env(map[string]string{"ROADEVENTS_RELAY_KEY": v})); err == nil {
			t.Errorf("ROADEVENTS_RELAY_KEY=%q accepted; want an error", v)
		}
	}
	// Past the embedded store's feed retention (24 h) nothing is left to resume from.
	for _, v := range []string{"soon", "-1s", "25h"} {
		if _, err := config.FromEnv(env(map[string]string{"ROADEVENTS_STREAM_RESUME_WINDOW": v})); err == nil {
			t.Errorf("ROADEVENTS_STREAM_RESUME_WINDOW=%q accepted; want an error", v)
		}
	}
}

// docs/interop.md §7: the exports' publisher and DATEX II country are deployment values.
func TestExportFromEnv(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(nil))
	if err != nil || c.Export != config.DefaultExport || c.Export.Country != "EU" {
		t.Fatalf("default Export = %+v, %v; want the defaults, country EU", c.Export, err)
	}
	c, err = config.FromEnv(env(map[string]string{"ROADEVENTS_EXPORT_PUBLISHER": "Autobahn Süd", "ROADEVENTS_EXPORT_COUNTRY": "DE"}))
	if err != nil || c.Export != (config.Export{Publisher: "Autobahn Süd", Country: "DE"}) {
		t.Errorf("Export = %+v, %v; want the variables' values", c.Export, err)
	}
	for k, v := range map[string]string{"ROADEVENTS_EXPORT_COUNTRY": "de", "ROADEVENTS_EXPORT_PUBLISHER": strings.Repeat("x", 101)} {
		if _, err := config.FromEnv(env(map[string]string{k: v})); err == nil {
			t.Errorf("%s=%q accepted; want an error", k, v)
		}
	}
}

// docs/interop.md §10: feeds on private addresses only where the deployment allows them.
func TestFeedsFromEnv(t *testing.T) {
	t.Parallel()
	if c, err := config.FromEnv(env(nil)); err != nil || c.Feeds.AllowPrivate {
		t.Fatalf("default Feeds = %+v, %v; want private addresses refused", c.Feeds, err)
	}
	if c, err := config.FromEnv(env(map[string]string{"ROADEVENTS_FEEDS_ALLOW_PRIVATE": "true"})); err != nil || !c.Feeds.AllowPrivate {
		t.Errorf("ROADEVENTS_FEEDS_ALLOW_PRIVATE=true: %+v, %v; want them allowed", c.Feeds, err)
	}
	if _, err := config.FromEnv(env(map[string]string{"ROADEVENTS_FEEDS_ALLOW_PRIVATE": "sometimes"})); err == nil {
		t.Error("ROADEVENTS_FEEDS_ALLOW_PRIVATE=sometimes accepted; want an error")
	}
	// docs/webhooks.md §4: the same for webhook endpoints.
	if c, err := config.FromEnv(env(map[string]string{"ROADEVENTS_WEBHOOKS_ALLOW_PRIVATE": "1"})); err != nil || !c.Webhooks.AllowPrivate || c.Feeds.AllowPrivate {
		t.Errorf("ROADEVENTS_WEBHOOKS_ALLOW_PRIVATE=1: %+v, %+v, %v; want webhooks allowed, feeds not", c.Webhooks, c.Feeds, err)
	}
}
