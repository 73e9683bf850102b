// Command streamer is the SSE container of the AWS deployment (ARCHITECTURE.md, Streaming):
// GET /v1/stream for every client, fed by the table's DynamoDB Stream, and GET /health for the
// load balancer. The Lambdas cannot stream (a proxied response cannot be flushed), so this
// long-lived process holds the open connections. It is wiring only: configuration, the store
// and its stream, the hub, the stream route from shared/app, a graceful server.
//
// Environment (shared/config): ROADEVENTS_STORE=dynamodb, ROADEVENTS_TABLE, ROADEVENTS_ADDR
// (0.0.0.0:8080 in a container), optionally ROADEVENTS_STREAM_ARN and
// ROADEVENTS_STREAM_POLL_INTERVAL, and the standard AWS variables.
//
// On SIGTERM (ECS stopping the task) the health check turns 503, every open stream gets bye
// with reconnect: true, so its client reconnects to another task, and the process exits once
// the streams have ended.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/daemon"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/stream"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

// shutdownWrites bounds the usage counts and last_used_at writes left once the server stopped.
const shutdownWrites = 10 * time.Second

// errNotDynamoDB: the embedded store is one process's file; `go run .` serves its stream.
var errNotDynamoDB = errors.New("streamer: it follows a DynamoDB table's stream: set ROADEVENTS_STORE=dynamodb " +
	"and ROADEVENTS_TABLE (`go run .` serves GET /v1/stream on the embedded store)")

func main() {
	cfg, err := configure(config.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		logger.Error("listen", "addr", cfg.Addr, "error", err.Error())
		os.Exit(1)
	}
	if err := run(ctx, cfg, logger, ln); err != nil {
		logger.Error("stopped with an error", "error", err.Error())
		os.Exit(1)
	}
	logger.Info("stopped")
}

// configure reads the configuration, which must name a DynamoDB table.
func configure(getenv func(string) string) (config.Config, error) {
	cfg, err := config.FromEnv(getenv)
	if err == nil && cfg.Store != config.StoreDynamoDB {
		err = errNotDynamoDB
	}
	return cfg, err
}

// run serves the stream on ln until ctx ends, then drains.
func run(ctx context.Context, cfg config.Config, logger *slog.Logger, ln net.Listener) (err error) {
	st, err := app.OpenStore(ctx, cfg, clock.System, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer func() {
		if cerr := st.Table.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close store: %w", cerr)
		}
	}()
	keys := apikey.New(st.Table, apikey.Options{Logger: logger})
	meter := metering.New(st.Table, metering.Options{Logger: logger})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWrites)
		defer cancel()
		if err := meter.Close(ctx); err != nil {
			logger.Error("flush usage counts", "error", err.Error())
		}
		if err := keys.Wait(ctx); err != nil {
			logger.Error("finish last_used_at writes", "error", err.Error())
		}
	}()

	hub := stream.NewHub(stream.HubOptions{Logger: logger})
	api, err := app.New(app.Deps{Config: cfg, Build: build, Table: st.Table, Clock: clock.System, Logger: logger,
		Keys: keys, Meter: meter, Hub: hub}, routetable.GroupStream)
	if err != nil {
		return err
	}
	// Started once nothing can fail before serving: an error return waits for it.
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		hub.Run(ctx, st.Feed, stream.EventsDecoder())
	}()
	defer func() { <-hubDone }()
	mux := http.NewServeMux()
	// The load balancer's check: 503 until the hub follows the stream and from the moment it
	// drains, so that no client is sent to a task that cannot promise it every change.
	mux.Handle("GET /health", stream.HealthHandler(hub, build))
	mux.Handle("/", api.Handler())

	logger.Info("streamer listening", "addr", ln.Addr().String(), "table", cfg.Table)
	err = daemon.Serve(ctx, ln, mux, daemon.Options{Logger: logger, OnShutdown: []func(){hub.Drain}})
	// The streams hold their connections themselves: wait for their bye to be written.
	hub.Drain()
	wait, cancel := context.WithTimeout(context.Background(), shutdownWrites)
	defer cancel()
	if werr := hub.Wait(wait); werr != nil {
		logger.Warn("streams still open at exit", "error", werr.Error())
	}
	return err
}
