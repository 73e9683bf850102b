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

// Webhooks configures the delivery of webhooks (docs/webhooks.md §4).
type Webhooks struct {
	// AllowPrivate lets endpoints live on loopback, private and link-local addresses
	// (ROADEVENTS_WEBHOOKS_ALLOW_PRIVATE=true): for receivers inside the deployment's own
	// network, and for tests.
	AllowPrivate bool
	// QueueURL is the SQS queue that carries the deliveries' turns on AWS
	// (ROADEVENTS_WEBHOOK_QUEUE_URL); empty on the embedded store, which keeps them in the table.
	QueueURL string
}

// readFeeds applies the feed and webhook variables of getenv.
func (c *Config) readFeeds(getenv func(string) string) error {
	c.Webhooks.QueueURL = getenv("ROADEVENTS_WEBHOOK_QUEUE_URL")
	for name, dst := range map[string]*bool{
		"ROADEVENTS_FEEDS_ALLOW_PRIVATE":    &c.Feeds.AllowPrivate,
		"ROADEVENTS_WEBHOOKS_ALLOW_PRIVATE": &c.Webhooks.AllowPrivate,
	} {
		v := getenv(name)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("config: %s=%q: want true or false", name, v)
		}
		*dst = b
	}
	return nil
}
