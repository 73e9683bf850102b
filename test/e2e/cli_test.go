package e2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// `roadevents help` is how a newcomer finds the operator commands: it lists the server's flags
// and every command, on stdout, and exits 0 without serving.
func TestHelpListsFlagsAndCommands(t *testing.T) {
	out, err := exec.Command(binary(t), "help").Output()
	if err != nil {
		t.Fatalf("roadevents help: %v", err)
	}
	for _, want := range []string{"-addr", "-data", "apikey issue", "invalidate", "docs/operations.md"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("help output lacks %q:\n%s", want, out)
		}
	}
}

// A word that is no command is refused with status 2 and the usage, instead of starting a
// server that ignores it (and takes the data folder and the port).
func TestUnknownCommandIsRefused(t *testing.T) {
	cmd := exec.Command(binary(t), "-addr", "127.0.0.1:0", "-data", t.TempDir(), "apikeys")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("roadevents apikeys: %v, output:\n%s\nwant exit status 2", err, out)
	}
	if !strings.Contains(string(out), `unknown command "apikeys"`) || !strings.Contains(string(out), "apikey issue") {
		t.Errorf("output does not name the command and the usage:\n%s", out)
	}
}
