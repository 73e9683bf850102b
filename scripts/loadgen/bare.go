package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/roadevents/roadevents/shared/event"
)

// The bare phase serves POST /v1/events and GET /v1/events as a server that does nothing else
// would: a publish has its body read and gets 201 with an event of the size ours sends, a query
// gets a fixed array of -events such events, without validating, storing, searching or syncing
// anything. Driven by the same client as the real server, it shows the most publishes or
// queries a second that client and this machine allow over HTTP at all (docs/performance.md
// §13): the client's own CPU per request and the bare server's share the machine's cores.

// bareEvent is the answer to every publish: a point event as POST /v1/events returns it.
var bareEvent = func() []byte {
	heading := 258
	b, err := json.Marshal(event.EventPublic{
		EventID: "ev_naaurfhwlhjg25cewmzdozgifw", SchemaVersion: 1, Type: "police_check",
		Lat: 48.13727, Lon: 11.57722, Heading: &heading,
		CreatedAt: "2026-11-29T06:42:58.335579384Z", ExpiresAt: "2026-11-29T07:12:58.335579384Z",
		SourceKind: "publisher", Status: "active", Verification: "unverified", Confidence: 0.667,
		Environment: "live",
	})
	if err != nil {
		panic(err) // a fixed value of a plain struct always encodes
	}
	return b
}()

// bareMaxEvents is the most events a query answers (docs/api.md §8).
const bareMaxEvents = 500

// bareList is the answer to every query: n copies of bareEvent.
func bareList(n int) []byte {
	b := append(make([]byte, 0, n*(len(bareEvent)+1)+2), '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, bareEvent...)
	}
	return append(b, ']')
}

// bareHandler answers POST /v1/events with 201 and bareEvent once it has read the body,
// GET /v1/events with list, and anything else with 404 or 405.
func bareHandler(list []byte) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(list)))
		_, _ = w.Write(list)
	})
	mux.HandleFunc("POST /v1/events", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/v1/events/ev_naaurfhwlhjg25cewmzdozgifw")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(bareEvent)
	})
	return mux
}

// bareCommand serves bareHandler on -addr (loopback only) until ctx ends, after printing
// {"bare":"host:port"} on stdout.
func bareCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("loadgen bare", flag.ContinueOnError)
	fl.SetOutput(stderr)
	addr := fl.String("addr", "127.0.0.1:0", "loopback address to listen on (port 0: any free port)")
	events := fl.Int("events", 123, "events in the answer to every query (the benchmark city's mean at 1 000 m)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "loadgen: bare: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	if *events < 0 || *events > bareMaxEvents {
		fmt.Fprintf(stderr, "loadgen: bare: -events %d: want 0..%d\n", *events, bareMaxEvents)
		return 2
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: bare: -addr %q: %v\n", *addr, err)
		return 2
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(stderr, "loadgen: bare: -addr must be a loopback address, not %q\n", host)
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: bare: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: bareHandler(bareList(*events)), ReadHeaderTimeout: 10 * time.Second}
	line, _ := json.Marshal(map[string]string{"bare": ln.Addr().String()})
	fmt.Fprintln(stdout, string(line))
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "loadgen: bare: %v\n", err)
		return 1
	}
	return 0
}
