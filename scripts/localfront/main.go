// Command localfront puts the LocalStack deployment on one origin, as CloudFront and the load
// balancer do on AWS (docs/architecture.md §5; docs/operations.md §5): each route of the route
// table goes to its group's function URL, GET /v1/stream to the streamer running beside it, a
// path no route knows to meta, and /app/ and /docs are the console, so that the console and any
// client need one address. scripts/localstack-deploy.sh starts it; it is for a local trial, not
// for serving anyone.
//
//	go run ./scripts/localfront -outputs build/localstack-outputs.json -stream http://127.0.0.1:8081
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"

	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/web"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	outputs := flag.String("outputs", "build/localstack-outputs.json", "the deploy's outputs (cdk deploy --outputs-file)")
	streamer := flag.String("stream", "http://127.0.0.1:8081", "the local streamer's address")
	flag.Parse()
	upstreams, err := readOutputs(*outputs, *streamer)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localfront:", err)
		os.Exit(2)
	}
	h, err := newFront(upstreams)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localfront:", err)
		os.Exit(2)
	}
	log.Printf("localfront: the API, the stream and the console on http://%s", *addr)
	log.Fatal(http.ListenAndServe(*addr, h))
}

// outputKey is the deploy's output of a group's function URL (infra/stack: <Group>Url).
func outputKey(g routetable.Group) string {
	var b strings.Builder
	for _, part := range strings.Split(string(g), "-") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "Url"
}

// readOutputs reads each Lambda group's URL from the deploy's outputs file, and adds the
// streamer's for the stream.
func readOutputs(path, streamer string) (map[routetable.Group]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the deploy's outputs: %w", err)
	}
	var stacks map[string]map[string]string
	if err := json.Unmarshal(raw, &stacks); err != nil {
		return nil, fmt.Errorf("read the deploy's outputs %s: %w", path, err)
	}
	out := map[routetable.Group]string{routetable.GroupStream: streamer}
	for _, outputs := range stacks {
		for _, g := range routetable.Lambdas {
			if u := outputs[outputKey(g)]; u != "" {
				out[g] = u
			}
		}
	}
	for _, g := range routetable.Lambdas {
		if out[g] == "" {
			return nil, fmt.Errorf("%s names no %s: was the LocalStack stack deployed with --outputs-file?", path, outputKey(g))
		}
	}
	return out, nil
}

// errUpstream is returned by newFront for an address it cannot proxy to.
var errUpstream = errors.New("localfront: upstream")

// newFront routes every route of the table to its group's upstream, the rest to meta, and
// serves the console.
func newFront(upstreams map[routetable.Group]string) (http.Handler, error) {
	proxies := map[routetable.Group]http.Handler{}
	for _, g := range routetable.All {
		u, err := url.Parse(upstreams[g])
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("%w: %s: %q is no URL", errUpstream, g, upstreams[g])
		}
		// A function URL answers to its own host name only (SetURL sets it); streams flush
		// every write.
		proxies[g] = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.SetXForwarded()
			},
			FlushInterval: -1,
		}
	}
	mux := http.NewServeMux()
	seen := map[string]bool{}
	for _, g := range routetable.All {
		for _, r := range g.Routes() {
			// The path alone, as the load balancer routes: each group answers a method it
			// does not serve, and preflights.
			if !seen[r.Path] {
				seen[r.Path] = true
				mux.Handle(r.Path, proxies[g])
			}
		}
	}
	mux.Handle("/", proxies[routetable.GroupMeta])
	mux.Handle(web.Prefix, web.Handler())
	mux.Handle(strings.TrimSuffix(web.Prefix, "/"), web.Handler())
	mux.Handle(web.ReferencePath, web.ReferenceHandler())
	return mux, nil
}
