// Package config is the service's typed configuration, read once at start from the environment
// (ARCHITECTURE.md, Configuration). No other package reads the environment.
package config

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
)

// Store names the storage adapter.
type Store string

// The storage adapters (contract 4).
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
	// CORSOrigins are the origins allowed to call the API from a browser; ["*"] allows any (spec 5).
	CORSOrigins []string
	LogLevel    slog.Level

	Limits Limits
}

// Limits are the deployment values of spec 8 that the service enforces or serves.
type Limits struct {
	MaxQueryRadiusM   float64 // GET /v1/events and the stream: 422 above it (spec 8)
	QueryLevel        int     // H3 resolution of the area index, served by /v1/meta/limits
	MaxEventsPerQuery int     // silent truncation of an area query (spec 8)
}

// DefaultLimits are the current values of spec 8.
var DefaultLimits = Limits{MaxQueryRadiusM: 9780, QueryLevel: 7, MaxEventsPerQuery: 500}

// Default is the configuration of `go run .` on a fresh machine (contract 4).
func Default() Config {
	return Config{
		Addr:        "127.0.0.1:8080",
		DataDir:     "data",
		Store:       StoreEmbedded,
		CORSOrigins: []string{"*"},
		LogLevel:    slog.LevelInfo,
		Limits:      DefaultLimits,
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
	if v := getenv("ROADEVENTS_MAX_QUERY_RADIUS_M"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return c, fmt.Errorf("config: ROADEVENTS_MAX_QUERY_RADIUS_M=%q: want a positive number of metres", v)
		}
		c.Limits.MaxQueryRadiusM = f
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
	return nil
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
