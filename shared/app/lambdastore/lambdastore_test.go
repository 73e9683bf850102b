package lambdastore_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app/consoleauthgroup"
	"github.com/roadevents/roadevents/shared/app/eventsgroup"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/app/lambdastore"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// env is a fake environment.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// docs/architecture.md §4 (usage on Lambda), on the table: the events function writes what its
// invocations counted in batches, by the first invocation, then once UsageWriteInterval has
// passed, and at shutdown, so that an instance killed without SIGTERM loses at most that
// interval's counts; a key's last_used_at is in the table when the invocation that used the
// key returns.
func TestUsageBatchedOnTheTable(t *testing.T) {
	t.Parallel()
	start := time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	data := t.TempDir()
	var deps tenants.Deps
	f, err := lambdaapp.New(context.Background(), routetable.GroupEvents,
		lambdastore.Opener(routetable.GroupEvents, func(d tenants.Deps) (*groupapi.Group, error) {
			deps = d
			return eventsgroup.New(d)
		}),
		lambdaapp.Options{
			Getenv: env(map[string]string{"ROADEVENTS_STORE": "embedded", "ROADEVENTS_DATA": data}),
			Clock:  clk, Logger: slog.New(slog.DiscardHandler),
		})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	raw, key, err := deps.Keys.Issue(context.Background(), apikey.IssueRequest{OrgID: "org_lambda", Environment: apikey.Sandbox, Label: "test"})
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	readsInTable := func() int64 {
		t.Helper()
		days, err := metering.New(deps.Table, metering.Options{Clock: clk, FlushInterval: -1}).
			Read(context.Background(), "org_lambda", apikey.Sandbox, start, start)
		if err != nil {
			t.Fatalf("read usage: %v", err)
		}
		var n int64
		for _, d := range days {
			n += d.Reads
		}
		return n
	}

	for i, step := range []struct {
		at        time.Duration
		wantReads int64 // in the table after the invocation
	}{
		{0, 1},
		{2 * time.Second, 1},
		{lambdaapp.UsageWriteInterval + 2*time.Second, 3},
		{lambdaapp.UsageWriteInterval + 3*time.Second, 3},
	} {
		clk.Set(start.Add(step.at))
		req := httptest.NewRequest(http.MethodGet, "/v1/events?lat=52.37&lon=4.89&radius_m=1000", nil)
		req.Header.Set("Authorization", "Bearer "+raw)
		rec := httptest.NewRecorder()
		f.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("read %d: status %d; want 200 (body %s)", i, rec.Code, rec.Body)
		}
		if got := readsInTable(); got != step.wantReads {
			t.Errorf("after read %d (+%v): %d reads in the table; want %d", i, step.at, got, step.wantReads)
		}
		if i == 0 {
			k, err := deps.Keys.Get(context.Background(), "org_lambda", key.KeyID)
			if err != nil {
				t.Fatalf("Get key: %v", err)
			}
			if k.LastUsedAt.IsZero() {
				t.Errorf("last_used_at after the first authenticated invocation is unset; want it written")
			}
		}
	}

	// Shutdown writes the read held and releases the embedded store's file.
	if err := f.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	st, err := embedded.Open(filepath.Join(data, config.EmbeddedStoreFile), embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("reopen the store after Shutdown: %v", err)
	}
	defer st.Close()
	deps.Table = st
	if got := readsInTable(); got != 4 {
		t.Errorf("after Shutdown: %d reads in the table; want all 4", got)
	}
}

const hex32 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// On DynamoDB every instance must share the keys that make ids, codes and sessions: a function
// missing one does not start (ErrKeys) rather than make up its own. It contacts nothing while
// it starts, so these run without AWS.
func TestKeysRequiredOnDynamoDB(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		vars    map[string]string
		wantErr error
	}{
		{"every key, sealing by KMS", map[string]string{"ROADEVENTS_EVENT_ID_KEY": hex32, "ROADEVENTS_AUTH_HASH_KEY": hex32, "ROADEVENTS_KMS_KEY_ID": "alias/x"}, nil},
		{"every key, sealing key", map[string]string{"ROADEVENTS_EVENT_ID_KEY": hex32, "ROADEVENTS_AUTH_HASH_KEY": hex32, "ROADEVENTS_SEAL_KEY": hex32}, nil},
		{"no event id key, which console-auth is not granted", map[string]string{"ROADEVENTS_AUTH_HASH_KEY": hex32, "ROADEVENTS_SEAL_KEY": hex32}, nil},
		{"no hash key", map[string]string{"ROADEVENTS_EVENT_ID_KEY": hex32, "ROADEVENTS_SEAL_KEY": hex32}, lambdastore.ErrKeys},
		{"no sealing key", map[string]string{"ROADEVENTS_EVENT_ID_KEY": hex32, "ROADEVENTS_AUTH_HASH_KEY": hex32}, lambdastore.ErrKeys},
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
			f, err := lambdaapp.New(context.Background(), routetable.GroupConsoleAuth, lambdastore.Opener(routetable.GroupConsoleAuth, consoleauthgroup.New),
				lambdaapp.Options{Getenv: env(vars), Logger: slog.New(slog.DiscardHandler)})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("New: error %v; want %v", err, tc.wantErr)
			}
			if err == nil && len(f.Routes()) != len(routetable.GroupConsoleAuth.Routes()) {
				t.Errorf("the function serves %d routes; want the group's %d", len(f.Routes()), len(routetable.GroupConsoleAuth.Routes()))
			}
		})
	}
}
