package admin_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/admin"
	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// embeddedConfig is the configuration of `go run .` on a fresh data folder of the test.
func embeddedConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	return cfg
}

// authenticate opens the embedded store in dir, as the server would, and authenticates raw.
func authenticate(t *testing.T, dir, raw string) (apikey.Principal, error) {
	t.Helper()
	st, err := embedded.Open(filepath.Join(dir, config.EmbeddedStoreFile), embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("open the store after issuing: %v", err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v; want nil", err)
		}
	}()
	keys := apikey.New(st, apikey.Options{})
	p, err := keys.Authenticate(t.Context(), raw)
	if werr := keys.Wait(t.Context()); werr != nil {
		t.Errorf("Wait = %v; want nil", werr)
	}
	return p, err
}

func TestMainIssuesKeyThatAuthenticates(t *testing.T) {
	t.Parallel()
	for _, env := range []string{apikey.Live, apikey.Sandbox} {
		t.Run(env, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := admin.Main(t.Context(), cfg,
				[]string{"issue", "-org", "org_load", "-env", env, "-label", "load test", "-data", dir}, &stdout, &stderr)
			if code != admin.ExitOK {
				t.Fatalf("Main = %d; want %d (stderr %q)", code, admin.ExitOK, stderr.String())
			}
			raw, rest, _ := strings.Cut(stdout.String(), "\n")
			if rest != "" {
				t.Errorf("stdout holds more than the key: %q", stdout.String())
			}
			if !apikey.WellFormed(raw) {
				t.Fatalf("stdout = %q; want a well-formed raw key", raw)
			}
			if strings.Contains(stderr.String(), raw) {
				t.Errorf("stderr %q holds the raw key; want it on stdout only", stderr.String())
			}
			p, err := authenticate(t, dir, raw)
			if err != nil {
				t.Fatalf("Authenticate(issued key) = %v; want nil", err)
			}
			if p.OrgID != "org_load" || p.Environment != env {
				t.Errorf("principal = %+v; want org org_load, environment %s", p, env)
			}
		})
	}
}

func TestMainDefaultsToSandbox(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	var stdout bytes.Buffer
	if code := admin.Main(t.Context(), cfg, []string{"issue", "-org", "org_1", "-label", "ci"}, &stdout, io.Discard); code != admin.ExitOK {
		t.Fatalf("Main = %d; want %d", code, admin.ExitOK)
	}
	p, err := authenticate(t, cfg.DataDir, strings.TrimSpace(stdout.String()))
	if err != nil {
		t.Fatalf("Authenticate = %v; want nil", err)
	}
	if p.Environment != apikey.Sandbox {
		t.Errorf("environment = %q; want %q (docs/api.md §2.9 CreateKeyPayload default)", p.Environment, apikey.Sandbox)
	}
}

func TestMainRefusesBadCommandLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no subcommand", nil, "missing subcommand"},
		{"unknown subcommand", []string{"revoke"}, `unknown subcommand "revoke"`},
		{"no org", []string{"issue", "-label", "x"}, "-org is required"},
		{"no label", []string{"issue", "-org", "org_1"}, "-label is required"},
		{"bad environment", []string{"issue", "-org", "org_1", "-label", "x", "-env", "prod"}, `-env "prod"`},
		{"stray argument", []string{"issue", "-org", "org_1", "-label", "x", "extra"}, `unexpected argument "extra"`},
		{"unknown flag", []string{"issue", "-org", "org_1", "-label", "x", "-cap", "1"}, "-cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := embeddedConfig(t)
			var stdout, stderr bytes.Buffer
			if code := admin.Main(t.Context(), cfg, tt.args, &stdout, &stderr); code != admin.ExitUsage {
				t.Errorf("Main(%q) = %d; want %d", tt.args, code, admin.ExitUsage)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q; want nothing", stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q; want it to contain %q", stderr.String(), tt.want)
			}
		})
	}
}

func TestIssueKeyRefusesStoreHeldByServer(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	// The running server holds the file; bbolt's lock is per open file, so holding it in
	// this process is what another process would see.
	st, err := embedded.Open(filepath.Join(cfg.DataDir, config.EmbeddedStoreFile), embedded.Options{SweepInterval: -1})
	if err != nil {
		t.Fatalf("open the store as the server: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })

	_, _, err = admin.IssueKey(t.Context(), cfg, apikey.IssueRequest{OrgID: "org_1", Environment: apikey.Live, Label: "x"}, slog.New(slog.DiscardHandler))
	if !errors.Is(err, admin.ErrStoreLocked) {
		t.Fatalf("IssueKey with the store held = %v; want ErrStoreLocked", err)
	}

	var stdout, stderr bytes.Buffer
	code := admin.Main(t.Context(), cfg, []string{"issue", "-org", "org_1", "-label", "x"}, &stdout, &stderr)
	if code != admin.ExitError {
		t.Errorf("Main with the store held = %d; want %d", code, admin.ExitError)
	}
	if !strings.Contains(stderr.String(), "server running") || !strings.Contains(stderr.String(), cfg.DataDir) {
		t.Errorf("stderr = %q; want it to name the data folder and the running server", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q; want nothing", stdout.String())
	}
}

func TestIssueKeyHonoursLiveCap(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	req := apikey.IssueRequest{OrgID: "org_1", Environment: apikey.Live, Label: "first", LiveKeyCap: 1}
	ctx := context.Background()
	if _, _, err := admin.IssueKey(ctx, cfg, req, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("first live key = %v; want nil", err)
	}
	req.Label = "second"
	if _, _, err := admin.IssueKey(ctx, cfg, req, slog.New(slog.DiscardHandler)); !errors.Is(err, apikey.ErrLiveKeyCap) {
		t.Errorf("second live key under cap 1 = %v; want ErrLiveKeyCap", err)
	}
	// Without a cap the operator may issue past the plan's (docs/api.md §5 API key rule 3 is the
	// console's).
	req.LiveKeyCap = 0
	if _, _, err := admin.IssueKey(ctx, cfg, req, slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("uncapped live key = %v; want nil", err)
	}
}
