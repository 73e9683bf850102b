// Package feeds holds the open-data feeds organisations import: the registry of each
// organisation's feeds with their schedule, state and health (docs/interop.md §13), and Fetch,
// which gets a document (one conditional GET, bounded in size and time, never to an address
// inside the deployment's own network unless it allows that; §10). Polling the feeds into
// events is package feedpoll's, so that the console's function links no events store.
package feeds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/roadevents/roadevents/shared/netguard"
)

// Fetcher limits.
const (
	// DefaultMaxBytes bounds a feed document: a national CIFS or DATEX II file is a few
	// megabytes.
	DefaultMaxBytes = 16 << 20
	// DefaultTimeout bounds one fetch, connection to last byte.
	DefaultTimeout = 30 * time.Second
)

// ErrAddress is a feed URL whose host resolves to an address the fetcher may not reach:
// loopback, private, link-local, unspecified or multicast (the deployment's own network, the
// cloud's metadata service), unless Options.AllowPrivate.
var ErrAddress = netguard.ErrAddress

// ErrTooLarge is a document past Options.MaxBytes.
var ErrTooLarge = errors.New("feeds: the document is larger than the limit")

// Options configure a Fetcher.
type Options struct {
	// MaxBytes bounds a document; DefaultMaxBytes when 0.
	MaxBytes int64
	// Timeout bounds a fetch; DefaultTimeout when 0.
	Timeout time.Duration
	// AllowPrivate lets feeds live on private and loopback addresses: for tests, and for a
	// deployment whose feeds are inside its own network.
	AllowPrivate bool
}

// Fetcher fetches feed documents.
type Fetcher struct {
	client   *http.Client
	maxBytes int64
}

// NewFetcher returns a fetcher with o's limits. The address guard runs on the address each
// connection is made to, after resolution, so a name that resolves to a private address, or
// a redirect to one, is refused too.
func NewFetcher(o Options) *Fetcher {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	transport := &http.Transport{
		DialContext:           netguard.Dialer(o.AllowPrivate).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
	}
	return &Fetcher{
		client: &http.Client{
			Transport: transport,
			Timeout:   o.Timeout,
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 5 {
					return errors.New("feeds: more than 5 redirects")
				}
				if req.URL.Scheme != "https" && req.URL.Scheme != "http" {
					return fmt.Errorf("feeds: redirect to %s", req.URL.Scheme)
				}
				return nil
			},
		},
		maxBytes: o.MaxBytes,
	}
}

// Validators are what a previous fetch said about its document, sent back so that an unchanged
// document is not sent again.
type Validators struct {
	ETag, LastModified string
}

// Document is the answer of one fetch.
type Document struct {
	// Body is the document; nil when NotModified.
	Body []byte
	// NotModified: the document is the one of the validators sent.
	NotModified bool
	// Validators of this document, for the next fetch.
	Validators Validators
}

// Fetch gets the document at rawURL, conditionally on v.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, v Validators) (Document, error) {
	if err := netguard.CheckURL(rawURL, len(rawURL), "https", "http"); err != nil {
		return Document{}, fmt.Errorf("feeds: %w", err)
	}
	u, _ := url.Parse(rawURL) // CheckURL parsed it
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Document{}, err
	}
	req.Header.Set("User-Agent", "roadevents-feeds/1")
	req.Header.Set("Accept", "application/json, application/geo+json;q=0.9, */*;q=0.1")
	if v.ETag != "" {
		req.Header.Set("If-None-Match", v.ETag)
	}
	if v.LastModified != "" {
		req.Header.Set("If-Modified-Since", v.LastModified)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return Document{}, fmt.Errorf("feeds: fetch %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	next := Validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return Document{NotModified: true, Validators: v}, nil
	case resp.StatusCode != http.StatusOK:
		return Document{}, fmt.Errorf("feeds: fetch %s: HTTP %d", u.Redacted(), resp.StatusCode)
	case resp.ContentLength > f.maxBytes:
		return Document{}, fmt.Errorf("%w (%d bytes announced, %d allowed)", ErrTooLarge, resp.ContentLength, f.maxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return Document{}, fmt.Errorf("feeds: read %s: %w", u.Redacted(), err)
	}
	if int64(len(body)) > f.maxBytes {
		return Document{}, fmt.Errorf("%w (%d allowed)", ErrTooLarge, f.maxBytes)
	}
	return Document{Body: body, Validators: next}, nil
}
