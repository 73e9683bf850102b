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

// Time limits of a connection (docs/operations.md §3). A request must arrive whole, body
// included, within ReadTimeout of its first byte; an answer must be taken by the client within
// WriteTimeout; a keep-alive connection may wait IdleTimeout for its next request. A stream
// takes its connection over from net/http, which lifts the first two for it, and bounds each
// of its writes itself.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout lets the largest body (64 KiB) arrive at 52 kbit/s.
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout outlasts the 60 s idle timeout of an AWS load balancer in front of
	// the streamer, which must be the side that closes an idle connection: a server closing
	// first can race a request the balancer is sending (a 502).
	DefaultIdleTimeout = 75 * time.Second
)

// Options tune Serve.
type Options struct {
	// Budget, when set, caps the connections served at once (see Budget).
	Budget *Budget
	// ReadTimeout, WriteTimeout and IdleTimeout override the defaults above when positive.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
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
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       positiveOr(opts.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      positiveOr(opts.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       positiveOr(opts.IdleTimeout, DefaultIdleTimeout),
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	for _, f := range opts.OnShutdown {
		srv.RegisterOnShutdown(f)
	}

	if opts.Budget != nil {
		ln = opts.Budget.Listener(ln)
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

func positiveOr(d, fallback time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return fallback
}
