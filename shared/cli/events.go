package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/sdk"
)

func center(a sdk.Area) geo.Point { return geo.Point{Lat: a.Lat, Lon: a.Lon} }

// publish publishes an event from flags, or from a JSON file (- for standard input) holding
// an EventIn, and prints the event.
func publish(ctx context.Context, e *Env, args []string) int {
	fs := e.flags("publish", "-type TYPE -lat LAT -lon LON [flags] | -file EVENT.json")
	file := fs.String("file", "", "a JSON file of the event (docs/api.md §2.2); - reads standard input")
	typ := fs.String("type", "", "the event type (roadevents query lists what is around; GET /v1/meta/event-types lists them all)")
	lat := fs.Float64("lat", 0, "latitude")
	lon := fs.Float64("lon", 0, "longitude")
	severity := fs.String("severity", "", "low, medium or high")
	description := fs.String("description", "", "what a person should know, 280 characters at most")
	roadRef := fs.String("road-ref", "", "the road, for example A9")
	subtype := fs.String("subtype", "", "a subtype of the type")
	clientID := fs.String("client-event-id", "", "your id of the event: makes publishing it again safe")
	if fs.Parse(args) != nil {
		return ExitUsage
	}
	var in sdk.EventIn
	switch {
	case *file != "":
		var r io.Reader = e.Stdin
		if *file != "-" {
			f, err := os.Open(*file)
			if err != nil {
				return e.fail(err)
			}
			defer f.Close()
			r = f
		}
		dec := json.NewDecoder(r)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return e.fail(fmt.Errorf("%s: %w", *file, err))
		}
	case *typ == "":
		fs.Usage()
		return ExitUsage
	default:
		in = sdk.EventIn{Type: *typ, Lat: *lat, Lon: *lon, Severity: opt(*severity), Description: opt(*description),
			RoadRef: opt(*roadRef), Subtype: opt(*subtype), ClientEventID: opt(*clientID)}
	}
	c, err := e.apiClient()
	if err != nil {
		return e.fail(err)
	}
	ev, _, err := c.Publish(ctx, in)
	if err != nil {
		return e.fail(err)
	}
	e.printJSON(ev)
	return ExitOK
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// areaFlags adds the flags of an area to fs.
func areaFlags(fs interface {
	Float64(string, float64, string) *float64
	String(string, string, string) *string
}) func() sdk.Area {
	lat := fs.Float64("lat", 0, "latitude of the centre")
	lon := fs.Float64("lon", 0, "longitude of the centre")
	radius := fs.Float64("radius", 1000, "metres")
	types := fs.String("types", "", "comma-separated types to keep (default: every type)")
	minConf := fs.Float64("min-confidence", 0, "keep events at least this trusted (0 to 1)")
	return func() sdk.Area {
		a := sdk.Area{Lat: *lat, Lon: *lon, RadiusM: *radius, MinConfidence: *minConf}
		if *types != "" {
			a.Types = strings.Split(*types, ",")
		}
		return a
	}
}

func query(ctx context.Context, e *Env, args []string) int {
	fs := e.flags("query", "-lat LAT -lon LON [-radius M] [-types T,T] [-min-confidence C] [-json]")
	area := areaFlags(fs)
	asJSON := fs.Bool("json", false, "print the events as JSON")
	if fs.Parse(args) != nil {
		return ExitUsage
	}
	c, err := e.apiClient()
	if err != nil {
		return e.fail(err)
	}
	a := area()
	evs, err := c.Query(ctx, a)
	if err != nil {
		return e.fail(err)
	}
	if *asJSON {
		e.printJSON(evs)
		return ExitOK
	}
	writeTable(e.Stdout, a, evs)
	return ExitOK
}

// writeTable writes events as a table, nearest first, with their distance from a's centre.
func writeTable(w io.Writer, a sdk.Area, evs []sdk.Event) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DISTANCE\tTYPE\tCONFIDENCE\t+/-\tEXPIRES\tROAD\tEVENT_ID")
	for _, ev := range evs {
		road := ""
		if ev.RoadRef != nil {
			road = *ev.RoadRef
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f%%\t%d/%d\t%s\t%s\t%s\n", metres(sdk.Distance(center(a), ev)), ev.Type, ev.Confidence*100,
			ev.ConfirmCount, ev.DenyCount, clock(ev.ExpiresAt), road, ev.EventID)
	}
	tw.Flush()
}

func metres(m float64) string {
	if m >= 1000 {
		return fmt.Sprintf("%.1f km", m/1000)
	}
	return fmt.Sprintf("%.0f m", m)
}

// clock is the time of day of an RFC 3339 time, UTC.
func clock(t string) string {
	if i := strings.IndexByte(t, 'T'); i >= 0 && len(t) >= i+9 {
		return t[i+1:i+9] + "Z"
	}
	return t
}

// onEvent parses the arguments of a command on one event (its flags, then its id) and returns
// the API client and the id; a code other than ExitOK ends the command.
func (e *Env) onEvent(fs *flag.FlagSet, args []string) (*sdk.Client, string, int) {
	if fs.Parse(args) != nil || fs.NArg() != 1 {
		fs.Usage()
		return nil, "", ExitUsage
	}
	c, err := e.apiClient()
	if err != nil {
		return nil, "", e.fail(err)
	}
	return c, fs.Arg(0), ExitOK
}

func get(ctx context.Context, e *Env, args []string) int {
	c, id, code := e.onEvent(e.flags("get", "EVENT_ID"), args)
	if code != ExitOK {
		return code
	}
	ev, err := c.Get(ctx, id)
	if err != nil {
		return e.fail(err)
	}
	e.printJSON(ev)
	return ExitOK
}

func signal(ctx context.Context, e *Env, args []string) int {
	fs := e.flags("signal", "-action confirm|deny -reporter TOKEN EVENT_ID")
	action := fs.String("action", "confirm", "confirm or deny")
	reporter := fs.String("reporter", "", "the reporting vehicle or person, as your system names it (required)")
	c, id, code := e.onEvent(fs, args)
	if code != ExitOK {
		return code
	}
	if *reporter == "" {
		fs.Usage()
		return ExitUsage
	}
	ev, err := c.Signal(ctx, id, sdk.SignalIn{Action: *action, ReporterToken: reporter})
	if err != nil {
		return e.fail(err)
	}
	e.printJSON(ev)
	return ExitOK
}

// revise restates one of the organisation's events: its position, and its severity and
// subtype as given (a revision states them all: docs/api.md §4.1 rule 5; flags left out keep
// what the event has).
func revise(ctx context.Context, e *Env, args []string) int {
	fs := e.flags("revise", "[-lat LAT -lon LON] [-severity S] EVENT_ID")
	lat := fs.Float64("lat", 0, "new latitude (with -lon)")
	lon := fs.Float64("lon", 0, "new longitude (with -lat)")
	severity := fs.String("severity", "", "low, medium or high; none clears it")
	c, id, code := e.onEvent(fs, args)
	if code != ExitOK {
		return code
	}
	ev, err := c.Get(ctx, id)
	if err != nil {
		return e.fail(err)
	}
	in := sdk.RevisionIn{Lat: ev.Lat, Lon: ev.Lon, Geometry: ev.Geometry, Severity: ev.Severity, Subtype: ev.Subtype}
	moved := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "lat", "lon":
			moved = true
		case "severity":
			in.Severity = opt(*severity)
			if *severity == "none" {
				in.Severity = nil
			}
		}
	})
	if moved {
		// A new point: the line, if any, moves with it.
		dLat, dLon := *lat-ev.Lat, *lon-ev.Lon
		in.Lat, in.Lon = *lat, *lon
		if ev.Geometry != nil {
			g := *ev.Geometry
			g.Coordinates = append([][2]float64(nil), g.Coordinates...)
			for i := range g.Coordinates {
				g.Coordinates[i] = [2]float64{g.Coordinates[i][0] + dLon, g.Coordinates[i][1] + dLat}
			}
			g.Coordinates[0] = [2]float64{*lon, *lat}
			in.Geometry = &g
		}
	}
	out, err := c.Revise(ctx, id, in)
	if err != nil {
		return e.fail(err)
	}
	e.printJSON(out)
	return ExitOK
}

func closeCmd(ctx context.Context, e *Env, args []string) int {
	c, id, code := e.onEvent(e.flags("close", "EVENT_ID"), args)
	if code != ExitOK {
		return code
	}
	ev, err := c.Close(ctx, id)
	if err != nil {
		return e.fail(err)
	}
	fmt.Fprintf(e.Stdout, "Closed %s: %s\n", ev.EventID, ev.Status)
	return ExitOK
}
