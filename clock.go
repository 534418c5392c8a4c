package gale

import "time"

// Clock is the runtime's source of time: message timeouts, tick tuples and
// the acker's expiry all read it. The default is the system clock;
// galetest.Clock is a manual one that makes timeout tests instant.
type Clock interface {
	Now() time.Time
	// NewTicker returns a ticker firing every d, like time.NewTicker.
	NewTicker(d time.Duration) Ticker
}

// Ticker is the subset of time.Ticker the runtime uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTicker(d time.Duration) Ticker { return sysTicker{time.NewTicker(d)} }

type sysTicker struct{ t *time.Ticker }

func (s sysTicker) C() <-chan time.Time { return s.t.C }
func (s sysTicker) Stop()               { s.t.Stop() }

// newTicker makes a ticker of the runtime's clock and tells it, if it
// wants to know, that the runtime reports each tick handled (tickDone).
// galetest's manual Clock uses both to wait until the topology has caught
// up with the time it was moved to.
func (rt *runtime) newTicker(d time.Duration) Ticker {
	t := rt.clock.NewTicker(d)
	if tr, ok := t.(interface{ TrackDone() }); ok {
		tr.TrackDone()
	}
	return t
}

// tickDone tells t, if it wants to know, that the tick it sent has been
// handled and what it caused flushed.
func tickDone(t Ticker) {
	if d, ok := t.(interface{ TickDone() }); ok {
		d.TickDone()
	}
}

// nilTicker never fires.
type nilTicker struct{}

func (nilTicker) C() <-chan time.Time { return nil }
func (nilTicker) Stop()               {}
