// Package cli is the roadevents command line (docs/cli.md): signing in to the console, the
// organisations and their API keys, publishing, querying, signalling, revising and closing
// events, watching an area live in the terminal, and playing scenarios into the sandbox. It
// talks to a running service over HTTP with the SDK (shared/sdk), so what it does a client
// can do.
package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/roadevents/roadevents/shared/sdk"
)

// Env is what a command reads and writes: its streams, the environment and the files.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Options are given to every SDK client the command makes (tests: a transport, no retry).
	Options []sdk.Option
}

// Command runs with args (after its name) and returns the exit code.
type Command struct {
	Summary string
	Run     func(ctx context.Context, e *Env, args []string) int
}

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Commands are the client commands of the roadevents binary, by name.
var Commands = map[string]Command{
	"login":    {"sign in to the console with an e-mailed code (and TOTP); keeps the session in the config file", login},
	"logout":   {"forget the session", logout},
	"orgs":     {"list the organisations you are a member of", orgsCmd},
	"keys":     {"keys list|issue|revoke: an organisation's API keys", keys},
	"publish":  {"publish an event from flags or a JSON file, and print it", publish},
	"query":    {"the active events around a point, nearest first", query},
	"get":      {"one event", get},
	"signal":   {"confirm or deny an event as a reporter", signal},
	"revise":   {"restate one of your events' position and severity", revise},
	"close":    {"end one of your events", closeCmd},
	"watch":    {"a live table of the events around a point, nearest first", watch},
	"simulate": {"play a scenario of events into the sandbox", simulate},
}

// Help writes the client commands, one a line, for roadevents help.
func Help(w io.Writer) {
	names := make([]string, 0, len(Commands))
	for n := range Commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, Commands[n].Summary)
	}
}

// Config is the command line's file (docs/cli.md §1): where the service is, the session of
// login, and an API key saved by keys issue -save. It holds credentials, so it is written
// with mode 0600 and refused when others may read it.
type Config struct {
	URL     string `json:"url,omitempty"`
	Session string `json:"session,omitempty"`
	Email   string `json:"email,omitempty"`
	APIKey  string `json:"api_key,omitempty"`
}

// ConfigPath is the file: ROADEVENTS_CLI_CONFIG, or roadevents/cli.json in the user's
// configuration folder.
func (e *Env) ConfigPath() (string, error) {
	if p := e.Getenv("ROADEVENTS_CLI_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration folder (set ROADEVENTS_CLI_CONFIG): %w", err)
	}
	return filepath.Join(dir, "roadevents", "cli.json"), nil
}

// errLoose is a config file others may read.
var errLoose = errors.New("the config file may be read by others; run chmod 600 on it")

func (e *Env) loadConfig() (Config, string, error) {
	path, err := e.ConfigPath()
	if err != nil {
		return Config{}, "", err
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, path, nil
	}
	if err != nil {
		return Config{}, path, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return Config{}, path, fmt.Errorf("%s: %w", path, errLoose)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, path, err
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return Config{}, path, fmt.Errorf("%s: %w", path, err)
	}
	return c, path, nil
}

func (e *Env) saveConfig(c Config) (string, error) {
	path, err := e.ConfigPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return path, err
	}
	raw, _ := json.MarshalIndent(c, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return path, err
	}
	return path, os.Rename(tmp, path)
}

// baseURL is ROADEVENTS_URL, the config file's, or the local service's.
func (e *Env) baseURL(c Config) string {
	switch {
	case e.Getenv("ROADEVENTS_URL") != "":
		return e.Getenv("ROADEVENTS_URL")
	case c.URL != "":
		return c.URL
	}
	return "http://127.0.0.1:8080"
}

// apiClient is the SDK client with the API key of ROADEVENTS_API_KEY or the config file: a key
// is never a flag, so that it stays out of the shell's history.
func (e *Env) apiClient() (*sdk.Client, error) {
	c, _, err := e.loadConfig()
	if err != nil {
		return nil, err
	}
	key := e.Getenv("ROADEVENTS_API_KEY")
	if key == "" {
		key = c.APIKey
	}
	if key == "" {
		return nil, errors.New("no API key: set ROADEVENTS_API_KEY, or save one with roadevents keys issue -save")
	}
	return sdk.New(e.baseURL(c), key, e.Options...), nil
}

// consoleClient is the SDK client with the session of login.
func (e *Env) consoleClient() (*sdk.Client, error) {
	c, _, err := e.loadConfig()
	if err != nil {
		return nil, err
	}
	if c.Session == "" {
		return nil, errors.New("not signed in: run roadevents login")
	}
	return sdk.New(e.baseURL(c), c.Session, e.Options...), nil
}

// flags returns a flag set of name writing its errors and usage to e.Stderr.
func (e *Env) flags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.Stderr, "usage: roadevents %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// fail reports err and returns the exit code.
func (e *Env) fail(err error) int {
	fmt.Fprintln(e.Stderr, "roadevents:", describe(err))
	return ExitError
}

// describe words an error for a person: a refusal's detail or its first validation item.
func describe(err error) string {
	var apiErr *sdk.APIError
	if errors.As(err, &apiErr) {
		if len(apiErr.Validation) > 0 {
			var parts []string
			for _, v := range apiErr.Validation {
				var loc []string
				for _, l := range v.Loc {
					loc = append(loc, fmt.Sprint(l))
				}
				parts = append(parts, strings.Join(loc, ".")+": "+v.Msg)
			}
			return fmt.Sprintf("%d: %s", apiErr.Status, strings.Join(parts, "; "))
		}
		return fmt.Sprintf("%d: %s", apiErr.Status, apiErr.Detail)
	}
	return err.Error()
}

// prompt writes question and reads a line of e.Stdin.
func (e *Env) prompt(in *bufio.Reader, question string) (string, error) {
	fmt.Fprint(e.Stderr, question)
	line, err := in.ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("no answer to %q", strings.TrimSpace(question))
	}
	return strings.TrimSpace(line), nil
}

// printJSON writes v indented.
func (e *Env) printJSON(v any) {
	raw, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintln(e.Stdout, string(raw))
}
