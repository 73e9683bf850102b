package app_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
)

// env is a fake environment.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// embeddedLambda builds group's Lambda on an embedded store in a fresh folder.
func embeddedLambda(t *testing.T, group routetable.Group, clk clock.Clock) *app.Lambda {
	t.Helper()
	l, err := app.NewLambda(context.Background(), group, app.LambdaOptions{
		Getenv: env(map[string]string{"ROADEVENTS_STORE": "embedded", "ROADEVENTS_DATA": t.TempDir()}),
		Clock:  clk,
	})
	if err != nil {
		t.Fatalf("NewLambda(%s): %v", group, err)
	}
	t.Cleanup(func() {
		if err := l.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// TestLambdaWritesUsageBeforeReturning: an instance may be frozen or dropped right after a
// response, so what the invocation counted, and the key's last_used_at, must already be in
// the table when ServeHTTP returns (metering package doc). The Lambda's meter has no
// background flush, so only ServeHTTP can have written them.
func TestLambdaWritesUsageBeforeReturning(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC))
	l := embeddedLambda(t, routetable.GroupEvents, clk)
	table := app.LambdaTable(l)
	keys := apikey.New(table, apikey.Options{Clock: clk})
	raw, key, err := keys.Issue(context.Background(), apikey.IssueRequest{OrgID: "org_lambda", Environment: apikey.Sandbox, Label: "test"})
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}

	const reads = 3
	for i := range reads {
		req := httptest.NewRequest(http.MethodGet, "/v1/events?lat=52.37&lon=4.89&radius_m=1000", nil)
		req.Header.Set("Authorization", "Bearer "+raw)
		rec := httptest.NewRecorder()
		l.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("read %d: status %d; want 200 (body %s)", i, rec.Code, rec.Body)
		}
	}

	// A second meter on the same table reads what the first one wrote.
	reader := metering.New(table, metering.Options{Clock: clk, FlushInterval: -1})
	days, err := reader.Read(context.Background(), "org_lambda", apikey.Sandbox, clk.Now(), clk.Now())
	if err != nil {
		t.Fatalf("Read usage: %v", err)
	}
	var got int64
	for _, d := range days {
		got += d.Reads
	}
	if got != reads {
		t.Errorf("reads in the table after %d invocations = %d; want %d", reads, got, reads)
	}
	k, err := keys.Get(context.Background(), "org_lambda", key.KeyID)
	if err != nil {
		t.Fatalf("Get key: %v", err)
	}
	if k.LastUsedAt.IsZero() {
		t.Errorf("last_used_at after an authenticated invocation is unset; want it written")
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

func TestNewLambdaConfiguration(t *testing.T) {
	t.Parallel()
	secrets := fakeSecrets{
		"ids":     `{"ROADEVENTS_EVENT_ID_KEY":"` + hex32 + `"}`,
		"console": `{"ROADEVENTS_AUTH_HASH_KEY":"` + hex32 + `","ROADEVENTS_SEAL_KEY":"` + hex32 + `"}`,
		"notjson": `hunter2`,
		"foreign": `{"AWS_REGION":"eu-west-1"}`,
		"stripe":  `{"STRIPE_SECRET_KEY":"sk_test_x","STRIPE_WEBHOOK_SECRET":"whsec_x"}`,
	}
	tests := []struct {
		name    string
		group   routetable.Group
		vars    map[string]string
		wantErr error // nil: builds, and GET /health answers on the meta group
	}{
		{name: "keys from secrets", group: routetable.GroupMeta,
			vars: map[string]string{config.SecretsEnv: "ids, console"}},
		{name: "Stripe keys from secrets", group: routetable.GroupMeta,
			vars: map[string]string{config.SecretsEnv: "ids, console, stripe"}},
		{name: "keys from the environment", group: routetable.GroupMeta,
			vars: map[string]string{"ROADEVENTS_EVENT_ID_KEY": hex32, "ROADEVENTS_AUTH_HASH_KEY": hex32, "ROADEVENTS_KMS_KEY_ID": "alias/x"}},
		{name: "no event id key", group: routetable.GroupMeta,
			vars: map[string]string{config.SecretsEnv: "console"}, wantErr: app.ErrLambdaKeys},
		{name: "no sealing key", group: routetable.GroupMeta,
			vars: map[string]string{"ROADEVENTS_EVENT_ID_KEY": hex32, "ROADEVENTS_AUTH_HASH_KEY": hex32}, wantErr: app.ErrLambdaKeys},
		{name: "secret not JSON", group: routetable.GroupMeta,
			vars: map[string]string{config.SecretsEnv: "ids,notjson"}, wantErr: app.ErrLambdaSecret},
		{name: "secret sets a foreign variable", group: routetable.GroupMeta,
			vars: map[string]string{config.SecretsEnv: "foreign"}, wantErr: app.ErrLambdaSecret},
		{name: "stream group", group: routetable.GroupStream,
			vars: map[string]string{config.SecretsEnv: "ids, console"}, wantErr: app.ErrLambdaGroup},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{
				"ROADEVENTS_STORE": "dynamodb", "ROADEVENTS_TABLE": "roadevents-test",
				"ROADEVENTS_MAILER": "ses", "ROADEVENTS_DATA": t.TempDir(),
				"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
			}
			for k, v := range tc.vars {
				vars[k] = v
			}
			l, err := app.NewLambda(context.Background(), tc.group, app.LambdaOptions{
				Getenv: env(vars), Secrets: secrets,
			})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("NewLambda: error %v; want %v", err, tc.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), hex32) {
					t.Errorf("NewLambda error %q quotes a secret", err)
				}
				return
			}
			rec := httptest.NewRecorder()
			l.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
			if rec.Code != http.StatusOK {
				t.Errorf("GET /health: status %d; want 200", rec.Code)
			}
		})
	}
}
