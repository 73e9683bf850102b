// Command run is a client generated from /openapi.json by oapi-codegen, as a third party
// would use it (test/oapiclient builds it in a module of its own, with the generated package
// beside it). It runs publish, query, get, signal, revise and a stream ticket against the
// service at -url and fails on the first answer it did not expect; coordinates must come
// back exactly as sent (docs/api.md §2.2: 5 decimals).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"

	"genclient/client"
)

func main() {
	url := flag.String("url", "", "the service")
	key := flag.String("key", "", "API key of the publisher")
	other := flag.String("other", "", "API key of another organisation, which signals")
	flag.Parse()
	ctx := context.Background()
	as := func(key string) client.ClientOption {
		return client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		})
	}
	c, err := client.NewClientWithResponses(*url, as(*key))
	must(err)
	o, err := client.NewClientWithResponses(*url, as(*other))
	must(err)

	// Longitudes of 128 and more lose their fifth decimal as float32.
	lat, lon := 35.12345, 128.00007
	pub, err := c.PublishEventWithResponse(ctx, client.EventIn{Type: client.EventInTypeAccident, Lat: lat, Lon: lon})
	must(err)
	ev := pub.JSON201
	if ev == nil {
		fail("publish", pub.HTTPResponse, pub.Body)
	}
	same("publish", ev.Lat, ev.Lon, lat, lon)

	radius := 500.0
	list, err := c.ListEventsWithResponse(ctx, &client.ListEventsParams{Lat: lat, Lon: lon, Radius: &radius})
	must(err)
	if list.JSON200 == nil || len(*list.JSON200) != 1 || (*list.JSON200)[0].EventId != ev.EventId {
		fail("query", list.HTTPResponse, list.Body)
	}
	same("query", (*list.JSON200)[0].Lat, (*list.JSON200)[0].Lon, lat, lon)

	got, err := c.GetEventWithResponse(ctx, ev.EventId)
	must(err)
	if got.JSON200 == nil {
		fail("get", got.HTTPResponse, got.Body)
	}
	same("get", got.JSON200.Lat, got.JSON200.Lon, lat, lon)

	sig, err := o.SignalEventWithResponse(ctx, ev.EventId, client.SignalIn{Action: client.SignalInActionConfirm})
	must(err)
	if sig.JSON200 == nil || sig.JSON200.ConfirmCount != 1 {
		fail("signal", sig.HTTPResponse, sig.Body)
	}

	lat, lon = -33.86543, -179.99999
	rev, err := c.ReviseEventWithResponse(ctx, ev.EventId, client.RevisionIn{Lat: lat, Lon: lon})
	must(err)
	if rev.JSON200 == nil {
		fail("revise", rev.HTTPResponse, rev.Body)
	}
	same("revise", rev.JSON200.Lat, rev.JSON200.Lon, lat, lon)
	got, err = c.GetEventWithResponse(ctx, ev.EventId)
	must(err)
	if got.JSON200 == nil {
		fail("get after the revision", got.HTTPResponse, got.Body)
	}
	same("get after the revision", got.JSON200.Lat, got.JSON200.Lon, lat, lon)

	ticket, err := c.MintStreamTicketWithResponse(ctx)
	must(err)
	if ticket.JSON201 == nil || ticket.JSON201.ExpiresIn != 300 {
		fail("stream ticket", ticket.HTTPResponse, ticket.Body)
	}
	fmt.Println("ok", ev.EventId)
}

func same(step string, gotLat, gotLon, lat, lon float64) {
	if gotLat != lat || gotLon != lon {
		log.Fatalf("%s: the event is at %v, %v; want %v, %v exactly", step, gotLat, gotLon, lat, lon)
	}
}

func fail(step string, r *http.Response, body []byte) {
	fmt.Fprintf(os.Stderr, "%s: %s %s\n", step, r.Status, body)
	os.Exit(1)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
