package stack_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/infra/stack"
	"github.com/roadevents/roadevents/shared/routetable"
)

// docs/webhooks.md §3, on AWS: the table's stream invokes the producer (the events code and
// role) in order, from the stream's start, with failed records handed again for a day and then
// kept in a queue of their own; the turns' queue, encrypted and TLS-only, invokes the dispatcher
// (the console-orgs code and role) and sends a turn that failed five times to its dead-letter
// queue; the groups that send turns, and only they, know the queue and may send to it; alarms
// watch both dead-letter queues.
func TestWebhookDelivery(t *testing.T) {
	s := synth(t)[dev]
	fns := s.resources("AWS::Lambda::Function")
	producer := props(fns[s.logicalID(s.main.WebhookProducer)])
	dispatcher := props(fns[s.logicalID(s.main.WebhookDispatcher)])
	events := props(fns[s.logicalID(s.main.Functions[routetable.GroupEvents])])
	orgs := props(fns[s.logicalID(s.main.Functions[routetable.GroupConsoleOrgs])])
	if jsonOf(producer["Role"]) != jsonOf(events["Role"]) || jsonOf(producer["Code"]) != jsonOf(events["Code"]) {
		t.Errorf("producer role %v code %v; want the events function's", producer["Role"], producer["Code"])
	}
	if jsonOf(dispatcher["Role"]) != jsonOf(orgs["Role"]) || jsonOf(dispatcher["Code"]) != jsonOf(orgs["Code"]) {
		t.Errorf("dispatcher role %v code %v; want the console-orgs function's", dispatcher["Role"], dispatcher["Code"])
	}
	if producer["Timeout"] != float64(stack.WebhookProducerTimeoutSeconds) || dispatcher["Timeout"] != float64(stack.WebhookDispatcherTimeoutSeconds) {
		t.Errorf("timeouts %v and %v", producer["Timeout"], dispatcher["Timeout"])
	}
	for _, f := range []map[string]any{producer, dispatcher} {
		if strings.Contains(jsonOf(f["Environment"]), "ALLOW_PRIVATE") {
			t.Error("a webhook function may reach private addresses; on AWS it must not (docs/security.md §6)")
		}
	}

	queues := s.resources("AWS::SQS::Queue")
	turns := props(queues[s.logicalID(s.main.WebhookTurns)])
	dead := s.logicalID(s.main.WebhookTurnsDeadLetters)
	redrive := turns["RedrivePolicy"].(map[string]any)
	if ref(redrive["deadLetterTargetArn"]) != dead || redrive["maxReceiveCount"] != float64(stack.WebhookTurnsMaxReceives) {
		t.Errorf("turns' redrive %v; want %s after %d receives", jsonOf(redrive), dead, stack.WebhookTurnsMaxReceives)
	}
	if turns["VisibilityTimeout"] != float64(6*stack.WebhookDispatcherTimeoutSeconds) {
		t.Errorf("turns' visibility timeout %v; want six times the dispatcher's timeout", turns["VisibilityTimeout"])
	}
	for id, q := range queues {
		if props(q)["SqsManagedSseEnabled"] != true {
			t.Errorf("queue %s is not encrypted", id)
		}
	}
	for id, policy := range s.resources("AWS::SQS::QueuePolicy") {
		if !strings.Contains(jsonOf(policy), `"aws:SecureTransport":"false"`) {
			t.Errorf("queue policy %s does not refuse requests without TLS", id)
		}
	}

	mappings := s.resources("AWS::Lambda::EventSourceMapping")
	stream := props(mappings[s.logicalID(s.main.WebhookProducerStream)])
	if stream == nil || ref(stream["FunctionName"]) != s.logicalID(s.main.WebhookProducer) || !strings.Contains(jsonOf(stream["EventSourceArn"]), "StreamArn") {
		t.Fatalf("stream mapping %v; want the table's stream to the producer", jsonOf(stream))
	}
	if stream["StartingPosition"] != "TRIM_HORIZON" || stream["ParallelizationFactor"] != float64(1) ||
		!slices.Contains(asList(stream["FunctionResponseTypes"]), any("ReportBatchItemFailures")) || stream["MaximumRecordAgeInSeconds"] != float64(86400) {
		t.Errorf("stream mapping %s; want from the start, in order, reporting failed records, retried for a day", jsonOf(stream))
	}
	if !strings.Contains(jsonOf(stream["DestinationConfig"]), s.logicalID(s.main.WebhookStreamFailures)) {
		t.Errorf("stream mapping's failures go to %s; want WebhookStreamFailures", jsonOf(stream["DestinationConfig"]))
	}
	var fromTurns int
	for _, m := range mappings {
		p := props(m)
		if ref(p["EventSourceArn"]) == s.logicalID(s.main.WebhookTurns) {
			fromTurns++
			if ref(p["FunctionName"]) != s.logicalID(s.main.WebhookDispatcher) || !slices.Contains(asList(p["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
				t.Errorf("turns' mapping %s; want the dispatcher, reporting failed turns", jsonOf(p))
			}
		}
	}
	if fromTurns != 1 {
		t.Errorf("%d mappings read the turns' queue; want 1", fromTurns)
	}

	for _, g := range routetable.Lambdas {
		p := props(fns[s.logicalID(s.main.Functions[g])])
		knows := strings.Contains(jsonOf(p["Environment"]), stack.WebhookQueueEnv)
		sends := false
		for _, st := range s.of(s.logicalID(s.main.Functions[g].Role())) {
			if slices.Contains(st.actions(), "sqs:SendMessage") && ref(st.m["Resource"]) == s.logicalID(s.main.WebhookTurns) {
				sends = true
			}
		}
		if want := g.Grants().SendsTurns; knows != want || sends != want {
			t.Errorf("%s knows the turns' queue: %v, may send to it: %v; want %v", g, knows, sends, want)
		}
	}
	alarms := jsonOf(s.resources("AWS::CloudWatch::Alarm"))
	for _, q := range []string{dead, s.logicalID(s.main.WebhookStreamFailures)} {
		if !strings.Contains(alarms, q) {
			t.Errorf("no alarm watches %s", q)
		}
	}
}
