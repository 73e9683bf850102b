// Package config is the service's typed configuration, read once at start from the environment
// (docs/architecture.md §6). No other package reads the environment.
package config

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
)

// Store names the storage adapter.
type Store string

// The storage adapters (docs/api.md §10.4).
const (
	StoreEmbedded Store = "embedded"
	StoreDynamoDB Store = "dynamodb"
)

// Config is everything a process of the service needs to know about its deployment.
type Config struct {
	Addr    string // listen address of the local server
	DataDir string // embedded storage and the e-mail outbox
	Store   Store
	Table   string // DynamoDB table name, with StoreDynamoDB

	// ConsoleURL is where people open the console; GET / reports it.
	ConsoleURL string
	// CORSOrigins are the origins allowed to call the API from a browser; ["*"] allows any
	// (docs/api.md §5).
	CORSOrigins []string
	LogLevel    slog.Level
	// MaxConnections caps the connections a long-running server holds at once
	// (ROADEVENTS_MAX_CONNECTIONS); 0 derives it from the descriptor limit
	// (daemon.DefaultConnectionBudget, docs/operations.md §3).
	MaxConnections int

	Limits Limits

	// Mail configures outgoing e-mail (console.go).
	Mail Mail
	// Console holds the console sign-in secrets (console.go).
	Console Console
	// Stream configures the change feed of GET /v1/stream (stream.go).
	Stream Stream
	// Billing configures the plans and Stripe (billing.go).
	Billing Billing
	// Reputation holds the thresholds of the publisher reputation rule (reputation.go).
	Reputation Reputation
	// Export names the publisher of the open-data exports (export.go).
	Export Export
	// Basemap is the console map's background (basemap.go).
	Basemap Basemap
	// Feeds configures the import of open-data feeds (feeds.go).
	Feeds Feeds
	// Webhooks configures the delivery of webhooks (feeds.go).
	Webhooks Webhooks

	// EventIDKey is the HMAC key event ids are derived from (docs/api.md §10.2: an id derived from
	// organisation and client_event_id). Every process serving one table must share it, or a
	// retried publish reaching another process would not find its event. It comes from
	// ROADEVENTS_EVENT_ID_KEY (hex, at least MinEventIDKeyBytes) or, for `go run .`, from the
	// data folder (EnsureEventIDKey). It is a secret: never commit or log it.
	EventIDKey []byte
}

// SecretsEnv names the variable listing, comma-separated, the Secrets Manager secrets (ARNs or
// names) a Lambda reads its secret variables from at start (lambdaapp.New). Each secret's
// value is a JSON object of ROADEVENTS_* variables (and the two Stripe keys) and their values,
// for example {"ROADEVENTS_EVENT_ID_KEY":"<hex>"}; a secret's variable takes precedence over
// the environment. Secrets therefore never appear in the function's configuration, where
// anyone allowed to read it would see them (docs/operations.md §5). The CDK stack sets
// it on every function.
const SecretsEnv = "ROADEVENTS_SECRETS"

// MinEventIDKeyBytes is the shortest event-id key accepted: ids derived from a short key could
// be guessed.
const MinEventIDKeyBytes = 16

// EmbeddedStoreFile is the embedded store's file in the data folder.
const EmbeddedStoreFile = "roadevents.db"

// EventIDKeyFile is the file in the data folder that holds the event-id key of `go run .`,
// created on first start (hex, one line, readable by its owner only).
const EventIDKeyFile = "event-id.key"

// Limits are the deployment values of docs/api.md §8 that the service enforces or serves.
type Limits struct {
	MaxQueryRadiusM   float64 // GET /v1/events and the stream: 422 above it (docs/api.md §8)
	QueryLevel        int     // H3 resolution of the area index, served by /v1/meta/limits (app.New sets it to eventstore.QueryLevel, the level the index is read at)
	MaxEventsPerQuery int     // silent truncation of an area query (docs/api.md §8)
}

// DefaultLimits are the current values of docs/api.md §8.
var DefaultLimits = Limits{MaxQueryRadiusM: 9780, QueryLevel: 8, MaxEventsPerQuery: 500}

// Default is the configuration of `go run .` on a fresh machine (docs/api.md §10.4).
func Default() Config {
	return Config{
		Addr:        "127.0.0.1:8080",
		DataDir:     "data",
		Store:       StoreEmbedded,
		CORSOrigins: []string{"*"},
		LogLevel:    slog.LevelInfo,
		Limits:      DefaultLimits,
		Mail:        DefaultMail,
		Stream:      DefaultStream,
		Billing:     DefaultBilling,
		Reputation:  DefaultReputation,
		Export:      DefaultExport,
		Basemap:     DefaultBasemap,
	}
}

// FromEnv returns Default overridden by the ROADEVENTS_* variables of getenv (os.Getenv in
// production, a map in tests).
func FromEnv(getenv func(string) string) (Config, error) {
	c := Default()
	setString(&c.Addr, getenv("ROADEVENTS_ADDR"))
	setString(&c.DataDir, getenv("ROADEVENTS_DATA"))
	setString(&c.Table, getenv("ROADEVENTS_TABLE"))
	setString(&c.ConsoleURL, getenv("ROADEVENTS_CONSOLE_URL"))
	if v := getenv("ROADEVENTS_STORE"); v != "" {
		switch Store(v) {
		case StoreEmbedded, StoreDynamoDB:
			c.Store = Store(v)
		default:
			return c, fmt.Errorf("config: ROADEVENTS_STORE=%q: want %q or %q", v, StoreEmbedded, StoreDynamoDB)
		}
	}
	if v := getenv("ROADEVENTS_CORS_ORIGINS"); v != "" {
		c.CORSOrigins = splitList(v)
	}
	if v := getenv("ROADEVENTS_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return c, fmt.Errorf("config: ROADEVENTS_LOG_LEVEL=%q: %w", v, err)
		}
	}
	if v := getenv("ROADEVENTS_EVENT_ID_KEY"); v != "" {
		key, err := parseKey(v)
		if err != nil {
			return c, fmt.Errorf("config: ROADEVENTS_EVENT_ID_KEY: %w", err)
		}
		c.EventIDKey = key
	}
	if v := getenv("ROADEVENTS_MAX_QUERY_RADIUS_M"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return c, fmt.Errorf("config: ROADEVENTS_MAX_QUERY_RADIUS_M=%q: want a positive number of metres", v)
		}
		c.Limits.MaxQueryRadiusM = f
	}
	if v := getenv("ROADEVENTS_MAX_CONNECTIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("config: ROADEVENTS_MAX_CONNECTIONS=%q: want a positive number of connections", v)
		}
		c.MaxConnections = n
	}
	if err := c.readConsole(getenv); err != nil {
		return c, err
	}
	if err := c.readStream(getenv); err != nil {
		return c, err
	}
	if err := c.readExport(getenv); err != nil {
		return c, err
	}
	if err := c.readBasemap(getenv); err != nil {
		return c, err
	}
	if err := c.readFeeds(getenv); err != nil {
		return c, err
	}
	if err := c.readBilling(getenv); err != nil {
		return c, err
	}
	if err := c.readReputation(getenv); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate reports a configuration the service cannot run with.
func (c Config) Validate() error {
	if c.Store == StoreDynamoDB && c.Table == "" {
		return fmt.Errorf("config: ROADEVENTS_STORE=dynamodb needs ROADEVENTS_TABLE")
	}
	if c.Store == StoreEmbedded && c.DataDir == "" {
		return fmt.Errorf("config: the embedded store needs a data folder (-data or ROADEVENTS_DATA)")
	}
	if len(c.CORSOrigins) == 0 {
		return fmt.Errorf("config: ROADEVENTS_CORS_ORIGINS is empty")
	}
	if err := c.Reputation.Validate(); err != nil {
		return err
	}
	return c.validateConsole()
}

// EnsureEventIDKey makes sure EventIDKey is set: when ROADEVENTS_EVENT_ID_KEY did not set it,
// it reads EventIDKeyFile from the data folder, creating it with a fresh random key on first
// start, so that ids derived from client_event_id stay the same across restarts of `go run .`.
// A deployment of several processes (Lambda) sets ROADEVENTS_EVENT_ID_KEY instead.
func (c *Config) EnsureEventIDKey() error {
	if len(c.EventIDKey) > 0 {
		return nil
	}
	if c.DataDir == "" {
		return fmt.Errorf("config: no event id key: set ROADEVENTS_EVENT_ID_KEY or a data folder")
	}
	key, err := LoadOrCreateKey(c.DataDir, EventIDKeyFile, eventIDKeyFileBytes)
	if err != nil {
		return fmt.Errorf("config: event id key: %w", err)
	}
	c.EventIDKey = key
	return nil
}

// eventIDKeyFileBytes is the size of the key EnsureEventIDKey creates: 256 bits.
const eventIDKeyFileBytes = 32

// parseKey reads a hex key of at least MinEventIDKeyBytes.
func parseKey(v string) ([]byte, error) {
	key, err := hex.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("want hexadecimal")
	}
	if len(key) < MinEventIDKeyBytes {
		return nil, fmt.Errorf("%d bytes, want at least %d", len(key), MinEventIDKeyBytes)
	}
	return key, nil
}

// Getenv is os.Getenv, named so that main reads as wiring.
var Getenv = os.Getenv

func setString(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
