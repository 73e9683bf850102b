// Command roadevents is the whole service on one machine (docs/architecture.md §1): every route
// group, on the embedded store in ./data, on 127.0.0.1:8080. It is wiring only: configuration
// and flags, the operator commands (`apikey`, `invalidate`), the mailer and sealer, the handler
// from shared/app with the console and the API reference beside it, and daemon.Run, which owns
// the store, the stream hub and the graceful shutdown.
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
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/cli"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/daemon"
	"github.com/roadevents/roadevents/shared/feedpoll"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/webhooks"
	"github.com/roadevents/roadevents/web"
)

// build identifies this build in GET /health; release builds set it with
// -ldflags "-X main.build=<version>".
var build = "dev"

// warmWait is the longest the server waits for its area cache to warm before it serves: it
// answers /health within 5 s however much data it holds, and a city of 500 000 events, which
// took 3.0 to 3.7 s to warm on a slow hour of the 2-core machine, is served warm from its
// first query (docs/performance.md §5).
const warmWait = 4 * time.Second

func main() {
	cfg, err := config.FromEnv(config.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Operator commands (shared/admin) run against the store instead of serving; client
	// commands (shared/cli) talk to a running service.
	if len(os.Args) > 1 {
		if command, ok := admin.Commands[os.Args[1]]; ok {
			os.Exit(command(context.Background(), cfg, os.Args[2:], os.Stdout, os.Stderr))
		}
		if command, ok := cli.Commands[os.Args[1]]; ok {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			code := command.Run(ctx, &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}, os.Args[2:])
			stop()
			os.Exit(code)
		}
	}
	flag.Usage = usage
	// Flags win over the environment (docs/operations.md §4).
	flag.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address (env ROADEVENTS_ADDR)")
	flag.StringVar(&cfg.DataDir, "data", cfg.DataDir, "data folder: embedded store and e-mail outbox (env ROADEVENTS_DATA)")
	if len(os.Args) == 2 && os.Args[1] == "help" {
		flag.CommandLine.SetOutput(os.Stdout)
		usage()
		return
	}
	flag.Parse()
	// A word that is no command must not start the server, which would take it for one.
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "roadevents: unknown command %q\n\n", flag.Arg(0))
		usage()
		os.Exit(2)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// Event ids derived from client_event_id must survive a restart (docs/api.md §10.2).
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
	// Profiling for the load test (docs/performance.md §1), on loopback only and only when asked for.
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

// usage answers -h: the server's flags and the operator commands.
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprint(out, `usage: roadevents [-addr ADDR] [-data DIR]
       roadevents apikey issue -org ORG_ID -label TEXT [-env live|sandbox] [-data DIR]
       roadevents invalidate -org ORG_ID -env live|sandbox -reason TEXT [-since RFC3339] [-data DIR]
       roadevents COMMAND [flags]   (a client of a running service; below)
       roadevents help

Without a command, serves the API, the stream, the console (/app/) and the API reference
(/docs). The operator commands open the data folder themselves, so they run while the server
is stopped; "roadevents <command> -h" explains one. Every setting can also come from the
environment (ROADEVENTS_*, docs/operations.md §4); flags win.

Client commands (docs/cli.md; the service at ROADEVENTS_URL, default http://127.0.0.1:8080,
the API key in ROADEVENTS_API_KEY or the config file, never a flag):
`)
	cli.Help(out)
	fmt.Fprint(out, "\nFlags of the server:\n")
	flag.PrintDefaults()
}

// run serves every group, the console at /app/ and the API reference at /docs, until ctx ends.
func run(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	base := "http://" + ln.Addr().String()
	// The console is served at /app/ next to the API (GET / stays the API's document).
	if cfg.ConsoleURL == "" {
		cfg.ConsoleURL = base + web.Prefix
	}
	return daemon.Run(ctx, cfg, logger, ln, func(p *daemon.Process) (http.Handler, error) {
		deps := p.Deps(build)
		var err error
		if deps.Mailer, err = tenants.OpenMailer(ctx, cfg, clock.System, logger); err != nil {
			return nil, err
		}
		if deps.Sealer, err = tenants.OpenSealer(ctx, cfg); err != nil {
			return nil, err
		}
		api, err := app.New(deps)
		if err != nil {
			return nil, err
		}
		// Reads beyond included_reads are reported to Stripe hourly (docs/console.md §3), only with
		// billing on.
		if b := api.Billing(); b.Configured() {
			p.Go(func(ctx context.Context) {
				ticker := time.NewTicker(billing.ReportInterval)
				defer ticker.Stop()
				b.RunOverageReports(ctx, ticker.C)
			})
		}
		// Webhooks are made from the embedded store's feed, read on from where the producer
		// last recorded its place, and sent in process (docs/webhooks.md §3).
		if feed, ok := p.Feed.(store.Replayer); ok {
			producer, dispatcher := api.Webhooks()
			p.Go(func(ctx context.Context) {
				if err := producer.Run(ctx, feed); err != nil {
					logger.Error("webhooks: the producer stopped; no delivery is made until the process restarts", "err", err)
				}
			})
			p.Go(func(ctx context.Context) {
				ticker := time.NewTicker(webhooks.DispatchTick)
				defer ticker.Stop()
				dispatcher.Run(ctx, ticker.C)
			})
		}
		// The organisations' feeds are polled in process (docs/interop.md §13).
		p.Go(func(ctx context.Context) {
			ticker := time.NewTicker(feedpoll.Tick)
			defer ticker.Stop()
			api.Feeds().Run(ctx, ticker.C)
		})
		warmed := make(chan struct{})
		p.Go(func(ctx context.Context) {
			defer close(warmed)
			start := time.Now()
			w, err := api.WarmAreaCache(ctx)
			if err != nil && ctx.Err() == nil {
				logger.Warn("warming the area cache failed; queries fill it as they come", "err", err)
				return
			}
			if w.Partitions > 0 {
				logger.Info("area cache warmed", "partitions", w.Partitions, "cells", w.Cells,
					"duration", time.Since(start).Round(time.Millisecond).String())
			}
		})
		// Requests are served once the cache is warm, or after warmWait: a query that came
		// first read and decoded its partitions itself while the warming went on, 0.2 to 0.5 s
		// with 500 000 events against 3 ms once warm (docs/performance.md §5). Meanwhile
		// connections wait in the listener's queue.
		select {
		case <-warmed:
		case <-time.After(warmWait):
		case <-ctx.Done():
		}
		fmt.Printf("road events service on %s (data in %s)\n", base, cfg.DataDir)
		logger.Info("listening", "addr", base, "store", string(cfg.Store), "data", cfg.DataDir)
		mux := http.NewServeMux()
		mux.Handle("/", api.Handler())
		// The console's requests are logged as the API's are.
		console := api.Observe(web.Handler())
		mux.Handle(web.Prefix, console)
		mux.Handle(strings.TrimSuffix(web.Prefix, "/"), console)
		// The API reference renders /openapi.json from the console's build (docs/api.md §11.3).
		mux.Handle(web.ReferencePath, api.Observe(web.ReferenceHandler()))
		return mux, nil
	})
}
