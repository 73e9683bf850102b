// Command streamer is the SSE container of the AWS deployment (docs/architecture.md §3):
// GET /v1/stream for every client, fed by the table's DynamoDB Stream, and GET /health for the
// load balancer. The Lambdas cannot stream (a proxied response cannot be flushed), so this
// long-lived process holds the open connections. It is wiring only: configuration, the stream
// route from shared/app and the health check, served by daemon.Run, which owns the store and
// its stream, the hub and the graceful shutdown.
//
// Environment (shared/config): ROADEVENTS_STORE=dynamodb, ROADEVENTS_TABLE, ROADEVENTS_ADDR
// (0.0.0.0:8080 in a container), optionally ROADEVENTS_STREAM_ARN and
// ROADEVENTS_STREAM_POLL_INTERVAL, and the standard AWS variables.
//
// On SIGTERM (ECS stopping the task) the health check turns 503, every open stream gets bye
// with reconnect: true, so its client reconnects to another task, and the process exits once
// the streams have ended.
//
// With ROADEVENTS_RELAY_REDIS the streamer follows the relay's log in Redis instead of the
// table's stream, and `streamer -relay` is that relay: it follows the table's stream and
// appends the changes the streamers need to the log, serving only GET /health
// (docs/architecture.md §3).
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

	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/daemon"
	"github.com/roadevents/roadevents/shared/relay"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/stream"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

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
	serve := run
	if len(os.Args) > 1 && os.Args[1] == "-relay" {
		serve = runRelay
	}
	if err := serve(ctx, cfg, logger, ln); err != nil {
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

// run serves the stream on ln until ctx ends, then drains (daemon.Run).
func run(ctx context.Context, cfg config.Config, logger *slog.Logger, ln net.Listener) error {
	return daemon.Run(ctx, cfg, logger, ln, func(p *daemon.Process) (http.Handler, error) {
		api, err := app.New(p.Deps(build), routetable.GroupStream)
		if err != nil {
			return nil, err
		}
		mux := http.NewServeMux()
		// The load balancer's check: 503 until the hub follows the stream and from the moment
		// it drains, so that no client is sent to a task that cannot promise it every change.
		mux.Handle("GET /health", stream.HealthHandler(p.Hub, build))
		mux.Handle("/", api.Handler())
		logger.Info("streamer listening", "addr", ln.Addr().String(), "table", cfg.Table)
		return mux, nil
	})
}

// relayRetry is the pause before the relay follows the table's stream again after a failure.
const relayRetry = time.Second

// runRelay copies the table's changes that streams need into the relay's log until ctx ends,
// starting again after a failure (each start leaves a gap in the log, where the streamers end
// their streams), and answers GET /health on ln meanwhile.
func runRelay(ctx context.Context, cfg config.Config, logger *slog.Logger, ln net.Listener) error {
	if cfg.Stream.Relay == "" {
		ln.Close()
		return errors.New("streamer -relay: set ROADEVENTS_RELAY_REDIS to the Redis to write to")
	}
	st, err := app.OpenStore(ctx, cfg, clock.System, logger)
	if err != nil {
		ln.Close()
		return err
	}
	rdb, err := relay.Client(cfg.Stream.Relay)
	if err != nil {
		ln.Close()
		return err
	}
	defer rdb.Close()
	log := relay.NewLog(rdb, cfg.Stream.RelayKey, 0)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","version":%q}`, build)
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	wants := stream.EventsDecoder().(stream.KeyFilter).Wants
	logger.Info("relay running", "table", cfg.Table, "redis", cfg.Stream.Relay, "key", cfg.Stream.RelayKey)
	for {
		err := relay.Run(ctx, st.Feed, log, wants)
		if ctx.Err() != nil {
			return nil
		}
		logger.Error(relay.RestartMessage, "error", err.Error(), "retry_in", relayRetry.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(relayRetry):
		}
	}
}
