package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/relay"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/stream"
)

// shutdownWrites bounds each wait once the server has stopped: for the streams to write
// their bye, then for the usage counts and last_used_at updates left in memory.
const shutdownWrites = 10 * time.Second

// Process is what a long-running server process (main.go, streamer/) owns around the handler
// it serves, from Run's start to its end: the store, the API keys and the usage meter on it,
// the stream hub following the store's change feed, and background jobs. A Lambda owns the
// same for one invocation at a time instead (lambdaapp.Function).
type Process struct {
	// Hub routes the store's changes to the streams of GET /v1/stream (app.Deps.Hub); Run
	// runs it on the store's feed and drains it when shutdown begins.
	Hub *stream.Hub
	// Feed is the table's own change feed (the embedded store's, or DynamoDB Streams), which
	// the process's other readers follow: the webhook producer on the embedded store.
	Feed store.Feed

	cfg    config.Config
	logger *slog.Logger
	budget *Budget
	table  store.Table
	keys   *apikey.Keys
	meter  *metering.Meter
	// jobsCtx ends when serving ends, or when the handler could not be built; jobs counts
	// the jobs running on it.
	jobsCtx context.Context
	jobs    sync.WaitGroup
}

// Run opens the store cfg names (app.OpenStore) with the keys and the meter on it, runs the
// hub on the store's feed, builds with handler what the process serves, and serves it on ln
// until ctx ends (Serve). Then it tears down in the order each part depends on the next: the
// hub tells every stream to say bye (reconnect) as soon as shutdown begins, the server drains
// its requests, the streams are waited for, the background jobs end, the usage counts and
// last_used_at writes left in memory are written (a failure is logged), and the store closes.
// It returns the first error of all that; ln is closed when it returns.
func Run(ctx context.Context, cfg config.Config, logger *slog.Logger, ln net.Listener,
	handler func(*Process) (http.Handler, error)) (err error) {
	st, err := app.OpenStore(ctx, cfg, clock.System, logger)
	if err != nil {
		ln.Close()
		return err
	}
	budget := connectionBudget(cfg, logger)
	jobsCtx, stopJobs := context.WithCancel(ctx)
	p := &Process{
		Hub:     stream.NewHub(stream.HubOptions{Logger: logger, Capacity: budget, ResumeWindow: cfg.Stream.ResumeWindow}),
		budget:  budget,
		cfg:     cfg,
		logger:  logger,
		table:   st.Table,
		Feed:    st.Feed,
		keys:    apikey.New(st.Table, apikey.Options{Logger: logger}),
		meter:   metering.New(st.Table, metering.Options{Logger: logger}),
		jobsCtx: jobsCtx,
	}
	// A burst's heap goes back to the system once the process is quiet (settle.go).
	settler := newSettler()
	if r, ok := st.Table.(interface{ OnRest(func()) }); ok {
		r.OnRest(settler.Rest)
	}
	p.Go(settler.run)
	defer func() {
		stopJobs()
		p.jobs.Wait()
		if cerr := p.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	// GET /v1/stream: the same hub on the embedded store's feed, on DynamoDB Streams, or on the
	// relay's log in Redis (docs/architecture.md §3).
	feed := st.Feed
	var rdb *redis.Client
	if cfg.Stream.Relay != "" {
		if rdb, err = relay.Client(cfg.Stream.Relay); err != nil {
			ln.Close()
			return err
		}
		feed = relay.NewLog(rdb, cfg.Stream.RelayKey, 0)
	}
	p.Go(func(ctx context.Context) {
		p.Hub.Run(ctx, feed, stream.EventsDecoder())
		if rdb != nil {
			rdb.Close()
		}
	})
	h, err := handler(p)
	if err != nil {
		ln.Close()
		return err
	}
	return p.serve(ctx, ln, h)
}

// connectionBudget raises the descriptor limit and cuts the connection budget from it, unless
// the configuration sets one (docs/operations.md §3).
func connectionBudget(cfg config.Config, logger *slog.Logger) *Budget {
	nofile, err := RaiseFileLimit()
	if err != nil {
		logger.Warn("cannot raise the open file limit", "limit", nofile, "error", err.Error())
	}
	n := cfg.MaxConnections
	if n == 0 {
		n = DefaultConnectionBudget(nofile)
	}
	logger.Info("connection budget", "connections", n, "open_file_limit", nofile)
	return NewBudget(n)
}

// Deps returns the dependencies of app.New the process owns, with its configuration and
// build (GET /health); the caller adds what else its groups need (a mailer, a sealer).
func (p *Process) Deps(build string) app.Deps {
	return app.Deps{Config: p.cfg, Build: build, Table: p.table, Clock: clock.System, Logger: p.logger,
		Keys: p.keys, Meter: p.meter, Hub: p.Hub}
}

// Go runs job in the background until its context ends, when serving ends. Run waits for it
// before the last writes and the closing of the store, which it may still use until then.
func (p *Process) Go(job func(ctx context.Context)) {
	p.jobs.Add(1)
	go func() {
		defer p.jobs.Done()
		job(p.jobsCtx)
	}()
}

// serve serves h on ln until ctx ends, then waits for the streams to end: they hold their
// connections themselves, so the server's drain does not wait for them.
func (p *Process) serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	err := Serve(ctx, ln, h, Options{Logger: p.logger, Budget: p.budget, OnShutdown: []func(){p.Hub.Drain}})
	p.Hub.Drain()
	wait, cancel := context.WithTimeout(context.Background(), shutdownWrites)
	defer cancel()
	if werr := p.Hub.Wait(wait); werr != nil {
		p.logger.Warn("streams still open at exit", "error", werr.Error())
	}
	return err
}

// close writes the usage counts and last_used_at updates left in memory, then closes the
// store.
func (p *Process) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownWrites)
	defer cancel()
	if err := p.meter.Close(ctx); err != nil {
		p.logger.Error("flush usage counts", "error", err.Error())
	}
	if err := p.keys.Wait(ctx); err != nil {
		p.logger.Error("finish last_used_at writes", "error", err.Error())
	}
	if err := p.table.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}
