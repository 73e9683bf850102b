package admin

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/verdict"
)

// InvalidateRequest is an operator's verdict on a publisher (docs/network.md §2).
type InvalidateRequest struct {
	OrgID       string
	Environment string
	// Since limits the verdict to the events created at or after it; zero: every active
	// event.
	Since  time.Time
	Reason string
}

// InvalidateEvents opens the store cfg names, invalidates the active events req names,
// records the verdict in the organisation's audit log, and closes the store. It returns how
// many events it invalidated.
func InvalidateEvents(ctx context.Context, cfg config.Config, req InvalidateRequest, logger *slog.Logger) (int, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if err := verdict.Check(req.OrgID, req.Environment, req.Reason); err != nil {
		return 0, fmt.Errorf("admin: %w", err)
	}
	var n int
	err := withStore(ctx, cfg, logger, func(table store.Table) error {
		// The command derives no event id from a client_event_id, so any key of the accepted
		// length will do: a random one spares the operator from configuring the server's.
		key := make([]byte, eventstore.MinIDKeyBytes)
		rand.Read(key)
		events, err := eventstore.New(table, eventstore.Options{IDKey: key, Logger: logger})
		if err != nil {
			return fmt.Errorf("build the events store: %w", err)
		}
		op := verdict.Operator{Events: events, Audit: audit.New(table, audit.Options{})}
		n, err = op.Invalidate(ctx, req.OrgID, req.Environment, req.Since, req.Reason)
		return err
	})
	return n, err
}

const invalidateUsage = `usage: roadevents invalidate -org ORG_ID -env live|sandbox -reason TEXT [-since RFC3339] [-data DIR]

An operator's verdict on a publisher (docs/network.md §2): invalidates the active events of
one organisation in one environment, those created at or after -since when given. Each event
becomes invalidated and subscribers get an "ended" delta; the organisation's audit log records
the verdict. Prints the number of events invalidated on stdout. Runs against the configured
store (ROADEVENTS_STORE, ROADEVENTS_DATA, ...); with the embedded store the server must not be
running on the same data folder.`

// Invalidate runs the `invalidate` command with args (the words after "invalidate") and
// returns the process's exit code. It writes only the number of events invalidated, and a
// newline, to stdout; everything else goes to stderr.
func Invalidate(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) int {
	return exitCode(invalidateCommand(ctx, cfg, args, stdout, stderr), stderr)
}

func invalidateCommand(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("roadevents invalidate", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprintln(stderr, invalidateUsage); fl.PrintDefaults() }
	var req InvalidateRequest
	var since string
	fl.StringVar(&req.OrgID, "org", "", "organisation id whose events are invalidated (required)")
	// No default: a verdict on the live network must be asked for by name.
	fl.StringVar(&req.Environment, "env", "", "environment: live or sandbox (required)")
	fl.StringVar(&req.Reason, "reason", "", fmt.Sprintf("why, kept in each event's history and the audit log, 1..%d characters (required)", verdict.MaxReasonLen))
	fl.StringVar(&since, "since", "", "only events created at or after this time, RFC 3339 (2026-11-24T08:00:00Z); default every active event")
	fl.StringVar(&cfg.DataDir, "data", cfg.DataDir, "data folder of the embedded store (env ROADEVENTS_DATA)")
	if err := parseFlags(fl, args, invalidateUsage); err != nil {
		return err
	}
	switch {
	case req.OrgID == "":
		return fmt.Errorf("%w: -org is required\n%s", ErrUsage, invalidateUsage)
	case req.Environment == "":
		return fmt.Errorf("%w: -env is required: %s or %s", ErrUsage, apikey.Live, apikey.Sandbox)
	case req.Reason == "":
		return fmt.Errorf("%w: -reason is required\n%s", ErrUsage, invalidateUsage)
	}
	if since != "" {
		t, err := time.Parse(time.RFC3339, since)
		if err != nil {
			return fmt.Errorf("%w: -since %q: want an RFC 3339 time such as 2026-11-24T08:00:00Z", ErrUsage, since)
		}
		if t.After(clock.System.Now()) {
			return fmt.Errorf("%w: -since %q is in the future: no event was created after it", ErrUsage, since)
		}
		req.Since = t
	}
	if err := verdict.Check(req.OrgID, req.Environment, req.Reason); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	n, err := InvalidateEvents(ctx, cfg, req, logger)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, n); err != nil {
		return fmt.Errorf("admin: write the count (%d events were invalidated): %w", n, err)
	}
	fmt.Fprintf(stderr, "invalidated %d active %s events of organisation %s\n", n, req.Environment, req.OrgID)
	return nil
}
