// Package lambdaapp runs one route group as a Lambda function (docs/architecture.md §4): it
// reads the configuration from the environment and the secrets it names, builds the group with
// the group's constructor (the only group the function links), and serves the events the
// function's front doors send (events.go), in the shape each expects.
//
// # Writes an instance must not hold
//
// An instance may be frozen as soon as it answers, and dropped while frozen, so what an
// invocation leaves in memory may never be written. Before an invocation returns, the function
// waits for the writes the invocation started (a key's last_used_at, groupapi.Group.Settle).
// Usage counts are written in batches (groupapi.Group.Flush): by the first invocation, then by
// the first one at least UsageWriteInterval after the last write, and when Lambda stops the
// instance, which it announces with SIGTERM (Start). An instance dropped without SIGTERM loses
// the counts of the invocations since its last write, at most UsageWriteInterval's worth.
package lambdaapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/routetable"
)

// UsageWriteInterval is the least time between two writes of the usage counts by one
// instance (see the package doc): one table write per instance every 10 s at most, instead of
// one per request, for at most 10 s of counts lost when an instance dies without SIGTERM.
const UsageWriteInterval = 10 * time.Second

// finishTimeout bounds the writes done after an invocation.
const finishTimeout = 3 * time.Second

// shutdownTimeout bounds the writes done on SIGTERM: Lambda kills the process 500 ms after it,
// for a function whose only extension is the internal one SIGTERM needs.
const shutdownTimeout = 400 * time.Millisecond

// Errors of New and Invoke.
var (
	// ErrGroup is returned for a group that no Lambda serves (routetable.Lambdas).
	ErrGroup = errors.New("lambdaapp: not a Lambda route group")
	// ErrSecret is returned for a secret whose value is not a JSON object of ROADEVENTS_*
	// variables.
	ErrSecret = errors.New("lambdaapp: bad secret")
	// ErrEvent is returned by Invoke for an event the function does not take.
	ErrEvent = errors.New("lambdaapp: unsupported event")
)

// SecretsAPI is the part of the Secrets Manager client New uses.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ SecretsAPI = (*secretsmanager.Client)(nil)

// Options configure New.
type Options struct {
	// Build identifies the build in GET /health.
	Build string
	// Getenv reads the environment: config.Getenv in main, a map in tests.
	Getenv func(string) string
	// Logger receives the service's logs; JSON on stderr (CloudWatch) at the configured level
	// when nil.
	Logger *slog.Logger
	// Clock is clock.System when nil; it also times the batches of usage writes.
	Clock clock.Clock
	// Secrets reads the secrets named by config.SecretsEnv; a client from the standard AWS
	// configuration chain when nil and the variable is set.
	Secrets SecretsAPI
}

// Function is one route group as its Lambda function serves it: the group's routes, around
// which every invocation ends with the writes of the package doc. It is both the HTTP handler
// the event adapters call and the function's lambda.Handler (Invoke).
type Function struct {
	name    routetable.Group
	group   *groupapi.Group
	handler http.Handler
	clock   clock.Clock
	logger  *slog.Logger

	mu sync.Mutex
	// flushed is when the usage counts were last written; zero before the first write.
	flushed time.Time

	adapters
}

var (
	_ http.Handler   = (*Function)(nil)
	_ lambda.Handler = (*Function)(nil)
)

// New builds the function of group name with construct, from the environment: configuration
// (config.FromEnv over the environment and the secrets of config.SecretsEnv), clock and logger.
func New(ctx context.Context, name routetable.Group, construct groupapi.Constructor, opts Options) (*Function, error) {
	if !name.IsLambda() {
		return nil, fmt.Errorf("%w: %q", ErrGroup, name)
	}
	if opts.Getenv == nil {
		opts.Getenv = config.Getenv
	}
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	getenv, err := withSecrets(ctx, opts.Getenv, opts.Secrets)
	if err != nil {
		return nil, err
	}
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	}
	g, err := construct(ctx, groupapi.Base{Config: cfg, Build: opts.Build, Clock: opts.Clock, Logger: logger})
	if err != nil {
		return nil, err
	}
	f := &Function{name: name, group: g, handler: g.API.Handler(), clock: opts.Clock, logger: logger}
	f.adapters = newAdapters(f)
	return f, nil
}

// stripeSecrets are the variables outside ROADEVENTS_* a secret may set: the Stripe keys of
// the billing group (config.Billing, docs/api.md §10.4), which keep Stripe's own names.
var stripeSecrets = map[string]bool{"STRIPE_SECRET_KEY": true, "STRIPE_WEBHOOK_SECRET": true}

// withSecrets returns getenv overlaid with the variables of the secrets config.SecretsEnv names.
func withSecrets(ctx context.Context, getenv func(string) string, api SecretsAPI) (func(string) string, error) {
	names := strings.FieldsFunc(getenv(config.SecretsEnv), func(r rune) bool { return r == ',' || r == ' ' })
	if len(names) == 0 {
		return getenv, nil
	}
	if api == nil {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("load AWS configuration: %w", err)
		}
		api = secretsmanager.NewFromConfig(awsCfg)
	}
	vars := map[string]string{}
	for _, name := range names {
		out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(name)})
		if err != nil {
			return nil, fmt.Errorf("read secret %s: %w", name, err)
		}
		var values map[string]string
		if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &values); err != nil {
			// The value itself is never quoted: it is a secret.
			return nil, fmt.Errorf("%w %s: want a JSON object of string values", ErrSecret, name)
		}
		for k, v := range values {
			if (!strings.HasPrefix(k, "ROADEVENTS_") && !stripeSecrets[k]) || k == config.SecretsEnv {
				return nil, fmt.Errorf("%w %s: %q is not a ROADEVENTS_ variable or a Stripe secret", ErrSecret, name, k)
			}
			vars[k] = v
		}
	}
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return getenv(k)
	}, nil
}

// ServeHTTP serves one request, then, before returning, waits for the writes it started and
// writes the usage counts when a batch is due (see the package doc). A failed write is logged
// and its counts kept in memory for the next one; it never changes the response.
func (f *Function) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.handler.ServeHTTP(w, r)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), finishTimeout)
	defer cancel()
	f.finish(ctx)
}

// finish ends an invocation: the writes it started, and the usage counts when due.
func (f *Function) finish(ctx context.Context) {
	if settle := f.group.Settle; settle != nil {
		if err := settle(ctx); err != nil {
			f.logger.Warn("finish the invocation's writes", "error", err.Error())
		}
	}
	if flush := f.group.Flush; flush != nil && f.flushDue() {
		if err := flush(ctx); err != nil {
			f.logger.Warn("write usage counts; kept for the next write", "error", err.Error())
		}
	}
}

// flushDue reports whether the usage counts are due to be written, and if so counts this
// write as the last one: the first invocation writes, then one at least UsageWriteInterval
// after the last write. A clock set back makes the next invocation write.
func (f *Function) flushDue() bool {
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.flushed.IsZero() && !now.Before(f.flushed) && now.Sub(f.flushed) < UsageWriteInterval {
		return false
	}
	f.flushed = now
	return true
}

// Shutdown writes what the invocations left in memory and closes the group's store; Start
// calls it on SIGTERM, before Lambda reclaims the instance. Its failure is logged.
func (f *Function) Shutdown(ctx context.Context) error {
	var errs []error
	for _, step := range []func(context.Context) error{f.group.Settle, f.group.Flush, f.group.Close} {
		if step != nil {
			errs = append(errs, step(ctx))
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		f.logger.Error("shut down: what the instance held may not be written", "error", err.Error())
	}
	return err
}

// Routes returns the routes this function serves.
func (f *Function) Routes() []httpapi.Route { return f.group.API.Routes() }

// Start is the whole of functions/<group>'s main: it builds the function of group name with
// construct from the environment and hands it to the Lambda runtime, asking for SIGTERM before
// the instance is reclaimed (lambda.WithEnableSIGTERM, which registers an internal extension),
// on which it writes what the instance holds (Shutdown) and returns. It returns an error when
// the function cannot start, after reporting why to the Runtime API (reportInitError), or
// when the writes at shutdown failed (logged); the caller then exits with a failure status.
// build identifies the build in GET /health.
func Start(name routetable.Group, build string, construct groupapi.Constructor) error {
	ctx := context.Background()
	f, err := New(ctx, name, construct, Options{Build: build, Getenv: config.Getenv})
	if err != nil {
		reportInitError(ctx, config.Getenv, err)
		return err
	}
	terminated := make(chan struct{})
	go lambda.StartWithOptions(f, lambda.WithEnableSIGTERM(func() { close(terminated) }))
	<-terminated
	ctx, cancel := context.WithTimeout(ctx, shutdownTimeout)
	defer cancel()
	return f.Shutdown(ctx)
}

// RuntimeAPIEnv is the variable through which Lambda tells a custom runtime where its
// Runtime API listens (host:port).
const RuntimeAPIEnv = "AWS_LAMBDA_RUNTIME_API"

// reportInitError tells the Lambda Runtime API that the function could not start
// (POST /2018-06-01/runtime/init/error), so the failed start shows in the invocation's
// error with its reason rather than as a bare exit, and writes err to stderr (CloudWatch).
// The caller exits afterwards. Without RuntimeAPIEnv (not on Lambda) it only writes.
func reportInitError(ctx context.Context, getenv func(string) string, err error) {
	fmt.Fprintln(os.Stderr, err)
	api := getenv(RuntimeAPIEnv)
	if api == "" {
		return
	}
	body, _ := json.Marshal(map[string]any{"errorMessage": err.Error(), "errorType": "InitError"})
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+api+"/2018-06-01/runtime/init/error", bytes.NewReader(body))
	if rerr != nil {
		fmt.Fprintln(os.Stderr, "report init error:", rerr)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Lambda-Runtime-Function-Error-Type", "Runtime.InitError")
	resp, rerr := http.DefaultClient.Do(req)
	if rerr != nil {
		fmt.Fprintln(os.Stderr, "report init error:", rerr)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
