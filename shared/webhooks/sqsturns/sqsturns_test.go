package sqsturns_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
	"github.com/roadevents/roadevents/shared/webhooks"
	"github.com/roadevents/roadevents/shared/webhooks/sqsturns"
)

// fakeSQS answers SendMessage as SQS does over its JSON protocol, and keeps what it was sent.
type fakeSQS struct {
	mu   sync.Mutex
	sent []map[string]any
}

func (f *fakeSQS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessage" {
		http.Error(w, `{"__type":"InvalidAction"}`, http.StatusBadRequest)
		return
	}
	var in map[string]any
	json.Unmarshal(body, &in)
	f.mu.Lock()
	f.sent = append(f.sent, in)
	f.mu.Unlock()
	sum := md5.Sum([]byte(in["MessageBody"].(string)))
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	json.NewEncoder(w).Encode(map[string]string{"MessageId": "m-1", "MD5OfMessageBody": hex.EncodeToString(sum[:])})
}

// docs/webhooks.md §3, on AWS: a turn is a message of the queue, delayed until it is due,
// 15 minutes at most (SQS's limit), rounded up to the second; its body names the delivery.
func TestSenderDelaysUntilDue(t *testing.T) {
	fake := &fakeSQS{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	api := sqs.New(sqs.Options{Region: "eu-central-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")})
	now := time.Date(2040, 1, 1, 12, 0, 0, 0, time.UTC)
	s := &sqsturns.Sender{API: api, QueueURL: "https://sqs.eu-central-1.amazonaws.com/123456789012/turns", Clock: clock.NewFake(now)}
	for _, tc := range []struct {
		at   time.Time
		want float64
	}{
		{now.Add(-time.Minute), 0},
		{now.Add(30*time.Second + time.Millisecond), 31},
		{now.Add(time.Hour), 900},
	} {
		turn := webhooks.Turn{Org: "org_a", Endpoint: "we_1", Delivery: "dlv_1", At: tc.at}
		if err := s.Send(context.Background(), turn); err != nil {
			t.Fatal(err)
		}
		got := fake.sent[len(fake.sent)-1]
		var back webhooks.Turn
		if err := json.Unmarshal([]byte(got["MessageBody"].(string)), &back); err != nil || !back.At.Equal(turn.At) || back.Delivery != "dlv_1" {
			t.Errorf("message body %v: %v; want the turn", got["MessageBody"], err)
		}
		if delay, _ := got["DelaySeconds"].(float64); delay != tc.want || got["QueueUrl"] != s.QueueURL {
			t.Errorf("turn due in %s: DelaySeconds %v to %v; want %v to the queue", tc.at.Sub(now), got["DelaySeconds"], got["QueueUrl"], tc.want)
		}
	}
}

// docs/webhooks.md §3, on AWS: a batch of turns is taken message by message; only the messages
// that failed are reported, so that only they come back, and a message that came back before
// is taken as retried (its delivery's current turn is sent again).
func TestHandleReportsOnlyFailures(t *testing.T) {
	tab := tables.Embedded(t)
	sealer, err := seal.NewAESGCM(bytes.Repeat([]byte{7}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	endpoints := webhooks.NewEndpoints(tab, audit.New(tab, audit.Options{Clock: tab.Clock}), sealer, webhooks.EndpointsOptions{Clock: tab.Clock})
	sent := &recorded{}
	queue := webhooks.NewQueueSending(tab, tab.Clock, sent)
	d := webhooks.NewDispatcher(queue, endpoints, webhooks.DispatcherOptions{Clock: tab.Clock})
	ep, _, err := endpoints.Create(context.Background(), "org_a", webhooks.Actor{}, webhooks.EndpointDraft{
		URL: aws.String("https://hooks.example/in"), Kinds: []string{webhooks.KindEnded}})
	if err != nil {
		t.Fatal(err)
	}
	dl := webhooks.Delivery{ID: webhooks.DeliveryID(tab.Clock.Now(), "s", ep.ID), Org: "org_a", Endpoint: ep.ID, Kind: webhooks.KindEnded, Body: []byte(`{}`)}
	if err := queue.Enqueue(context.Background(), dl); err != nil {
		t.Fatal(err)
	}
	old, _ := json.Marshal(webhooks.Turn{Org: "org_a", Endpoint: ep.ID, Delivery: dl.ID, At: tab.Clock.Now().Add(-time.Hour)})
	sent.turns = nil
	res := sqsturns.Handle(context.Background(), d, events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "bad", Body: `{"org_id":`},
		{MessageId: "stale-retried", Body: string(old), Attributes: map[string]string{"ApproximateReceiveCount": "2"}},
	}})
	if len(res.BatchItemFailures) != 1 || res.BatchItemFailures[0].ItemIdentifier != "bad" {
		t.Errorf("failures %+v; want the malformed message only", res.BatchItemFailures)
	}
	if len(sent.turns) != 1 || sent.turns[0].Delivery != dl.ID {
		t.Errorf("turns sent %+v; want the delivery's current turn again, for the retried stale message", sent.turns)
	}
}

type recorded struct{ turns []webhooks.Turn }

func (r *recorded) Send(_ context.Context, t webhooks.Turn) error {
	r.turns = append(r.turns, t)
	return nil
}
