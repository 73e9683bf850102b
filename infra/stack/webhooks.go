package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Webhook delivery sizing (docs/webhooks.md §3, docs/operations.md §5).
const (
	// WebhookProducerTimeoutSeconds bounds a batch of the table's stream: a batch of
	// WebhookStreamBatch changes, each a few reads and writes.
	WebhookProducerTimeoutSeconds = 60
	WebhookStreamBatch            = 100
	// WebhookDispatcherTimeoutSeconds bounds a batch of WebhookTurnsBatch turns, sent one
	// after the other, 10 s each at most (webhooks.SendTimeout).
	WebhookDispatcherTimeoutSeconds = 120
	WebhookTurnsBatch               = 5
	// WebhookDispatcherConcurrency bounds the dispatchers at once, so that a burst of turns
	// does not take every instance of the console's functions' account share.
	WebhookDispatcherConcurrency = 10
	// WebhookTurnsMaxReceives is how often a turn is handed to the dispatcher before it goes to
	// the dead-letter queue; each try waits for the visibility timeout, six times the
	// dispatcher's timeout as AWS advises.
	WebhookTurnsMaxReceives = 5
	WebhookQueueEnv         = "ROADEVENTS_WEBHOOK_QUEUE_URL"
)

// addWebhookQueues creates the queue of the deliveries' turns, with its dead-letter queue,
// and the dead-letter queue of the stream records the producer could not handle for a day.
// Both are encrypted with SQS's own key and refuse requests without TLS.
func (s *Stack) addWebhookQueues(st awscdk.Stack) {
	s.WebhookTurnsDeadLetters = awssqs.NewQueue(st, jsii.String("WebhookTurnsDeadLetters"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	accept(s.WebhookTurnsDeadLetters, "AwsSolutions-SQS3", "the dead-letter queue of the webhook turns: it has none of its own")
	accept(s.WebhookTurnsDeadLetters, "Serverless-SQSRedrivePolicy", "the dead-letter queue of the webhook turns: it has none of its own")
	s.WebhookTurns = awssqs.NewQueue(st, jsii.String("WebhookTurns"), &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(6 * WebhookDispatcherTimeoutSeconds)),
		// A delivery is retried for a day (docs/webhooks.md §3); a turn waits 15 minutes at most.
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(4)),
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: s.WebhookTurnsDeadLetters, MaxReceiveCount: jsii.Number(WebhookTurnsMaxReceives)},
	})
	s.WebhookStreamFailures = awssqs.NewQueue(st, jsii.String("WebhookStreamFailures"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	for _, rule := range []string{"AwsSolutions-SQS3", "Serverless-SQSRedrivePolicy"} {
		accept(s.WebhookStreamFailures, rule, "the on-failure destination of the webhook producer's stream records: a dead-letter queue itself")
	}
}

// addWebhookProducer creates the function the table's stream invokes with its changes, which
// make the webhook deliveries (docs/webhooks.md §3): the events function's code and role (the
// producer reads the events, the endpoints and the alert rules, and writes deliveries), with a
// timeout of its own. A shard's records come in order, one batch at a time; a batch whose
// record fails is handed again from that record for up to a day (the stream keeps a day), then
// the record's place goes to WebhookStreamFailures.
func (s *Stack) addWebhookProducer(st awscdk.Stack, p Props, role awsiam.IRole, code awslambda.Code, env map[string]*string, removal awscdk.RemovalPolicy) {
	s.WebhookProducer = jobFunction{id: "WebhookProducer", description: "makes webhook deliveries from the table's stream (the events group's producer)",
		memoryMB: 512, timeoutSeconds: WebhookProducerTimeoutSeconds}.add(st, p, role, code, env, removal)
	accept(s.WebhookProducer, "Serverless-LambdaDLQ", "invoked by the table's stream: a failed record is handed again, then sent to "+
		"the mapping's on-failure queue (WebhookStreamFailures), not to a function dead-letter queue")
	// The stream's read rights on the stream alone: not the managed grant's ListStreams on
	// every table.
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"),
		Resources: jsii.Strings(*s.Table.TableStreamArn()),
	}))
	s.WebhookProducerStream = awslambda.NewEventSourceMapping(st, jsii.String("WebhookProducerStream"), &awslambda.EventSourceMappingProps{
		Target:                  s.WebhookProducer,
		EventSourceArn:          s.Table.TableStreamArn(),
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(WebhookStreamBatch),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(1)),
		ParallelizationFactor:   jsii.Number(1),
		ReportBatchItemFailures: jsii.Bool(true),
		RetryAttempts:           jsii.Number(10000),
		MaxRecordAge:            awscdk.Duration_Days(jsii.Number(1)),
		OnFailure:               awslambdaeventsources.NewSqsDlq(s.WebhookStreamFailures),
	})
}

// addWebhookDispatcher creates the function the turns' queue invokes with the deliveries that
// are due (docs/webhooks.md §3): the console-orgs function's code and role (it opens the
// endpoints' sealed secrets and writes the attempts), with a timeout of its own.
func (s *Stack) addWebhookDispatcher(st awscdk.Stack, p Props, role awsiam.IRole, code awslambda.Code, env map[string]*string, removal awscdk.RemovalPolicy) {
	s.WebhookDispatcher = jobFunction{id: "WebhookDispatcher", description: "sends the webhook deliveries whose turn came (the console-orgs group's dispatcher)",
		memoryMB: 256, timeoutSeconds: WebhookDispatcherTimeoutSeconds, concurrency: WebhookDispatcherConcurrency}.add(st, p, role, code, env, removal)
	s.WebhookDispatcher.AddEventSource(awslambdaeventsources.NewSqsEventSource(s.WebhookTurns, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(WebhookTurnsBatch),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(WebhookDispatcherConcurrency),
	}))
	// After the mapping exists, so that the finding on it is accepted too.
	for _, rule := range []string{"Serverless-LambdaDLQ", "Serverless-LambdaEventSourceMappingDestination"} {
		accept(s.WebhookDispatcher, rule, "invoked by the turns' queue: a failed turn comes back after the visibility timeout, then goes "+
			"to the queue's own dead-letter queue (WebhookTurnsDeadLetters); a mapping from SQS has no on-failure destination")
	}
}

// webhookAlarms raise when a turn or a stream record was given up: a delivery that will not
// be sent, or changes that made no deliveries (docs/operations.md §6).
func (s *Stack) webhookAlarms(st awscdk.Stack, action awscloudwatch.IAlarmAction) {
	five := awscdk.Duration_Minutes(jsii.Number(5))
	for id, q := range map[string]awssqs.Queue{"WebhookTurnsDeadLettered": s.WebhookTurnsDeadLetters, "WebhookStreamRecordsFailed": s.WebhookStreamFailures} {
		alarm(st, id, q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}), 1, 1, action)
	}
	alarm(st, "WebhookProducerErrors", s.WebhookProducer.MetricErrors(&awscloudwatch.MetricOptions{Period: five}), 1, 1, action)
	alarm(st, "WebhookDispatcherErrors", s.WebhookDispatcher.MetricErrors(&awscloudwatch.MetricOptions{Period: five}), 1, 1, action)
}
