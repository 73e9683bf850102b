// Package relaytest gives tests a Log of their own on the Redis that scripts/test.sh starts.
package relaytest

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roadevents/roadevents/shared/relay"
	"github.com/roadevents/roadevents/shared/store"
)

// Env names the variable holding the test Redis's address (host:port).
const Env = "ROADEVENTS_TEST_REDIS"

// Addr is the test Redis's address; it skips tb when none is configured.
func Addr(tb testing.TB) string {
	tb.Helper()
	addr := os.Getenv(Env)
	if addr == "" {
		tb.Skip("Redis not running: run ./scripts/test.sh, which starts it (or scripts/redis.sh start and set " + Env + " to its host:port)")
	}
	return addr
}

// NewLog returns a Log under a fresh name, keeping about maxLen changes (the default when 0),
// deleted at the end of the test; it skips tb when no test Redis is configured.
func NewLog(tb testing.TB, maxLen int64) *relay.Log {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: Addr(tb)})
	log := relay.NewLog(rdb, "test:"+rand.Text(), maxLen)
	tb.Cleanup(func() {
		log.Drop(context.Background())
		rdb.Close()
	})
	return log
}

// WaitStarted waits until a relay started on log has written its starting gap, after which
// every change it reads reaches the log: a hub that follows the log sooner meets the gap and
// ends its streams.
func WaitStarted(tb testing.TB, log *relay.Log) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		cur, err := log.FollowAfter(ctx, 0)
		if errors.Is(err, store.ErrReplay) && ctx.Err() == nil { // nothing written yet
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		_, err = cur.Next(ctx)
		cur.Close()
		if !errors.Is(err, relay.ErrGap) {
			tb.Fatalf("the log begins with %v; want the relay's gap", err)
		}
		return
	}
}
