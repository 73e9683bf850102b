package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/roadevents/roadevents/shared/store"
)

// createTimeout bounds the wait for a new table to become active.
const createTimeout = 5 * time.Minute

// CreateTable creates table with the schema the adapter expects: pk (S, HASH) and sk (S,
// RANGE), on-demand capacity, a stream of NEW_AND_OLD_IMAGES (the change feed needs both
// images: a REMOVE's old item, a MODIFY's before and after), and TTL on the ttl attribute. It
// waits until the table is active. For tests and local runs; production tables come from the
// deployment's infrastructure code.
func CreateTable(ctx context.Context, client *ddb.Client, table string) error {
	_, err := client.CreateTable(ctx, &ddb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(store.AttrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(store.AttrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(store.AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(store.AttrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	})
	if err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	waiter := ddb.NewTableExistsWaiter(client, func(o *ddb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := waiter.Wait(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)}, createTimeout); err != nil {
		return fmt.Errorf("create table %s: wait until active: %w", table, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &ddb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(store.AttrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("create table %s: enable TTL: %w", table, err)
	}
	return nil
}

// StreamARN returns the ARN of table's current stream, for NewStreamFeed.
func StreamARN(ctx context.Context, client *ddb.Client, table string) (string, error) {
	out, err := client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", table, err)
	}
	if out.Table == nil || out.Table.LatestStreamArn == nil {
		return "", fmt.Errorf("table %s: %w", table, ErrNoStream)
	}
	return *out.Table.LatestStreamArn, nil
}

// ErrNoStream is returned by StreamARN for a table without a stream.
var ErrNoStream = errors.New("dynamodb: table has no stream")
