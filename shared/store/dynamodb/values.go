package dynamodb

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/roadevents/roadevents/shared/store"
)

// The value mapping (store.Item): string S, int64 and float64 N written with store.FormatNumber
// and read with store.ParseNumber (so a number reads back exactly as the embedded adapter
// returns it), bool BOOL, []byte B, []string L of S, which keeps order and duplicates (an SS
// would lose both).

// marshalItem turns a normalized item into DynamoDB attribute values.
func marshalItem(it store.Item) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(it))
	for name, v := range it {
		av, err := marshalValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = av
	}
	return out, nil
}

// marshalValue turns one canonical value (store.NormalizeValue) into an attribute value.
func marshalValue(v any) (types.AttributeValue, error) {
	switch v := v.(type) {
	case string:
		return &types.AttributeValueMemberS{Value: v}, nil
	case int64, int, float64:
		return &types.AttributeValueMemberN{Value: store.FormatNumber(v)}, nil
	case bool:
		return &types.AttributeValueMemberBOOL{Value: v}, nil
	case []byte:
		if v == nil {
			v = []byte{} // the SDK would send a nil B as no value at all, which DynamoDB refuses
		}
		return &types.AttributeValueMemberB{Value: v}, nil
	case []string:
		l := make([]types.AttributeValue, len(v))
		for i, s := range v {
			l[i] = &types.AttributeValueMemberS{Value: s}
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	}
	return nil, fmt.Errorf("%w: unsupported value type %T", store.ErrInvalid, v)
}

// marshalKey returns the key attributes of k.
func marshalKey(k store.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		store.AttrPK: &types.AttributeValueMemberS{Value: k.PK},
		store.AttrSK: &types.AttributeValueMemberS{Value: k.SK},
	}
}

// unmarshalItem reads an item the table returned; nil for a nil map.
func unmarshalItem(m map[string]types.AttributeValue) (store.Item, error) {
	if m == nil {
		return nil, nil
	}
	out := make(store.Item, len(m))
	for name, av := range m {
		v, err := unmarshalValue(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func unmarshalValue(av types.AttributeValue) (any, error) {
	switch av := av.(type) {
	case *types.AttributeValueMemberS:
		return av.Value, nil
	case *types.AttributeValueMemberN:
		return store.ParseNumber(av.Value)
	case *types.AttributeValueMemberBOOL:
		return av.Value, nil
	case *types.AttributeValueMemberB:
		return av.Value, nil
	case *types.AttributeValueMemberL:
		l := make([]string, len(av.Value))
		for i, e := range av.Value {
			s, ok := e.(*types.AttributeValueMemberS)
			if !ok {
				return nil, fmt.Errorf("unsupported list element %T", e)
			}
			l[i] = s.Value
		}
		return l, nil
	}
	return nil, fmt.Errorf("unsupported attribute value %T", av)
}

// unmarshalStreamItem reads an image of a stream record. DynamoDB Streams has its own copy of
// the AttributeValue union, so this mirrors unmarshalItem.
func unmarshalStreamItem(m map[string]streamtypes.AttributeValue) (store.Item, error) {
	if m == nil {
		return nil, nil
	}
	out := make(store.Item, len(m))
	for name, av := range m {
		v, err := unmarshalStreamValue(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func unmarshalStreamValue(av streamtypes.AttributeValue) (any, error) {
	switch av := av.(type) {
	case *streamtypes.AttributeValueMemberS:
		return av.Value, nil
	case *streamtypes.AttributeValueMemberN:
		return store.ParseNumber(av.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return av.Value, nil
	case *streamtypes.AttributeValueMemberB:
		return av.Value, nil
	case *streamtypes.AttributeValueMemberL:
		l := make([]string, len(av.Value))
		for i, e := range av.Value {
			s, ok := e.(*streamtypes.AttributeValueMemberS)
			if !ok {
				return nil, fmt.Errorf("unsupported list element %T", e)
			}
			l[i] = s.Value
		}
		return l, nil
	}
	return nil, fmt.Errorf("unsupported attribute value %T", av)
}
