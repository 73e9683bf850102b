package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultStreamPollInterval is the pause between two empty reads of a DynamoDB Streams shard
// by one streamer. DynamoDB Streams serves at most 2 readers per shard and about 5 GetRecords
// calls a second per shard; the deployment runs 2 streamer tasks (docs/operations.md §6), so each
// may poll an idle shard 2.5 times a second: 400 ms. It adds at most 400 ms (200 on average)
// to the delivery of the first change after a quiet spell, within the 1 s p95 of docs/api.md §1.
// A single reader can set 250 ms.
const DefaultStreamPollInterval = 400 * time.Millisecond

// Stream configures how a process follows the table's change feed for GET /v1/stream
// (docs/architecture.md §3). The embedded store's feed needs none of it.
type Stream struct {
	// ARN is the table's DynamoDB stream (ROADEVENTS_STREAM_ARN); empty means read it from
	// the table's description, which needs dynamodb:DescribeTable.
	ARN string
	// PollInterval is the pause between two empty reads of a shard
	// (ROADEVENTS_STREAM_POLL_INTERVAL, a Go duration such as 250ms).
	PollInterval time.Duration
	// ResumeWindow is how long after a change a reconnecting stream that names its last frame
	// (Last-Event-ID) is still sent the change instead of a new snapshot
	// (ROADEVENTS_STREAM_RESUME_WINDOW, a Go duration; 0 turns resuming off; docs/api.md §10.2
	// (Stream), resuming).
	ResumeWindow time.Duration
	// Relay is the Redis whose stream the relay writes the table's changes to
	// (ROADEVENTS_RELAY_REDIS, redis://host:port, or rediss://host:port for TLS, which
	// ElastiCache Serverless requires; never a password in it; docs/architecture.md §3): a
	// streamer with it follows that log instead of the table's stream, and `streamer -relay`
	// writes it. Empty: no relay.
	Relay string
	// RelayKey names the Redis Stream (ROADEVENTS_RELAY_KEY).
	RelayKey string
}

// DefaultStreamResumeWindow is ResumeWindow when no variable says otherwise: long enough for
// a vehicle to cross a tunnel or a dead zone, short enough that the changes to read again
// stay few.
const DefaultStreamResumeWindow = 5 * time.Minute

// maxStreamResumeWindow is the embedded store's feed retention: older changes are gone.
const maxStreamResumeWindow = 24 * time.Hour

// DefaultStream is the stream configuration when no variable says otherwise.
var DefaultStream = Stream{PollInterval: DefaultStreamPollInterval, ResumeWindow: DefaultStreamResumeWindow, RelayKey: "roadevents:changes"}

// readStream applies the stream variables of getenv.
func (c *Config) readStream(getenv func(string) string) error {
	setString(&c.Stream.ARN, getenv("ROADEVENTS_STREAM_ARN"))
	if v := getenv("ROADEVENTS_STREAM_POLL_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		// Below 50 ms a reader alone would pass DynamoDB Streams' per-shard read rate.
		if err != nil || d < 50*time.Millisecond || d > time.Minute {
			return fmt.Errorf("config: ROADEVENTS_STREAM_POLL_INTERVAL=%q: want a duration from 50ms to 1m", v)
		}
		c.Stream.PollInterval = d
	}
	setString(&c.Stream.Relay, getenv("ROADEVENTS_RELAY_REDIS"))
	setString(&c.Stream.RelayKey, getenv("ROADEVENTS_RELAY_KEY"))
	if strings.ContainsAny(c.Stream.RelayKey, "{}") {
		// The relay's counter shares the stream's hash slot through braces of its own.
		return fmt.Errorf("config: ROADEVENTS_RELAY_KEY: want a Redis key without braces, got %q", c.Stream.RelayKey)
	}
	if c.Stream.Relay != "" && !validRedisURL(c.Stream.Relay) {
		// The value is not echoed: a refused one may hold a password.
		return fmt.Errorf("config: ROADEVENTS_RELAY_REDIS: want redis://host:port or rediss://host:port, without credentials")
	}
	if v := getenv("ROADEVENTS_STREAM_RESUME_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxStreamResumeWindow {
			return fmt.Errorf("config: ROADEVENTS_STREAM_RESUME_WINDOW=%q: want a duration from 0 (off) to 24h", v)
		}
		c.Stream.ResumeWindow = d
	}
	return nil
}

// validRedisURL reports whether v is redis:// or rediss:// with a host and a port, and nothing
// else: no credentials (they belong in a secret, not in a variable that gets logged), no path.
func validRedisURL(v string) bool {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.User != nil || u.Path != "" || u.RawQuery != "" {
		return false
	}
	host, port, err := net.SplitHostPort(u.Host)
	n, perr := strconv.Atoi(port)
	return err == nil && perr == nil && host != "" && n >= 1 && n <= 65535
}
