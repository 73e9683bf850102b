package httpapi_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/roadevents/roadevents/shared/httpapi"
)

// Profiles expose memory, so the debug listener must never bind beyond the machine.
func TestServeDebugRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	for name, addr := range map[string]string{
		"any interface": ":6060",
		"unspecified":   "0.0.0.0:6060",
		"public":        "192.0.2.1:6060",
		"host name":     "example.com:6060",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := httpapi.ServeDebug(context.Background(), addr, slog.New(slog.DiscardHandler))
			if !errors.Is(err, httpapi.ErrDebugNotLoopback) {
				t.Errorf("ServeDebug(%q) = %v, want ErrDebugNotLoopback", addr, err)
			}
		})
	}
}
