package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// Store is an opened table with its change feed.
type Store struct {
	Table store.Table
	Feed  store.Feed
}

// OpenStore opens the adapter the configuration names (docs/api.md §10.4): the embedded store in
// the data folder, or a DynamoDB table through the standard AWS configuration chain. A missing
// DynamoDB table is created, which is what a local run against DynamoDB Local needs; on AWS the
// table comes from the stack and the function has no right to create one.
func OpenStore(ctx context.Context, cfg config.Config, clk clock.Clock, logger *slog.Logger) (*Store, error) {
	switch cfg.Store {
	case config.StoreEmbedded:
		s, err := embedded.Open(filepath.Join(cfg.DataDir, config.EmbeddedStoreFile), embedded.Options{Clock: clk, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("open embedded store in %s: %w", cfg.DataDir, err)
		}
		return &Store{Table: s, Feed: s}, nil
	case config.StoreDynamoDB:
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithHTTPClient(pooledHTTPClient()))
		if err != nil {
			return nil, fmt.Errorf("load AWS configuration: %w", err)
		}
		client := ddb.NewFromConfig(awsCfg)
		if err := ensureTable(ctx, client, cfg.Table, logger); err != nil {
			return nil, err
		}
		arn := cfg.Stream.ARN
		if arn == "" {
			if arn, err = dynamodb.StreamARN(ctx, client, cfg.Table); err != nil {
				return nil, err
			}
		}
		return &Store{
			Table: dynamodb.New(client, cfg.Table, dynamodb.Options{Clock: clk}),
			Feed: dynamodb.NewStreamFeed(dynamodbstreams.NewFromConfig(awsCfg), arn,
				dynamodb.StreamOptions{PollInterval: cfg.Stream.PollInterval, Logger: logger}),
		}, nil
	}
	return nil, fmt.Errorf("app: unknown store %q", cfg.Store)
}

// dynamoDBConnections is how many connections to DynamoDB a long-running process (the server
// on DynamoDB, the streamer) opens at most and keeps when idle. When streams open together each
// snapshot reads its area partitions in parallel, many calls at once. The SDK's defaults (10
// idle connections per host) close most connections after one call and open new ones, each a
// TLS handshake on AWS and a socket in TIME_WAIT (docs/performance.md §8). With the
// connections capped and kept, calls beyond the cap wait for a free one.
const dynamoDBConnections = 256

// pooledHTTPClient is the SDK's HTTP client with dynamoDBConnections. A Lambda function
// handles one request at a time and keeps the SDK's defaults.
func pooledHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns, t.MaxIdleConnsPerHost, t.MaxConnsPerHost = dynamoDBConnections, dynamoDBConnections, dynamoDBConnections
	})
}

func ensureTable(ctx context.Context, client *ddb.Client, table string, logger *slog.Logger) error {
	_, err := client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)})
	var missing *types.ResourceNotFoundException
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &missing):
		return fmt.Errorf("describe table %s: %w", table, err)
	}
	logger.Info("creating DynamoDB table", "table", table)
	return dynamodb.CreateTable(ctx, client, table)
}
