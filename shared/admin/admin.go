// Package admin holds the operator commands of the main binary (Commands): acts an operator
// needs before (or without) the console, run against the configured store while the server is
// stopped.
//
//   - `roadevents apikey issue` issues an API key (docs/api.md §5, API key rules) without the
//     console, so that a fresh deployment, a load test or an end-to-end script can call /v1 before
//     the console exists;
//   - `roadevents invalidate` is an operator's verdict on a publisher (docs/network.md §2): it
//     invalidates the organisation's active events in one environment.
package admin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/store"
)

// Errors of the operator commands.
var (
	// ErrStoreLocked is returned when the embedded store's file is held by another process,
	// in practice the server running on the same data folder: bbolt admits one process per
	// file, so the server must be stopped first.
	ErrStoreLocked = errors.New("admin: the data folder is in use by another process")
	// ErrUsage is returned for a command line the command does not accept.
	ErrUsage = errors.New("admin: usage")
)

// Commands are the operator commands by name, the binary's first argument; each takes the
// words after its name and returns the process's exit code.
var Commands = map[string]func(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) int{
	"apikey":     Main,
	"invalidate": Invalidate,
}

// LockProbeTimeout is how long the commands wait for the embedded store's file lock before
// saying the server holds it. The embedded store itself waits several seconds (it must not
// give up on a file a previous run is still closing); an operator at a prompt wants the
// answer at once.
const LockProbeTimeout = 300 * time.Millisecond

// Exit codes of Main, as flag and the Unix convention use them.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// IssueKey opens the store cfg names, issues one API key with req and closes the store. It
// returns the raw key, which exists nowhere else (docs/api.md §5 API key rule 1), and its record.
//
// req.LiveKeyCap is passed through as given: an operator acting outside the console is not
// bound by a plan unless they ask for it.
func IssueKey(ctx context.Context, cfg config.Config, req apikey.IssueRequest, logger *slog.Logger) (string, apikey.Key, error) {
	if logger == nil {
		logger = slog.Default()
	}
	var raw string
	var key apikey.Key
	err := withStore(ctx, cfg, logger, func(table store.Table) error {
		var err error
		raw, key, err = apikey.New(table, apikey.Options{Logger: logger}).Issue(ctx, req)
		return err
	})
	return raw, key, err
}

// withStore opens the store cfg names, runs f on its table and closes it. With the embedded
// store it refuses a data folder another process holds (ErrStoreLocked).
func withStore(ctx context.Context, cfg config.Config, logger *slog.Logger, f func(store.Table) error) error {
	if cfg.Store == config.StoreEmbedded {
		if err := probeLock(filepath.Join(cfg.DataDir, config.EmbeddedStoreFile)); err != nil {
			return err
		}
	}
	st, err := app.OpenStore(ctx, cfg, clock.System, logger)
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			// Taken between the probe and the open: same answer.
			return lockedError(cfg.DataDir)
		}
		return fmt.Errorf("admin: %w", err)
	}
	defer func() {
		// The store syncs every write before it returns, so what f wrote is kept even if
		// closing fails; the failure is worth a warning, not the loss of the work.
		if cerr := st.Table.Close(); cerr != nil {
			logger.Warn("closing the store failed", "error", cerr.Error())
		}
	}()
	if err := f(st.Table); err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	return nil
}

// probeLock tells quickly whether another process holds the embedded store's file: a
// read-only open takes a shared lock, which the server's exclusive lock refuses. A missing
// file is not locked (the store creates it).
func probeLock(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: LockProbeTimeout})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return lockedError(filepath.Dir(path))
	case err != nil:
		return fmt.Errorf("admin: check the lock of %s: %w", path, err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("admin: check the lock of %s: %w", path, err)
	}
	return nil
}

func lockedError(dir string) error {
	return fmt.Errorf("%w: %s is locked; is the server running on it? Stop it first (the embedded store admits one process at a time)",
		ErrStoreLocked, dir)
}

// Main runs the `apikey` command with args (the words after "apikey") and returns the
// process's exit code. `apikey issue` writes only the raw key, and a newline, to stdout, so
// that a script can capture it; everything else goes to stderr.
func Main(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) int {
	return exitCode(apiKeyCommand(ctx, cfg, args, stdout, stderr), stderr)
}

// exitCode reports err on stderr and returns the exit code it calls for.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, ErrUsage):
		fmt.Fprintln(stderr, err)
		return ExitUsage
	}
	fmt.Fprintln(stderr, err)
	return ExitError
}

const apiKeyUsage = `usage: roadevents apikey issue -org ORG_ID -label TEXT [-env live|sandbox] [-data DIR]

Issues an API key into the configured store (ROADEVENTS_STORE, ROADEVENTS_DATA, ...) and prints
the raw key, once, on stdout. With the embedded store the server must not be running on the
same data folder.`

func apiKeyCommand(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: missing subcommand\n%s", ErrUsage, apiKeyUsage)
	}
	switch args[0] {
	case "issue":
		return issueCommand(ctx, cfg, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stderr, apiKeyUsage)
		return flag.ErrHelp
	}
	return fmt.Errorf("%w: unknown subcommand %q\n%s", ErrUsage, args[0], apiKeyUsage)
}

func issueCommand(ctx context.Context, cfg config.Config, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("roadevents apikey issue", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprintln(stderr, apiKeyUsage); fl.PrintDefaults() }
	var req apikey.IssueRequest
	fl.StringVar(&req.OrgID, "org", "", "organisation id the key belongs to (required)")
	// Sandbox by default, as CreateKeyPayload of docs/api.md §2.9: a live key must be asked for.
	fl.StringVar(&req.Environment, "env", apikey.Sandbox, "environment of the key: live or sandbox")
	fl.StringVar(&req.Label, "label", "", "label shown in the console's key list, 1..120 characters (required)")
	fl.IntVar(&req.LiveKeyCap, "live-cap", 0, "refuse a live key when the organisation already has this many (0: no cap)")
	fl.StringVar(&cfg.DataDir, "data", cfg.DataDir, "data folder of the embedded store (env ROADEVENTS_DATA)")
	if err := parseFlags(fl, args, apiKeyUsage); err != nil {
		return err
	}
	switch {
	case req.OrgID == "":
		return fmt.Errorf("%w: -org is required\n%s", ErrUsage, apiKeyUsage)
	case req.Label == "":
		return fmt.Errorf("%w: -label is required\n%s", ErrUsage, apiKeyUsage)
	case !apikey.ValidEnvironment(req.Environment):
		return fmt.Errorf("%w: -env %q: want %s or %s", ErrUsage, req.Environment, apikey.Live, apikey.Sandbox)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	raw, key, err := IssueKey(ctx, cfg, req, logger)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, raw); err != nil {
		return fmt.Errorf("admin: write the key (key_id %s was issued; revoke it): %w", key.KeyID, err)
	}
	fmt.Fprintf(stderr, "issued %s key %s (prefix %s) for organisation %s\n", key.Environment, key.KeyID, key.Prefix, key.OrgID)
	return nil
}

// parseFlags parses a command's flags, which take every argument: -h is flag.ErrHelp, a bad
// flag or a word left over ErrUsage (naming usage for the latter).
func parseFlags(fl *flag.FlagSet, args []string, usage string) error {
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q\n%s", ErrUsage, fl.Arg(0), usage)
	}
	return nil
}
