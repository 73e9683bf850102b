package dynamodb

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/roadevents/roadevents/shared/store"
)

// Scan reads every item of table, those past their TTL that DynamoDB has not removed yet
// included: for checking what is at rest (docs/privacy.md), never for serving a request.
func Scan(ctx context.Context, client *ddb.Client, table string) ([]store.Item, error) {
	var out []store.Item
	p := ddb.NewScanPaginator(client, &ddb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamodb: scan %s: %w", table, err)
		}
		for _, m := range page.Items {
			it, err := unmarshalItem(m)
			if err != nil {
				return nil, err
			}
			out = append(out, it)
		}
	}
	return out, nil
}
