package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/roadevents/roadevents/shared/sdk"
)

// watch draws the events around a point as a table that updates itself as the stream changes
// them (sdk.Watch: snapshot, deltas, expiry), until interrupted. On a terminal each state
// replaces the last (ANSI: home, clear); with -plain each is written below the last.
func watch(ctx context.Context, e *Env, args []string) int {
	fs := e.flags("watch", "-lat LAT -lon LON [-radius M] [-types T,T] [-min-confidence C] [-plain]")
	area := areaFlags(fs)
	plain := fs.Bool("plain", false, "write each state below the last instead of redrawing")
	if fs.Parse(args) != nil {
		return ExitUsage
	}
	c, err := e.apiClient()
	if err != nil {
		return e.fail(err)
	}
	a := area()
	err = c.Watch(ctx, a, func(s sdk.State) {
		if !*plain {
			fmt.Fprint(e.Stdout, "\x1b[H\x1b[2J")
		}
		fmt.Fprintf(e.Stdout, "%d events within %s of %.5f, %.5f at %s", len(s.Events), metres(a.RadiusM), a.Lat, a.Lon,
			time.Now().UTC().Format("15:04:05Z"))
		if s.Dropped > 0 {
			fmt.Fprintf(e.Stdout, " (%d changes dropped by the service; the next snapshot restores them)", s.Dropped)
		}
		fmt.Fprintln(e.Stdout)
		writeTable(e.Stdout, a, s.Events)
		if *plain {
			fmt.Fprintln(e.Stdout)
		}
	})
	if ctx.Err() != nil {
		return ExitOK // interrupted
	}
	return e.fail(err)
}
