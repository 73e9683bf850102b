package stream

import "time"

// Ticker delivers ticks on C until stopped, as *time.Ticker and *time.Timer do.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Timers makes the tickers of a connection: its keepalive (every KeepaliveInterval) and its
// end of life (once, after MaxConnectionAge). They are injected so that tests fire them at
// will instead of sleeping (streamtest.Timers).
type Timers interface {
	// NewTicker ticks every d.
	NewTicker(d time.Duration) Ticker
	// NewTimer ticks once, after d.
	NewTimer(d time.Duration) Ticker
}

// SystemTimers are the real tickers and timers of package time.
var SystemTimers Timers = systemTimers{}

type systemTimers struct{}

func (systemTimers) NewTicker(d time.Duration) Ticker { return sysTicker{time.NewTicker(d)} }
func (systemTimers) NewTimer(d time.Duration) Ticker  { return sysTimer{time.NewTimer(d)} }

type sysTicker struct{ t *time.Ticker }

func (t sysTicker) C() <-chan time.Time { return t.t.C }
func (t sysTicker) Stop()               { t.t.Stop() }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop()               { t.t.Stop() }
