// Package tables opens a fresh table on each store adapter for the tests of domain packages,
// so that every package that stores something runs its tests against both the embedded store
// and DynamoDB (docs/architecture.md §2: a behaviour difference is a bug, and the domain is where
// it would show).
//
//	func TestRevoke(t *testing.T) {
//		t.Parallel()
//		tables.Each(t, func(t *testing.T, tab tables.Table) {
//			t.Parallel()
//			keys := apikey.New(tab, apikey.Options{Clock: tab.Clock})
//			...
//		})
//	}
//
// The embedded store always runs, in t.TempDir(). DynamoDB runs against DynamoDB Local when
// ROADEVENTS_DYNAMODB_ENDPOINT is set (scripts/test.sh starts it and sets it); otherwise its
// subtest skips with a message naming scripts/test.sh, which scripts/test.sh turns into a
// failure, so CI cannot pass without it.
package tables

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// EndpointEnv names the environment variable holding DynamoDB Local's endpoint; scripts/test.sh
// sets it. Only tests read it (the service reads its configuration through package config).
const EndpointEnv = "ROADEVENTS_DYNAMODB_ENDPOINT"

// The adapter names, also the names of the subtests Each runs.
const (
	AdapterEmbedded = "embedded"
	AdapterDynamoDB = "dynamodb"
)

// Start is where every Table's fake clock starts: years ahead of the wall clock, so that
// DynamoDB Local's own TTL deletion (which runs on the wall clock) never removes a test item
// and TTL behaviour follows the fake clock alone. Tests that move the clock elsewhere should
// stay after the wall clock for the same reason.
var Start = time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)

// Table is a fresh, empty table on one adapter, with the fake clock that adapter uses to
// decide TTL expiry. Give the same clock to the code under test so that its idea of "now"
// and the table's agree.
type Table struct {
	store.Table
	// Feed is the table's change feed.
	Feed store.Feed
	// Clock is the adapter's clock, starting at Start.
	Clock *clock.Fake
	// Adapter is AdapterEmbedded or AdapterDynamoDB.
	Adapter string
	// Everything returns every item the table holds, as JSON, for a test that checks what is
	// at rest (docs/privacy.md): on DynamoDB a Scan, so items past their TTL that DynamoDB has
	// not removed yet too.
	Everything func(tb testing.TB) string
}

// Each runs f as one subtest per adapter (named AdapterEmbedded and AdapterDynamoDB), each
// with a fresh table. The DynamoDB subtest skips when DynamoDB Local is not configured.
func Each(t *testing.T, f func(t *testing.T, tab Table)) {
	t.Helper()
	t.Run(AdapterEmbedded, func(t *testing.T) { f(t, Embedded(t)) })
	t.Run(AdapterDynamoDB, func(t *testing.T) { f(t, DynamoDB(t)) })
}

// Embedded opens an embedded store in a temporary directory of tb, closed at the end of the
// test. It has no background sweeper: items past their TTL are invisible all the same.
func Embedded(tb testing.TB) Table {
	tb.Helper()
	clk := clock.NewFake(Start)
	path := filepath.Join(tb.TempDir(), "store.db")
	s, err := embedded.Open(path, embedded.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		tb.Fatalf("embedded.Open(%s) = %v; want nil", path, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("embedded store Close = %v; want nil", err)
		}
	})
	return Table{Table: s, Feed: s, Clock: clk, Adapter: AdapterEmbedded, Everything: func(tb testing.TB) string {
		tb.Helper()
		ctx := context.Background()
		pks, err := s.Partitions(ctx, "")
		if err != nil {
			tb.Fatalf("Partitions = %v", err)
		}
		var all []store.Item
		for _, pk := range pks {
			items, err := s.Query(ctx, store.Query{PK: pk})
			if err != nil {
				tb.Fatalf("Query(%s) = %v", pk, err)
			}
			all = append(all, items...)
		}
		return asJSON(tb, all)
	}}
}

func asJSON(tb testing.TB, items []store.Item) string {
	tb.Helper()
	raw, err := json.Marshal(items)
	if err != nil {
		tb.Fatalf("json.Marshal of the items = %v", err)
	}
	return string(raw)
}

// Local is a table of its own on DynamoDB Local with the clients that reach it, for tests that
// need the raw clients (the dynamodb adapter's own tests); other tests take DynamoDB.
type Local struct {
	DB        *ddb.Client
	Streams   *dynamodbstreams.Client
	Name      string
	StreamARN string
	// Config and Endpoint build more clients of DynamoDB Local (ddb.NewFromConfig with
	// Options.BaseEndpoint), such as one whose calls go through a fault injector.
	Config   aws.Config
	Endpoint string
}

// How the adapters of Local.Table try a call. DynamoDB Local answers contention on one item
// with a 500 "timed out waiting for a lock ... will succeed in actual DynamoDB", and under the
// load of the whole test suite on a small machine it takes seconds to answer: retrying longer
// than the adapter's defaults, and waiting longer for each attempt, keeps these emulator
// artefacts out of the results.
const (
	LocalAttempts       = 10
	LocalAttemptTimeout = 30 * time.Second
)

// NewLocal creates a table on DynamoDB Local, deleted at the end of the test, or skips tb when
// EndpointEnv is not set.
func NewLocal(tb testing.TB) *Local {
	tb.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		tb.Skip("DynamoDB Local not running: run ./scripts/test.sh, which starts it (or scripts/dynamodb-local.sh start and set " + EndpointEnv + ")")
	}
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		// For the raw clients' calls (the adapters have their own, LocalAttempts).
		Retryer: func() aws.Retryer {
			return retry.AddWithMaxAttempts(retry.NewStandard(), LocalAttempts)
		},
	}
	l := &Local{
		Config:   cfg,
		Endpoint: endpoint,
		DB:       ddb.NewFromConfig(cfg, func(o *ddb.Options) { o.BaseEndpoint = aws.String(endpoint) }),
		Streams: dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
			o.BaseEndpoint = aws.String(endpoint)
		}),
		Name: "test-" + strings.ToLower(rand.Text()),
	}
	ctx := context.Background()
	if err := dynamodb.CreateTable(ctx, l.DB, l.Name); err != nil {
		tb.Fatalf("CreateTable(%s) on %s = %v; want nil", l.Name, endpoint, err)
	}
	tb.Cleanup(func() {
		if _, err := l.DB.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(l.Name)}); err != nil {
			tb.Errorf("DeleteTable(%s) = %v; want nil", l.Name, err)
		}
	})
	arn, err := dynamodb.StreamARN(ctx, l.DB, l.Name)
	if err != nil {
		tb.Fatalf("StreamARN(%s) = %v; want nil", l.Name, err)
	}
	l.StreamARN = arn
	return l
}

// Options are the adapter options of Local.Table, with clock clk.
func (l *Local) Options(clk clock.Clock) dynamodb.Options {
	return dynamodb.Options{Clock: clk, MaxAttempts: LocalAttempts, AttemptTimeout: LocalAttemptTimeout}
}

// Table returns an adapter over the table, with a fake clock of its own starting at Start.
// Several adapters over one table can serve tests that write under distinct partitions.
func (l *Local) Table() Table {
	clk := clock.NewFake(Start)
	return Table{
		Table:   dynamodb.New(l.DB, l.Name, l.Options(clk)),
		Feed:    dynamodb.NewStreamFeed(l.Streams, l.StreamARN, dynamodb.StreamOptions{PollInterval: 50 * time.Millisecond}),
		Clock:   clk,
		Adapter: AdapterDynamoDB,
		Everything: func(tb testing.TB) string {
			tb.Helper()
			all, err := dynamodb.Scan(context.Background(), l.DB, l.Name)
			if err != nil {
				tb.Fatal(err)
			}
			return asJSON(tb, all)
		},
	}
}

// DynamoDB creates a table of its own on DynamoDB Local, deleted at the end of the test, or
// skips tb when EndpointEnv is not set.
func DynamoDB(tb testing.TB) Table {
	tb.Helper()
	return NewLocal(tb).Table()
}
