package config

import (
	"fmt"
	"strconv"
)

// Feeds configures the import of open-data feeds (docs/interop.md §10).
type Feeds struct {
	// AllowPrivate lets feeds live on loopback, private and link-local addresses
	// (ROADEVENTS_FEEDS_ALLOW_PRIVATE=true): for a deployment whose feeds are inside its own
	// network, and for tests. Off, the fetcher refuses them, so that an organisation cannot
	// make the service read the deployment's own network or the cloud's metadata service.
	AllowPrivate bool
}

// readFeeds applies the feed variables of getenv.
func (c *Config) readFeeds(getenv func(string) string) error {
	v := getenv("ROADEVENTS_FEEDS_ALLOW_PRIVATE")
	if v == "" {
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("config: ROADEVENTS_FEEDS_ALLOW_PRIVATE=%q: want true or false", v)
	}
	c.Feeds.AllowPrivate = b
	return nil
}
