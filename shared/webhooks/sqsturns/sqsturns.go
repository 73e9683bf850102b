// Package sqsturns carries webhook deliveries' turns on AWS (docs/webhooks.md §3): each turn is
// an SQS message, delayed until the delivery is due (15 minutes at most, SQS's limit; a turn
// due later comes back early and is sent on), which invokes the dispatcher function. A message
// whose handling fails comes back after the queue's visibility timeout, and after five
// failures goes to the dead-letter queue.
package sqsturns

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// MaxDelay is the longest SQS holds a message before it can be received.
const MaxDelay = 15 * time.Minute

// API is the part of the SQS client a Sender uses.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Sender sends turns to one queue.
type Sender struct {
	API      API
	QueueURL string
	Clock    clock.Clock
}

var _ webhooks.Sender = (*Sender)(nil)

// Send sends t, delayed until it is due or by MaxDelay.
func (s *Sender) Send(ctx context.Context, t webhooks.Turn) error {
	body, err := json.Marshal(t)
	if err != nil {
		return err
	}
	delay := min(max(t.At.Sub(s.Clock.Now()), 0), MaxDelay)
	_, err = s.API.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(s.QueueURL),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: int32((delay + time.Second - 1) / time.Second),
	})
	if err != nil {
		return fmt.Errorf("sqsturns: send: %w", err)
	}
	return nil
}

// Handle gives each turn of ev to d and reports the messages whose handling failed, so that
// only they come back (the event source's ReportBatchItemFailures). A message that came back
// before is handled as retried (webhooks.Dispatcher.Turn).
func Handle(ctx context.Context, d *webhooks.Dispatcher, ev events.SQSEvent) events.SQSEventResponse {
	var out events.SQSEventResponse
	for _, m := range ev.Records {
		var t webhooks.Turn
		err := json.Unmarshal([]byte(m.Body), &t)
		if err == nil {
			received, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
			err = d.Turn(ctx, t, received > 1)
		}
		if err != nil {
			d.Logger().Warn("webhooks: a turn failed; it comes back after the queue's visibility timeout", "message", m.MessageId, "err", err)
			out.BatchItemFailures = append(out.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return out
}
