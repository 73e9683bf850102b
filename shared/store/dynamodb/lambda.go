package dynamodb

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/roadevents/roadevents/shared/store"
)

// ChangeFromLambda converts a record of a DynamoDB stream event, as Lambda hands a function
// the table's stream, into the change the feed would have read from the stream itself.
func ChangeFromLambda(r events.DynamoDBEventRecord) (store.Change, error) {
	rec := streamtypes.Record{
		EventID:   aws.String(r.EventID),
		EventName: streamtypes.OperationType(r.EventName),
		Dynamodb: &streamtypes.StreamRecord{
			SequenceNumber:              aws.String(r.Change.SequenceNumber),
			ApproximateCreationDateTime: aws.Time(r.Change.ApproximateCreationDateTime.Time),
		},
	}
	if r.UserIdentity != nil {
		rec.UserIdentity = &streamtypes.Identity{Type: aws.String(r.UserIdentity.Type), PrincipalId: aws.String(r.UserIdentity.PrincipalID)}
	}
	var err error
	for _, image := range []struct {
		from map[string]events.DynamoDBAttributeValue
		to   *map[string]streamtypes.AttributeValue
	}{{r.Change.Keys, &rec.Dynamodb.Keys}, {r.Change.OldImage, &rec.Dynamodb.OldImage}, {r.Change.NewImage, &rec.Dynamodb.NewImage}} {
		if *image.to, err = lambdaImage(image.from); err != nil {
			return store.Change{}, fmt.Errorf("record %s: %w", r.EventID, err)
		}
	}
	return changeFromRecord(rec)
}

func lambdaImage(m map[string]events.DynamoDBAttributeValue) (map[string]streamtypes.AttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]streamtypes.AttributeValue, len(m))
	for name, av := range m {
		v, err := lambdaValue(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// lambdaValue maps the kinds of value the store writes (unmarshalStreamValue reads them).
func lambdaValue(av events.DynamoDBAttributeValue) (streamtypes.AttributeValue, error) {
	switch av.DataType() {
	case events.DataTypeString:
		return &streamtypes.AttributeValueMemberS{Value: av.String()}, nil
	case events.DataTypeNumber:
		return &streamtypes.AttributeValueMemberN{Value: av.Number()}, nil
	case events.DataTypeBoolean:
		return &streamtypes.AttributeValueMemberBOOL{Value: av.Boolean()}, nil
	case events.DataTypeBinary:
		return &streamtypes.AttributeValueMemberB{Value: av.Binary()}, nil
	case events.DataTypeList:
		var l []streamtypes.AttributeValue
		for _, e := range av.List() {
			v, err := lambdaValue(e)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return &streamtypes.AttributeValueMemberL{Value: l}, nil
	}
	return nil, fmt.Errorf("unsupported attribute value of type %v", av.DataType())
}
