package app

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
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
)

// lambdaFinishTimeout bounds the writes done after each invocation (usage counts, last_used_at).
const lambdaFinishTimeout = 3 * time.Second

// Errors of NewLambda.
var (
	// ErrLambdaGroup is returned for a group that no Lambda serves (routetable.Lambdas).
	ErrLambdaGroup = errors.New("app: not a Lambda route group")
	// ErrLambdaKeys is returned on DynamoDB when a shared secret key is missing: every
	// instance would make up its own random key, and ids, codes and sessions made by one
	// instance would not be recognised by the next (config.Config.EventIDKey).
	ErrLambdaKeys = errors.New("app: a Lambda on DynamoDB needs ROADEVENTS_EVENT_ID_KEY, ROADEVENTS_AUTH_HASH_KEY " +
		"and ROADEVENTS_SEAL_KEY or ROADEVENTS_KMS_KEY_ID (from the environment or " + config.SecretsEnv + ")")
	// ErrLambdaSecret is returned for a secret whose value is not a JSON object of
	// ROADEVENTS_* variables.
	ErrLambdaSecret = errors.New("app: bad secret")
)

// SecretsAPI is the part of the Secrets Manager client NewLambda uses.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ SecretsAPI = (*secretsmanager.Client)(nil)

// LambdaOptions configure NewLambda.
type LambdaOptions struct {
	// Build identifies the build in GET /health.
	Build string
	// Getenv reads the environment: config.Getenv in main, a map in tests.
	Getenv func(string) string
	// Logger receives the service's logs; JSON on stderr (CloudWatch) at the configured level
	// when nil.
	Logger *slog.Logger
	// Clock is clock.System when nil.
	Clock clock.Clock
	// Secrets reads the secrets named by config.SecretsEnv; a client from the standard AWS
	// configuration chain when nil and the variable is set.
	Secrets SecretsAPI
}

// Lambda is one route group's handler as a Lambda function serves it: the group's routes
// from New, around which every invocation ends with the writes an instance cannot leave for
// later, because the execution environment may be frozen, or dropped, as soon as the
// response is returned (metering package doc): the usage counted during the invocation and
// the API key's last_used_at. It is what functions/<group>/main.go wraps with
// aws-lambda-go-api-proxy.
type Lambda struct {
	api    *API
	group  routetable.Group
	table  store.Table
	meter  *metering.Meter
	keys   *apikey.Keys
	logger *slog.Logger
}

var _ http.Handler = (*Lambda)(nil)

// NewLambda builds group's handler from the environment, with the same constructors as
// main.go: configuration (config.FromEnv over the environment and the secrets of
// config.SecretsEnv), store, meter, keys, mailer and sealer. On DynamoDB it opens the table
// without describing or creating it (the stack owns it, and the function has no right to)
// and without its stream (only streamer/ reads it). The embedded store
// (ROADEVENTS_STORE=embedded with ROADEVENTS_DATA) is for running a function on one machine,
// as the packaging test does; its keys come from the data folder as for `go run .`.
func NewLambda(ctx context.Context, group routetable.Group, opts LambdaOptions) (*Lambda, error) {
	if !group.IsLambda() {
		return nil, fmt.Errorf("%w: %q", ErrLambdaGroup, group)
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
	table, err := openLambdaTable(ctx, &cfg, opts.Clock, logger)
	if err != nil {
		return nil, err
	}
	mailer, err := OpenMailer(ctx, cfg, opts.Clock, logger)
	if err != nil {
		table.Close()
		return nil, err
	}
	sealer, err := OpenSealer(ctx, cfg)
	if err != nil {
		table.Close()
		return nil, err
	}
	keys := apikey.New(table, apikey.Options{Clock: opts.Clock, Logger: logger})
	// No background flush: a frozen instance's timer would not fire. ServeHTTP flushes.
	meter := metering.New(table, metering.Options{Clock: opts.Clock, Logger: logger, FlushInterval: -1})
	api, err := New(Deps{Config: cfg, Build: opts.Build, Table: table, Clock: opts.Clock, Logger: logger,
		Keys: keys, Meter: meter, Mailer: mailer, Sealer: sealer}, group)
	if err != nil {
		table.Close()
		return nil, err
	}
	return &Lambda{api: api, group: group, table: table, meter: meter, keys: keys, logger: logger}, nil
}

// openLambdaTable opens the configured table and makes sure cfg holds the shared keys.
func openLambdaTable(ctx context.Context, cfg *config.Config, clk clock.Clock, logger *slog.Logger) (store.Table, error) {
	if cfg.Store == config.StoreEmbedded {
		if err := cfg.EnsureEventIDKey(); err != nil {
			return nil, err
		}
		if err := cfg.EnsureConsoleKeys(); err != nil {
			return nil, err
		}
		st, err := OpenStore(ctx, *cfg, clk, logger)
		if err != nil {
			return nil, err
		}
		return st.Table, nil
	}
	if len(cfg.EventIDKey) == 0 || len(cfg.Console.HashKey) == 0 ||
		(len(cfg.Console.SealKey) == 0 && cfg.Console.KMSKeyID == "") {
		return nil, ErrLambdaKeys
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return dynamodb.New(ddb.NewFromConfig(awsCfg), cfg.Table, dynamodb.Options{Clock: clk}), nil
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
			return nil, fmt.Errorf("%w %s: want a JSON object of string values", ErrLambdaSecret, name)
		}
		for k, v := range values {
			if (!strings.HasPrefix(k, "ROADEVENTS_") && !stripeSecrets[k]) || k == config.SecretsEnv {
				return nil, fmt.Errorf("%w %s: %q is not a ROADEVENTS_ variable or a Stripe secret", ErrLambdaSecret, name, k)
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

// ServeHTTP serves one request, then writes what the request counted and the key's
// last_used_at before returning, so that both are in the table when the proxy hands the
// response to the Lambda runtime. A failed write is logged and kept in memory for the next
// invocation (metering.Meter.Flush); it never changes the response.
func (l *Lambda) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.api.Handler().ServeHTTP(w, r)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), lambdaFinishTimeout)
	defer cancel()
	l.finish(ctx)
}

// finish writes the usage counts and the last_used_at updates left in memory.
func (l *Lambda) finish(ctx context.Context) {
	if err := l.meter.Flush(ctx); err != nil {
		l.logger.Warn("flush usage counts; kept for the next invocation", "error", err.Error())
	}
	if err := l.keys.Wait(ctx); err != nil {
		l.logger.Warn("finish last_used_at writes", "error", err.Error())
	}
}

// Routes returns the routes this function serves.
func (l *Lambda) Routes() []httpapi.Route { return l.api.Routes() }

// Close writes what is left and closes the table.
func (l *Lambda) Close(ctx context.Context) error {
	l.finish(ctx)
	if err := l.meter.Close(ctx); err != nil {
		return fmt.Errorf("close meter: %w", err)
	}
	return l.table.Close()
}

// StartLambda is the whole of functions/<group>'s main: it builds group's handler from the
// environment and hands it to the Lambda runtime, which never returns. It returns only when
// the function cannot start, after reporting why to the Runtime API (reportInitError); the
// caller then exits with a failure status. build identifies the build in GET /health.
func StartLambda(group routetable.Group, build string) error {
	ctx := context.Background()
	l, err := NewLambda(ctx, group, LambdaOptions{Build: build, Getenv: config.Getenv})
	if err != nil {
		reportInitError(ctx, config.Getenv, err)
		return err
	}
	lambda.Start(l.Handler())
	return nil
}

// Handler is the function's Lambda handler: HTTP API requests (payload format 2.0) through
// aws-lambda-go-api-proxy, and for the billing group the hourly overage job as well
// (BillingHandler).
func (l *Lambda) Handler() lambda.Handler {
	if l.group == routetable.GroupBilling {
		return l.BillingHandler()
	}
	return lambda.NewHandler(httpadapter.NewV2(l).ProxyWithContext)
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
