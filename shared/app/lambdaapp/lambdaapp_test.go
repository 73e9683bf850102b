package lambdaapp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/routetable"
)

// env is a fake environment.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// echoed is the answer of the stub group's /echo: what the handler received, padded past
// the size from which JSON answers are compressed (docs/api.md §10.1).
type echoed struct {
	Method        string              `json:"method"`
	Path          string              `json:"path"`
	Query         map[string][]string `json:"query"`
	Authorization []string            `json:"authorization"`
	Body          string              `json:"body"`
	Padding       string              `json:"padding"`
}

// stub is a group for the tests of the package: GET and POST /echo, and counters of the
// function's calls into the group.
type stub struct {
	mu                                  sync.Mutex
	settles, flushes, closes, scheduled int
}

func (s *stub) count(n *int) func(context.Context) error {
	return func(context.Context) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		*n++
		return nil
	}
}

func (s *stub) counts() (settles, flushes, closes, scheduled int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settles, s.flushes, s.closes, s.scheduled
}

// construct builds the stub group.
func (s *stub) construct(_ context.Context, b groupapi.Base) (*groupapi.Group, error) {
	echo := httpapi.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		return json.NewEncoder(w).Encode(echoed{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Authorization: r.Header.Values("Authorization"),
			Body: string(body), Padding: strings.Repeat("road ", 400),
		})
	})
	api := groupapi.NewAPI(b)
	api.Handle(
		httpapi.Route{Method: http.MethodGet, Path: "/echo", Summary: "Echo", Description: "Echo.", Handler: echo},
		httpapi.Route{Method: http.MethodPost, Path: "/echo", Summary: "Echo", Description: "Echo.", Handler: echo},
	)
	return &groupapi.Group{
		API: api, Settle: s.count(&s.settles), Flush: s.count(&s.flushes), Close: s.count(&s.closes),
		Scheduled: s.count(&s.scheduled),
	}, nil
}

// newFunction builds the stub group as the function of group name.
func newFunction(t *testing.T, name routetable.Group, s *stub, clk clock.Clock) *lambdaapp.Function {
	t.Helper()
	f, err := lambdaapp.New(context.Background(), name, s.construct, lambdaapp.Options{
		Getenv: env(map[string]string{"ROADEVENTS_DATA": t.TempDir()}),
		Clock:  clk,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

// docs/architecture.md §4 (usage on Lambda): usage counts are written by the first
// invocation, then by the first one UsageWriteInterval or more after the last write, and at
// shutdown; every invocation waits for the writes it started.
func TestUsageWrittenInBatches(t *testing.T) {
	t.Parallel()
	start := time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	s := &stub{}
	f := newFunction(t, routetable.GroupEvents, s, clk)

	steps := []struct {
		name        string
		at          time.Duration // since start
		wantFlushes int           // after the invocation
	}{
		{"first invocation writes", 0, 1},
		{"within the interval: kept", 5 * time.Second, 1},
		{"just before the interval: kept", lambdaapp.UsageWriteInterval - time.Millisecond, 1},
		{"at the interval: written", lambdaapp.UsageWriteInterval, 2},
		{"within the next interval: kept", lambdaapp.UsageWriteInterval + time.Second, 2},
		{"long after: written", time.Hour, 3},
	}
	for i, step := range steps {
		clk.Set(start.Add(step.at))
		rec := httptest.NewRecorder()
		f.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/echo", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d; want 200", step.name, rec.Code)
		}
		settles, flushes, _, _ := s.counts()
		if flushes != step.wantFlushes {
			t.Errorf("%s (+%v): %d usage writes; want %d", step.name, step.at, flushes, step.wantFlushes)
		}
		if settles != i+1 {
			t.Errorf("%s: the invocation's own writes were waited for %d times in %d invocations; want every time", step.name, settles, i+1)
		}
	}

	if err := f.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, flushes, closes, _ := s.counts(); flushes != 4 || closes != 1 {
		t.Errorf("after Shutdown: %d usage writes, %d closes; want the counts held written (4) and the store closed (1)", flushes, closes)
	}
}

// scheduledPayload is an EventBridge scheduled event as a schedule rule sends it.
const scheduledPayload = `{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event",
"source":"aws.events","account":"123456789012","time":"2040-04-01T00:10:00Z","region":"eu-west-1",
"resources":["arn:aws:events:eu-west-1:123456789012:rule/overage"],"detail":{}}`

func TestIsScheduledEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, payload string
		want          bool
	}{
		{"EventBridge schedule", scheduledPayload, true},
		{"HTTP API request", `{"version":"2.0","routeKey":"$default","rawPath":"/console/plans","requestContext":{"http":{"method":"GET"}}}`, false},
		{"load balancer request", `{"requestContext":{"elb":{"targetGroupArn":"arn"}},"httpMethod":"GET","path":"/"}`, false},
		{"another EventBridge event", `{"source":"aws.s3","detail-type":"Object Created"}`, false},
		{"not JSON", `nope`, false},
	} {
		if got := lambdaapp.IsScheduledEvent([]byte(tc.payload)); got != tc.want {
			t.Errorf("%s: IsScheduledEvent = %v; want %v", tc.name, got, tc.want)
		}
	}
}

// A scheduled event runs the group's job and nothing else; a function without a job, or an
// event of no front door, fails the invocation instead of being taken for a request.
func TestInvokeDispatches(t *testing.T) {
	t.Parallel()
	s := &stub{}
	f := newFunction(t, routetable.GroupBilling, s, clock.NewFake(time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)))
	if _, err := f.Invoke(context.Background(), []byte(scheduledPayload)); err != nil {
		t.Fatalf("Invoke(scheduled event) = %v", err)
	}
	if _, _, _, scheduled := s.counts(); scheduled != 1 {
		t.Errorf("scheduled job ran %d times; want 1", scheduled)
	}
	if _, err := f.Invoke(context.Background(), httpEvent(t, request{method: http.MethodGet, target: "/echo"})); err != nil {
		t.Fatalf("Invoke(HTTP API event) = %v", err)
	}
	if _, _, _, scheduled := s.counts(); scheduled != 1 {
		t.Errorf("scheduled job ran %d times after an HTTP event; want still 1", scheduled)
	}

	for name, payload := range map[string]string{
		"REST API event (payload 1.0)": `{"version":"1.0","resource":"/echo","path":"/echo","httpMethod":"GET","requestContext":{}}`,
		"not JSON":                     `nope`,
	} {
		if _, err := f.Invoke(context.Background(), []byte(payload)); !errors.Is(err, lambdaapp.ErrEvent) {
			t.Errorf("Invoke(%s) = %v; want ErrEvent", name, err)
		}
	}

	noJob := &stub{}
	construct := func(ctx context.Context, b groupapi.Base) (*groupapi.Group, error) {
		grp, err := noJob.construct(ctx, b)
		grp.Scheduled = nil
		return grp, err
	}
	g, err := lambdaapp.New(context.Background(), routetable.GroupMeta, construct, lambdaapp.Options{
		Getenv: env(map[string]string{"ROADEVENTS_DATA": t.TempDir()}), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), []byte(scheduledPayload)); !errors.Is(err, lambdaapp.ErrEvent) {
		t.Errorf("Invoke(scheduled event) of a function without a job = %v; want ErrEvent", err)
	}
	if _, err := g.Invoke(context.Background(), []byte(`{"Records":[{"eventSource":"aws:sqs","messageId":"m1","body":"{}"}]}`)); !errors.Is(err, lambdaapp.ErrEvent) {
		t.Errorf("Invoke(queue event) of a function without a queue handler = %v; want ErrEvent", err)
	}
}

// docs/webhooks.md §3, on AWS: the table's stream and the turns' queue invoke a function with
// "Records"; each batch goes to the group's handler of its source, and the answer names the
// records that failed, in the shape each event source reads.
func TestInvokeHandsRecords(t *testing.T) {
	t.Parallel()
	var streamed, queued []string
	construct := func(ctx context.Context, b groupapi.Base) (*groupapi.Group, error) {
		grp, err := (&stub{}).construct(ctx, b)
		grp.Stream = func(_ context.Context, ev events.DynamoDBEvent) events.DynamoDBEventResponse {
			for _, r := range ev.Records {
				streamed = append(streamed, r.EventName+" "+r.Change.Keys["pk"].String())
			}
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "7"}}}
		}
		grp.Queue = func(_ context.Context, ev events.SQSEvent) events.SQSEventResponse {
			for _, m := range ev.Records {
				queued = append(queued, m.MessageId+" "+m.Body)
			}
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "m2"}}}
		}
		return grp, err
	}
	f, err := lambdaapp.New(context.Background(), routetable.GroupEvents, construct, lambdaapp.Options{
		Getenv: env(map[string]string{"ROADEVENTS_DATA": t.TempDir()}), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Invoke(context.Background(), []byte(`{"Records":[{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb",
		"dynamodb":{"SequenceNumber":"7","Keys":{"pk":{"S":"event#ev_1"}}}}]}`))
	if err != nil || string(out) != `{"batchItemFailures":[{"itemIdentifier":"7"}]}` || !slices.Equal(streamed, []string{"INSERT event#ev_1"}) {
		t.Errorf("stream batch: %s, %v, handled %v", out, err, streamed)
	}
	out, err = f.Invoke(context.Background(), []byte(`{"Records":[{"eventSource":"aws:sqs","messageId":"m1","body":"a"},
		{"eventSource":"aws:sqs","messageId":"m2","body":"b"}]}`))
	if err != nil || string(out) != `{"batchItemFailures":[{"itemIdentifier":"m2"}]}` || !slices.Equal(queued, []string{"m1 a", "m2 b"}) {
		t.Errorf("queue batch: %s, %v, handled %v", out, err, queued)
	}
	if _, err := f.Invoke(context.Background(), []byte(`{"Records":[{"eventSource":"aws:s3"}]}`)); !errors.Is(err, lambdaapp.ErrEvent) {
		t.Errorf("records of another source: %v; want ErrEvent", err)
	}
}

// fakeSecrets is Secrets Manager with fixed values.
type fakeSecrets map[string]string

func (f fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	v, ok := f[aws.ToString(in.SecretId)]
	if !ok {
		return nil, errors.New("ResourceNotFoundException")
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v)}, nil
}

const hex32 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// The configuration a group is built with comes from the environment overlaid with the
// secrets config.SecretsEnv names; a secret that is no JSON object of ROADEVENTS_* or Stripe
// variables stops the function without quoting it.
func TestNewReadsSecrets(t *testing.T) {
	t.Parallel()
	secrets := fakeSecrets{
		"ids":     `{"ROADEVENTS_EVENT_ID_KEY":"` + hex32 + `"}`,
		"stripe":  `{"STRIPE_SECRET_KEY":"sk_test_x","STRIPE_WEBHOOK_SECRET":"whsec_x"}`,
		"notjson": `hunter2 ` + hex32,
		"foreign": `{"AWS_REGION":"eu-west-1"}`,
	}
	tests := []struct {
		name       string
		group      routetable.Group
		secrets    string
		wantErr    error
		wantConfig func(config.Config) bool
	}{
		{name: "event id key from a secret", group: routetable.GroupEvents, secrets: "ids",
			wantConfig: func(c config.Config) bool { return len(c.EventIDKey) == 32 }},
		{name: "Stripe keys from a secret", group: routetable.GroupBilling, secrets: "ids, stripe",
			wantConfig: func(c config.Config) bool { return c.Billing.StripeSecretKey == "sk_test_x" }},
		{name: "secret not JSON", group: routetable.GroupEvents, secrets: "ids,notjson", wantErr: lambdaapp.ErrSecret},
		{name: "secret sets a foreign variable", group: routetable.GroupEvents, secrets: "foreign", wantErr: lambdaapp.ErrSecret},
		{name: "stream group", group: routetable.GroupStream, secrets: "ids", wantErr: lambdaapp.ErrGroup},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got config.Config
			construct := func(ctx context.Context, b groupapi.Base) (*groupapi.Group, error) {
				got = b.Config
				return (&stub{}).construct(ctx, b)
			}
			_, err := lambdaapp.New(context.Background(), tc.group, construct, lambdaapp.Options{
				Getenv:  env(map[string]string{config.SecretsEnv: tc.secrets, "ROADEVENTS_DATA": t.TempDir()}),
				Secrets: secrets, Logger: slog.New(slog.DiscardHandler),
			})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("New: error %v; want %v", err, tc.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), hex32) {
					t.Errorf("New error %q quotes a secret", err)
				}
				return
			}
			if !tc.wantConfig(got) {
				t.Errorf("the group was built without the secret's variables")
			}
		})
	}
}
