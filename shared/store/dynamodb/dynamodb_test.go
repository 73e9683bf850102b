package dynamodb_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/storetest"
)

// endpointEnv names DynamoDB Local's endpoint; scripts/test.sh sets it.
const endpointEnv = "ROADEVENTS_DYNAMODB_ENDPOINT"

// clockStart is where every test's fake clock starts: years ahead of the wall clock, so that
// DynamoDB Local's own TTL deletion (which runs on the wall clock) never removes a test item
// and the adapter's hiding of expired-but-stored items is what the TTL cases exercise.
var clockStart = time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)

// local is one table on DynamoDB Local with its clients.
type local struct {
	db        *ddb.Client
	streams   *dynamodbstreams.Client
	table     string
	streamARN string
}

// newLocal creates a table of its own on DynamoDB Local, or skips tb when none is running.
func newLocal(tb testing.TB) *local {
	tb.Helper()
	endpoint := os.Getenv(endpointEnv)
	if endpoint == "" {
		tb.Skip("DynamoDB Local not running: run ./scripts/test.sh, which starts it (or scripts/dynamodb-local.sh start and set " + endpointEnv + ")")
	}
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}
	l := &local{
		db: ddb.NewFromConfig(cfg, func(o *ddb.Options) { o.BaseEndpoint = aws.String(endpoint) }),
		streams: dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
			o.BaseEndpoint = aws.String(endpoint)
		}),
		table: "test-" + randomHex(tb, 8),
	}
	ctx := context.Background()
	if err := dynamodb.CreateTable(ctx, l.db, l.table); err != nil {
		tb.Fatalf("CreateTable(%s) = %v; want nil", l.table, err)
	}
	tb.Cleanup(func() {
		if _, err := l.db.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(l.table)}); err != nil {
			tb.Errorf("DeleteTable(%s) = %v; want nil", l.table, err)
		}
	})
	arn, err := dynamodb.StreamARN(ctx, l.db, l.table)
	if err != nil {
		tb.Fatalf("StreamARN(%s) = %v; want nil", l.table, err)
	}
	l.streamARN = arn
	return l
}

// harness returns an adapter over the shared table with a fake clock of its own, as
// storetest.Run requires of each subtest.
func (l *local) harness() (storetest.Harness, *dynamodb.Table) {
	c := clock.NewFake(clockStart)
	t := dynamodb.New(l.db, l.table, dynamodb.Options{Clock: c})
	feed := dynamodb.NewStreamFeed(l.streams, l.streamARN, dynamodb.StreamOptions{PollInterval: 50 * time.Millisecond})
	return storetest.Harness{Table: t, Feed: feed, Clock: c}, t
}

func randomHex(tb testing.TB, n int) string {
	tb.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestConformance runs the suite both adapters pass, on one table shared by its subtests
// (each writes only under its own partition prefix).
func TestConformance(t *testing.T) {
	l := newLocal(t)
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		h, _ := l.harness()
		return h
	})
}

// BenchmarkDynamoDB measures the adapter against DynamoDB Local: the figures show the cost of
// the adapter and of a local round trip, not of the DynamoDB service.
func BenchmarkDynamoDB(b *testing.B) {
	l := newLocal(b)
	storetest.RunBenchmarks(b, func(b *testing.B) storetest.Harness {
		h, _ := l.harness()
		return h
	})
}
