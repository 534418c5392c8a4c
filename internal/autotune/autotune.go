// Package autotune is the auto-tuner of topology.max.spout.pending that
// Twitter ran on Storm, which Storm never shipped: a deterministic state
// machine that, given the progress a spout made over each interval,
// chooses the most tuple trees it may keep in flight. docs/performance.md
// measures it against a sweep of fixed values (gale bench autotune).
//
// It is pure: no goroutines, no clock, no randomness. The caller (the
// spout executor, on a tick of the runtime's clock) measures the progress
// made since its last call (trees acked, or what the spout reports: the
// records a Kafka spout finished, the acks a JetStream spout sent) and the
// trees that timed out, and passes them to Observe (or the progress alone
// to Step), which returns the value to use until the next call. Progress
// must move with the work: a count that moves in steps of its own period
// (offsets committed once a second) aliases with the interval, and the
// rules below take the aliasing for falls in progress. A Tuner is not
// safe for concurrent use: it belongs to the spout's goroutine.
//
// # The rules
//
// Each Step compares the interval's progress with the last one's, calling
// it higher, lower or about the same (within Config.Tolerance, below),
// and takes one of three actions, as in the paper:
//
//   - Increase: the value grows by 25%, at least by 1.
//   - Decrease: the value shrinks by max(25%, the relative drop in
//     progress), at least by 1: a fall in progress to a tenth cuts the
//     value to a tenth.
//   - No change.
//
// The action depends on the last one and the comparison:
//
//	last \ progress   higher      same                    lower
//	(first step)      increase    increase                increase
//	increase          increase    back, no change         decrease
//	decrease          decrease    decrease                back, no change (*)
//	no change         increase    no change (5 → probe)   decrease
//
// "Back" restores the value before the last move and compares the next
// interval with the progress measured at that value, so that the recovery
// is not taken for a gain. An increase that brought no gain goes back
// (the paper's rule); so does a decrease that cost progress. A decrease that
// cost none is followed by another: the same progress with fewer trees in
// flight is better (less latency, fewer replays after a failure), so the
// value slides down until progress starts to fall, then steps back once.
//
// (*) Except after a decrease that answered a fall in progress, when
// progress falls again by more than that decrease's share of the value
// (plus the tolerance) and trees timed out over the interval (more than
// Tolerance of those that ended in it): the topology is still sinking
// (trees already queued too deep keep timing out), and the tuner
// decreases again instead of going back up into the flood. Without time
// outs a steeper fall is no flood: below the best value progress falls
// faster than the value wherever trees spend part of their time in
// flight outside the work (on the wire, in queues of acks), so the best value
// v·(work+transit)/work is where progress stops growing, and below it a
// cut of a quarter costs more than a quarter. Taking that for a flood
// cut the value again and again, to the floor, on a topology of a few
// executors of a short bolt (issue 22's Kafka bench: 8 executors, 2 ms).
//
// After five no-changes in a row the tuner probes: with an increase, as
// the paper says, unless an increase went back for want of a gain and no
// downward probe has gone back since, in which case with a decrease (at a
// bound, the way it can move). So at the best value the probes alternate,
// one up, one down. The downward probes, with the slide above, take the
// value from anywhere on a plateau where progress is flat down to where it
// starts to fall: a plateau of queueing (more in flight only waits
// longer), or one of a flood (the queues hold more than the bolts finish
// in a message timeout, so nearly every tree times out whatever the
// value). Upward probes alone would leave it there.
//
// A move that the bounds make void (an increase at Max, a decrease at Min)
// counts as a no-change.
//
// # About the same
//
// Progress p is about the same as the last interval's p0 when
// |p − p0| ≤ Tolerance·p0 (default 5%); when p0 is 0, only p = 0 is. Below
// the best value progress grows in proportion to the value, so a 25%
// increase shows as a 25% gain, five times the tolerance; above it
// progress stays flat, within the run-to-run noise of a steady topology
// over an interval (a few percent). The tolerance also bounds what the
// rules give away: the tuner stays at a value whose progress is within
// about Tolerance of the best it saw.
package autotune

import (
	"errors"
	"fmt"
	"math"
)

// Action is what a Step did to the value.
type Action uint8

const (
	// NoChange keeps the value.
	NoChange Action = iota
	// Increase raised the value by 25%, at least by 1.
	Increase
	// Decrease lowered it by max(25%, the relative drop in progress).
	Decrease
	// Back restored the value before the last increase or decrease, which
	// did not pay; it counts as a no-change.
	Back
)

// String returns "no-change", "increase", "decrease" or "back".
func (a Action) String() string {
	switch a {
	case NoChange:
		return "no-change"
	case Increase:
		return "increase"
	case Decrease:
		return "decrease"
	case Back:
		return "back"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Defaults of a Config's zero fields.
const (
	DefaultMin       = 1
	DefaultMax       = 1 << 20
	DefaultTolerance = 0.05
	// NoChangesBeforeProbe is how many no-changes in a row make the next
	// step a probe (the paper's five).
	NoChangesBeforeProbe = 5
)

// Config configures a Tuner. Zero fields take the defaults above.
type Config struct {
	// Start is the first value, clamped into [Min, Max].
	Start int
	// Min and Max bound the value.
	Min, Max int
	// Tolerance is the relative difference in progress under which two
	// intervals count as about the same, in [0, 1).
	Tolerance float64
}

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("autotune: bad config")

// Decision is what one Step saw and chose.
type Decision struct {
	Action Action
	// Old is the value before the step, New the value to use from now on.
	Old, New int
	// Progress is the interval's progress, Baseline what it was compared
	// with (the last interval's, or after a Back the one measured at the
	// value restored); HasBaseline is false at the first step.
	Progress, Baseline int64
	HasBaseline        bool
}

// Changed reports whether the step changed the value.
func (d Decision) Changed() bool { return d.Old != d.New }

// Tuner chooses max spout pending from progress. Not safe for concurrent
// use.
type Tuner struct {
	min, max int
	tol      float64

	value int
	steps int64

	last     Action // the last step's action; Back is recorded as NoChange
	baseline int64  // the progress the next step is compared with
	// before and beforeProgress are the value before the last increase or
	// decrease and the progress measured at it, for Back.
	before         int
	beforeProgress int64
	noChanges      int  // no-changes in a row
	upFailed       bool // the last increase brought no gain and went back
	probing        bool // the last move was a probe: if it goes back, the next probe turns
	// cut is the share the last decrease took off the value when it
	// answered a fall in progress; 0 when it was a probe or followed a
	// decrease that cost nothing.
	cut float64
}

// New returns a Tuner for c, or an error wrapping ErrConfig that names the
// field at fault.
func New(c Config) (*Tuner, error) {
	if c.Min == 0 {
		c.Min = DefaultMin
	}
	if c.Max == 0 {
		c.Max = DefaultMax
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	switch {
	case c.Min < 1:
		return nil, fmt.Errorf("%w: Min must be ≥ 1, got %d", ErrConfig, c.Min)
	case c.Max < c.Min:
		return nil, fmt.Errorf("%w: Max must be ≥ Min (%d), got %d", ErrConfig, c.Min, c.Max)
	case !(c.Tolerance >= 0 && c.Tolerance < 1):
		return nil, fmt.Errorf("%w: Tolerance must be in [0, 1), got %v", ErrConfig, c.Tolerance)
	case c.Start < 0:
		return nil, fmt.Errorf("%w: Start must be ≥ 0 (0 = Min), got %d", ErrConfig, c.Start)
	}
	return &Tuner{min: c.Min, max: c.Max, tol: c.Tolerance, value: min(max(c.Start, c.Min), c.Max)}, nil
}

// Value is the max spout pending to use.
func (t *Tuner) Value() int { return t.value }

// Interval is what the caller measured over the interval since its last
// call.
type Interval struct {
	// Progress is the progress made (a negative one counts as 0: a
	// counter that started again).
	Progress int64
	// TimedOut is the trees that timed out (topology.message.timeout.secs)
	// over the interval: the mark of a flood.
	TimedOut int64
}

// Step is Observe of an interval with progress and no tree timed out.
func (t *Tuner) Step(progress int64) Decision { return t.Observe(Interval{Progress: progress}) }

// Observe takes what the interval since the last call measured and
// returns the decision; the new value is also Value's from then on.
func (t *Tuner) Observe(iv Interval) Decision {
	progress := max(iv.Progress, 0)
	d := Decision{Old: t.value, Progress: progress, Baseline: t.baseline, HasBaseline: t.steps > 0}
	t.steps++
	if !d.HasBaseline {
		return t.finish(d, t.move(Increase, progress, false), progress)
	}
	cmp := t.compare(progress, t.baseline)
	var a Action
	switch t.last {
	case Increase:
		switch cmp {
		case 1:
			a = Increase
		case 0:
			a = Back
			t.upFailed = true
		default:
			a = Decrease
		}
	case Decrease:
		switch {
		case cmp >= 0:
			a = Decrease
		case t.cut > 0 && t.drop(progress) > t.cut+t.tol && t.flooding(progress, iv.TimedOut):
			a = Decrease // still falling, by more than the cut explains, and timing out
		default:
			a = Back
			if t.probing {
				t.upFailed = false
			}
		}
	default: // NoChange
		switch cmp {
		case 1:
			a = Increase
		case 0:
			a = NoChange
		default:
			a = Decrease
		}
	}
	probe := false
	if a == NoChange && t.noChanges >= NoChangesBeforeProbe {
		a, probe = Increase, true
		if t.upFailed && t.value > t.min || t.value == t.max {
			a = Decrease
		}
	}
	if a == Back {
		t.value = t.before
		t.last, t.noChanges, t.probing = NoChange, t.noChanges+1, false
		t.baseline = t.beforeProgress
		d.Action, d.New = Back, t.value
		return d
	}
	a = t.move(a, progress, probe)
	return t.finish(d, a, progress)
}

// move applies an increase or a decrease, sized by the fall in progress
// from the baseline, and returns the action taken: NoChange when the
// bounds void the move.
func (t *Tuner) move(a Action, progress int64, probe bool) Action {
	next, drop := t.value, t.drop(progress)
	switch a {
	case Increase:
		next = min(t.max, t.value+max(1, t.value/4))
	case Decrease:
		f := max(0.25, drop)
		next = max(t.min, min(t.value-1, int(math.Floor(float64(t.value)*(1-f)+1e-9))))
	}
	if a == NoChange || next == t.value {
		return NoChange
	}
	t.cut = 0
	if a == Decrease && !probe && t.compare(progress, t.baseline) < 0 {
		t.cut = float64(t.value-next) / float64(t.value)
	}
	t.before, t.beforeProgress = t.value, progress
	t.value = next
	t.probing = probe || (t.probing && a == t.last)
	return a
}

func (t *Tuner) finish(d Decision, a Action, progress int64) Decision {
	if a == NoChange {
		t.noChanges++
		t.probing = false
	} else {
		t.noChanges = 0
	}
	t.last, t.baseline = a, progress
	d.Action, d.New = a, t.value
	return d
}

// compare returns 1, 0 or -1 for progress higher than, about the same as
// or lower than base.
func (t *Tuner) compare(progress, base int64) int {
	diff := float64(progress - base)
	if math.Abs(diff) <= t.tol*float64(base) {
		return 0
	}
	if diff > 0 {
		return 1
	}
	return -1
}

// flooding reports whether more than Tolerance of the trees that ended
// over an interval timed out.
func (t *Tuner) flooding(progress, timedOut int64) bool {
	return timedOut > 0 && float64(timedOut) > t.tol*float64(progress+timedOut)
}

// drop is the relative fall in progress from the baseline, 0 if none.
func (t *Tuner) drop(progress int64) float64 {
	if t.baseline <= 0 || progress >= t.baseline {
		return 0
	}
	return float64(t.baseline-progress) / float64(t.baseline)
}
