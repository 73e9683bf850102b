// Command roadevents is the whole service on one machine (ARCHITECTURE.md): every route group,
// on the embedded store in ./data, on 127.0.0.1:8080. It is wiring only: configuration,
// adapters, the handler from shared/app, and a graceful server.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/roadevents/roadevents/shared/admin"
	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/daemon"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/stream"
	"github.com/roadevents/roadevents/web"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

// shutdownWrites bounds the writes left to do once the server has stopped.
const shutdownWrites = 10 * time.Second

func main() {
	cfg, err := config.FromEnv(config.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Operator commands (shared/admin) run against the store instead of serving.
	if len(os.Args) > 1 && os.Args[1] == "apikey" {
		os.Exit(admin.Main(context.Background(), cfg, os.Args[2:], os.Stdout, os.Stderr))
	}
	// Flags win over the environment (README, Configuration).
	flag.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address (env ROADEVENTS_ADDR)")
	flag.StringVar(&cfg.DataDir, "data", cfg.DataDir, "data folder: embedded store and e-mail outbox (env ROADEVENTS_DATA)")
	flag.Parse()
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Event ids derived from client_event_id must survive a restart (contract 2).
	if err := cfg.EnsureEventIDKey(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// So must the console's code and TOTP keys: created in the data folder on first start.
	if err := cfg.EnsureConsoleKeys(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	daemon.TuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Profiling for the load test (README), on loopback only and only when asked for.
	if addr := os.Getenv(httpapi.DebugAddrEnv); addr != "" {
		go func() {
			if err := httpapi.ServeDebug(ctx, addr, logger); err != nil {
				logger.Error("debug listener", "error", err.Error())
			}
		}()
	}
	if err := run(ctx, cfg, logger); err != nil {
		logger.Error("stopped with an error", "error", err.Error())
		os.Exit(1)
	}
	logger.Info("stopped")
}

func run(ctx context.Context, cfg config.Config, logger *slog.Logger) (err error) {
	st, err := app.OpenStore(ctx, cfg, clock.System, logger)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Table.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close store: %w", cerr)
		}
	}()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	base := "http://" + ln.Addr().String()
	// The console is served at /app/ next to the API (GET / stays the API's document).
	if cfg.ConsoleURL == "" {
		cfg.ConsoleURL = base + web.Prefix
	}
	keys := apikey.New(st.Table, apikey.Options{Logger: logger})
	meter := metering.New(st.Table, metering.Options{Logger: logger})
	defer func() {
		// After the server has stopped and before the store closes: write the usage counted
		// in memory and the keys' last_used_at.
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWrites)
		defer cancel()
		if err := meter.Close(ctx); err != nil {
			logger.Error("flush usage counts", "error", err.Error())
		}
		if err := keys.Wait(ctx); err != nil {
			logger.Error("finish last_used_at writes", "error", err.Error())
		}
	}()
	mailer, err := app.OpenMailer(ctx, cfg, clock.System, logger)
	if err != nil {
		return err
	}
	sealer, err := app.OpenSealer(ctx, cfg)
	if err != nil {
		return err
	}
	// GET /v1/stream: the hub follows the store's change feed, the same code as streamer/ on
	// DynamoDB Streams. It stops, after the server, before the store closes.
	hub := stream.NewHub(stream.HubOptions{Logger: logger})
	api, err := app.New(app.Deps{Config: cfg, Build: build, Table: st.Table, Clock: clock.System, Logger: logger,
		Keys: keys, Meter: meter, Mailer: mailer, Sealer: sealer, Hub: hub})
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

	// Reads beyond included_reads are reported to Stripe hourly (README), only with billing
	// on; the job stops with ctx and is waited for before the store closes.
	if b := api.Billing(); b.Configured() {
		ticker := time.NewTicker(billing.ReportInterval)
		overageDone := make(chan struct{})
		go func() {
			defer close(overageDone)
			b.RunOverageReports(ctx, ticker.C)
		}()
		defer func() { ticker.Stop(); <-overageDone }()
	}

	fmt.Printf("road events service on %s (data in %s)\n", base, cfg.DataDir)
	logger.Info("listening", "addr", base, "store", string(cfg.Store), "data", cfg.DataDir)
	// On shutdown every stream says bye (reconnect) before the server waits for its requests;
	// the streams hold their connections themselves, so they are waited for apart.
	mux := http.NewServeMux()
	mux.Handle("/", api.Handler())
	mux.Handle(web.Prefix, web.Handler())
	mux.Handle(strings.TrimSuffix(web.Prefix, "/"), web.Handler())
	err = daemon.Serve(ctx, ln, mux, daemon.Options{Logger: logger, OnShutdown: []func(){hub.Drain}})
	hub.Drain()
	wait, cancel := context.WithTimeout(context.Background(), shutdownWrites)
	defer cancel()
	if werr := hub.Wait(wait); werr != nil {
		logger.Warn("streams still open at exit", "error", werr.Error())
	}
	return err
}
