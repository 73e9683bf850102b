package cli

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/sdk"
)

// bundled are the scenarios that come with the command (docs/cli.md §3).
//
//go:embed scenarios/*.json
var bundled embed.FS

// Scenario is a story of events played into the sandbox: each step, at its time from the
// start, publishes an event, confirms or denies it from several reporters, revises it or
// closes it.
type Scenario struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Timeline    []Step `json:"timeline"`
}

// Step is one action of a scenario: exactly one of Publish, Confirm, Deny, Revise, Close.
type Step struct {
	At       string          `json:"at"`
	Event    string          `json:"event"`
	Publish  *sdk.EventIn    `json:"publish,omitempty"`
	Confirm  int             `json:"confirm,omitempty"`
	Deny     int             `json:"deny,omitempty"`
	Revise   *sdk.RevisionIn `json:"revise,omitempty"`
	Close    bool            `json:"close,omitempty"`
	at       time.Duration
	position int
}

// LoadScenario reads a bundled scenario by name, or a file.
func LoadScenario(name string) (Scenario, error) {
	raw, err := bundled.ReadFile(path.Join("scenarios", name+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		raw, err = os.ReadFile(name)
	}
	if err != nil {
		return Scenario{}, fmt.Errorf("no bundled scenario %q and no such file: %w", name, err)
	}
	var s Scenario
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, fmt.Errorf("scenario %s: %w", name, err)
	}
	return s, s.check()
}

// check refuses a scenario that cannot be played: a step without exactly one action, a time
// that is not a duration, an action on an event before it is published.
func (s *Scenario) check() error {
	published := map[string]bool{}
	for i := range s.Timeline {
		st := &s.Timeline[i]
		d, err := time.ParseDuration(st.At)
		if err != nil || d < 0 {
			return fmt.Errorf("step %d: at %q: want a duration such as 90s", i+1, st.At)
		}
		st.at, st.position = d, i+1
		actions := 0
		for _, set := range []bool{st.Publish != nil, st.Confirm > 0, st.Deny > 0, st.Revise != nil, st.Close} {
			if set {
				actions++
			}
		}
		switch {
		case st.Event == "":
			return fmt.Errorf("step %d: no event named", i+1)
		case actions != 1:
			return fmt.Errorf("step %d: want exactly one of publish, confirm, deny, revise, close", i+1)
		case st.Publish != nil && published[st.Event]:
			return fmt.Errorf("step %d: %s is published twice", i+1, st.Event)
		case st.Publish == nil && !published[st.Event]:
			return fmt.Errorf("step %d: %s is not published before it", i+1, st.Event)
		}
		published[st.Event] = true
	}
	slices.SortStableFunc(s.Timeline, func(a, b Step) int { return int(a.at - b.at) })
	return nil
}

// move shifts every position of the scenario by dLat, dLon.
func (s *Scenario) move(dLat, dLon float64) {
	shift := func(lat, lon *float64, g *event.LineString) {
		*lat += dLat
		*lon += dLon
		if g != nil {
			for i, c := range g.Coordinates {
				g.Coordinates[i] = [2]float64{c[0] + dLon, c[1] + dLat}
			}
		}
	}
	for _, st := range s.Timeline {
		if p := st.Publish; p != nil {
			shift(&p.Lat, &p.Lon, p.Geometry)
		}
		if r := st.Revise; r != nil {
			shift(&r.Lat, &r.Lon, r.Geometry)
		}
	}
}

// simulate plays a scenario into the sandbox, in real time or faster.
func simulate(ctx context.Context, e *Env, args []string) int {
	fs := e.flags("simulate", "[-speed N] [-at LAT,LON] [-list] SCENARIO (a bundled name or a JSON file)")
	speed := fs.Float64("speed", 1, "how many times faster than real time")
	at := fs.String("at", "", "move the scenario so that its first event is at LAT,LON")
	list := fs.Bool("list", false, "list the bundled scenarios")
	if fs.Parse(args) != nil {
		return ExitUsage
	}
	if *list {
		entries, _ := bundled.ReadDir("scenarios")
		for _, en := range entries {
			name := strings.TrimSuffix(en.Name(), ".json")
			s, err := LoadScenario(name)
			if err != nil {
				return e.fail(err)
			}
			fmt.Fprintf(e.Stdout, "%-15s %s\n", name, s.Title)
		}
		return ExitOK
	}
	if fs.NArg() != 1 || *speed <= 0 {
		fs.Usage()
		return ExitUsage
	}
	s, err := LoadScenario(fs.Arg(0))
	if err != nil {
		return e.fail(err)
	}
	if *at != "" {
		lat, lon, err := parseLatLon(*at)
		if err != nil || len(s.Timeline) == 0 {
			return e.fail(fmt.Errorf("-at %q: want LAT,LON", *at))
		}
		first := s.Timeline[0].Publish
		s.move(lat-first.Lat, lon-first.Lon)
	}
	c, err := e.apiClient()
	if err != nil {
		return e.fail(err)
	}
	fmt.Fprintf(e.Stdout, "%s: %s\n", s.Name, s.Title)
	if err := play(ctx, e, c, s, *speed); err != nil {
		return e.fail(err)
	}
	return ExitOK
}

func parseLatLon(s string) (float64, float64, error) {
	a, b, ok := strings.Cut(s, ",")
	lat, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	lon, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, errors.New("want LAT,LON")
	}
	return lat, lon, nil
}

// errLive is a scenario started with a live key: its events would be on the live network.
var errLive = errors.New("the key is a live key: scenarios play into the sandbox only; use a sandbox key (roadevents keys issue -env sandbox)")

// play runs s's timeline, each step at its time divided by speed.
func play(ctx context.Context, e *Env, c *sdk.Client, s Scenario, speed float64) error {
	start := time.Now()
	ids := map[string]string{}
	reporters := map[string]int{}
	for _, st := range s.Timeline {
		wait := time.Until(start.Add(time.Duration(float64(st.at) / speed)))
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		id := ids[st.Event]
		var ev sdk.Event
		var err error
		var did string
		switch {
		case st.Publish != nil:
			in := *st.Publish
			cid := "sim-" + s.Name + "-" + st.Event + "-" + strconv.FormatInt(start.UnixNano(), 36)
			in.ClientEventID = &cid
			ev, _, err = c.Publish(ctx, in)
			if err == nil && ev.Environment != event.EnvironmentSandbox {
				// A live key: take the event off the network at once, and stop.
				c.Close(ctx, ev.EventID)
				return errLive
			}
			ids[st.Event] = ev.EventID
			did = "published " + ev.Type
		case st.Confirm > 0 || st.Deny > 0:
			action, n := event.ActionConfirm, st.Confirm
			if st.Deny > 0 {
				action, n = event.ActionDeny, st.Deny
			}
			for range n {
				reporters[st.Event]++
				reporter := fmt.Sprintf("sim-%s-%d", st.Event, reporters[st.Event])
				if ev, err = c.Signal(ctx, id, sdk.SignalIn{Action: action, ReporterToken: &reporter}); err != nil {
					break
				}
			}
			did = fmt.Sprintf("%s × %d", action, n)
		case st.Revise != nil:
			ev, err = c.Revise(ctx, id, *st.Revise)
			did = "revised"
		case st.Close:
			ev, err = c.Close(ctx, id)
			did = "closed"
		}
		if err != nil {
			return fmt.Errorf("step %d (%s %s): %s", st.position, st.Event, did, describe(err))
		}
		fmt.Fprintf(e.Stdout, "%8s  %-8s %-22s %s  confidence %.0f%%  %s\n", st.at, st.Event, did, ev.EventID, ev.Confidence*100, ev.Status)
	}
	return nil
}
