// Package daemon is the life of a long-running server process (main.go and streamer/ are
// wiring only around it). Run opens what such a process owns (the store, API keys, usage
// meter, stream hub), serves the handler built on them, and tears it all down in order when
// its context ends, returning errors rather than exiting. Serve runs an http.Handler on a
// listener until its context ends, then shuts down gracefully: it stops accepting, lets
// in-flight requests finish (up to a drain timeout), and only then returns, so the caller can
// close the store knowing no request still uses it. TuneGC sets the collector for a server.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Options tune Serve.
type Options struct {
	// DrainTimeout bounds how long in-flight requests may run after shutdown begins.
	DrainTimeout time.Duration
	Logger       *slog.Logger
	// OnShutdown functions run when shutdown begins, e.g. to tell long-lived streams to say
	// goodbye (they are registered with http.Server.RegisterOnShutdown).
	OnShutdown []func()
}

// Serve serves h on ln until ctx ends, then drains. It returns nil after a clean drain.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts Options) error {
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 20 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	for _, f := range opts.OnShutdown {
		srv.RegisterOnShutdown(f)
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: draining in-flight requests", "timeout", opts.DrainTimeout.String())
	drainCtx, cancel := context.WithTimeout(context.Background(), opts.DrainTimeout)
	defer cancel()
	err := srv.Shutdown(drainCtx)
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("server: %w", serveErr)
	}
	if err != nil {
		srv.Close()
		return fmt.Errorf("server: drain: %w", err)
	}
	return nil
}
