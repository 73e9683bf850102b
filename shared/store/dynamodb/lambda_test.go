package dynamodb_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
)

// A record of the table's stream as Lambda hands it to a function reads as the change the
// stream reader makes of it: key, both images with every kind of value the store writes, the
// position padded to compare as a number, and a TTL removal marked as an expiry.
func TestChangeFromLambda(t *testing.T) {
	payload := `{"Records":[{
	  "eventID":"e1","eventName":"MODIFY","eventSource":"aws:dynamodb",
	  "dynamodb":{"ApproximateCreationDateTime":2208513600,"SequenceNumber":"4421584500000000017450439091",
	    "Keys":{"pk":{"S":"event#ev_1"},"sk":{"S":"event"}},
	    "OldImage":{"pk":{"S":"event#ev_1"},"sk":{"S":"event"},"n":{"N":"3"},"f":{"N":"0.25"},"ok":{"BOOL":false}},
	    "NewImage":{"pk":{"S":"event#ev_1"},"sk":{"S":"event"},"n":{"N":"4"},"f":{"N":"0.5"},"ok":{"BOOL":true},
	      "b":{"B":"AQI="},"l":{"L":[{"S":"accident"},{"S":"roadworks"}]}},
	    "StreamViewType":"NEW_AND_OLD_IMAGES"}},
	 {"eventID":"e2","eventName":"REMOVE","eventSource":"aws:dynamodb",
	  "userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},
	  "dynamodb":{"ApproximateCreationDateTime":2208513660,"SequenceNumber":"4421584500000000017450439092",
	    "Keys":{"pk":{"S":"area#x"},"sk":{"S":"y"}},"OldImage":{"pk":{"S":"area#x"},"sk":{"S":"y"}}}}]}`
	var ev events.DynamoDBEvent
	if err := json.Unmarshal([]byte(payload), &ev); err != nil {
		t.Fatal(err)
	}
	mod, err := dynamodb.ChangeFromLambda(ev.Records[0])
	if err != nil {
		t.Fatal(err)
	}
	want := store.Change{
		Seq: "000000000000" + "4421584500000000017450439091", Kind: store.ChangeModify, Key: store.Key{PK: "event#ev_1", SK: "event"},
		Old: store.Item{"pk": "event#ev_1", "sk": "event", "n": int64(3), "f": 0.25, "ok": false},
		New: store.Item{"pk": "event#ev_1", "sk": "event", "n": int64(4), "f": 0.5, "ok": true, "b": []byte{1, 2}, "l": []string{"accident", "roadworks"}},
		At:  time.Unix(2208513600, 0).UTC(),
	}
	if !reflect.DeepEqual(mod, want) {
		t.Errorf("change\n%+v\nwant\n%+v", mod, want)
	}
	rm, err := dynamodb.ChangeFromLambda(ev.Records[1])
	if err != nil || rm.Kind != store.ChangeRemove || !rm.Expired || rm.New != nil || rm.Old.Key() != (store.Key{PK: "area#x", SK: "y"}) {
		t.Errorf("TTL removal %+v, %v; want an expired REMOVE with its old image", rm, err)
	}
	ev.Records[1].Change.NewImage = map[string]events.DynamoDBAttributeValue{"ns": events.NewNumberSetAttribute([]string{"1"})}
	if _, err := dynamodb.ChangeFromLambda(ev.Records[1]); err == nil {
		t.Error("a number set, which the store never writes, was read")
	}
}
