package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// DebugAddrEnv names the environment variable that turns on the profiling listener of
// ServeDebug (docs/performance.md §1). Unset, nothing listens.
const DebugAddrEnv = "ROADEVENTS_PPROF_ADDR"

// ErrDebugNotLoopback is returned by ServeDebug for an address that is not a loopback one:
// profiles expose memory contents (request bodies, credentials in flight), so they are never
// served beyond the machine.
var ErrDebugNotLoopback = errors.New("httpapi: the debug listener takes a loopback address only")

// ServeDebug serves net/http/pprof's handlers under /debug/pprof/ on addr, which must be a
// loopback address (127.0.0.1:6060, [::1]:6060, localhost:6060), until ctx ends. It listens
// on its own mux, never on the API's handler, so no route of the service can reach it.
func ServeDebug(ctx context.Context, addr string, log *slog.Logger) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("httpapi: debug listener on %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%w: %q", ErrDebugNotLoopback, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("httpapi: debug listener: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		// localhost resolved to something else: refuse rather than trust the resolver.
		ln.Close()
		return fmt.Errorf("%w: %q listens on %s", ErrDebugNotLoopback, addr, ln.Addr())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Info("debug listener (pprof)", "addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("httpapi: debug listener: %w", err)
	}
	return nil
}
