package gale

import (
	"fmt"
	"time"

	"github.com/gale-stream/gale/internal/autotune"
)

// autotuneStart is the first max spout pending per task of an auto-tuned
// spout whose topology.max.spout.pending is unset: ten batches of the
// default topology.producer.batch.size in flight, which a topology that
// completes a few hundred trees a second drains well inside the default
// message timeout, so a start too high costs a few intervals, not a
// flood of timeouts; a start too low climbs by 25% an interval.
const autotuneStart = 1000

// newTuner sets up the auto-tuner for the executor's tasks tasks when the
// spout's config turns it on and acking is on (without acking there are
// no trees to limit). It starts from topology.max.spout.pending if set.
// The feedback budget of cycles (feedback.go) counts the value as it
// moves: the key's value is in its fixed part, and the moves, or the
// whole value when the key is unset, in its automatic part.
func (x *spoutExec) newTuner(tasks int) {
	conf := x.comp.conf
	if !conf.Bool(TopologyMaxSpoutPendingAutotune) || !x.rt.acking {
		return
	}
	start := x.maxPending
	if start == 0 {
		start = autotuneStart
	}
	tu, err := autotune.New(autotune.Config{Start: start, Max: max(autotune.DefaultMax, start)})
	if err != nil {
		panic(fmt.Sprintf("gale: %v", err)) // the config keys' checks rule this out
	}
	if x.maxPending == 0 {
		x.rt.fbBudget.auto.Add(int64(tu.Value() * tasks))
	} else {
		x.rt.fbBudget.auto.Add(int64((tu.Value() - x.maxPending) * tasks))
	}
	x.tuner = tu
	x.maxPending = tu.Value()
	x.tunePeriod = x.rt.timeout
	if secs, ok := conf.Int(TopologyMaxSpoutPendingAutotuneIntervalSecs); ok {
		x.tunePeriod = time.Duration(secs) * time.Second
	}
	x.rt.log.Info("max spout pending auto-tuned", "component", x.comp.id, "start", x.maxPending,
		"interval", x.tunePeriod)
}

// tuneInterval is the period of the executor's tune ticker: the
// auto-tuner's, the automatic limit's (see retune), or 0 for none.
func (x *spoutExec) tuneInterval() time.Duration {
	switch {
	case x.tuner != nil:
		return x.tunePeriod
	case x.autoLimit > 0:
		return autoTuneInterval(x.rt.timeout)
	}
	return 0
}

// progress is the executor's cumulative progress: the sum of its tasks'
// ProgressReporter values if the spout implements it, else its trees
// acked.
func (x *spoutExec) progress() int64 {
	if _, ok := x.tasks[0].spout.(ProgressReporter); !ok {
		return x.acked
	}
	var n int64
	for _, t := range x.tasks {
		if r, ok := t.spout.(ProgressReporter); ok {
			x.call(t, func() { n += r.Progress() })
		}
	}
	return n
}

// restartTuneWindow starts a new measuring window now: when the spout is
// activated, so that an interval spent inactive is not taken for a lack
// of progress.
func (x *spoutExec) restartTuneWindow() {
	if x.tuner == nil {
		return
	}
	x.tuneAt, x.tuneProgress = x.rt.clock.Now().UnixNano(), x.progress()
	x.tuneTimedOut = x.failedBy[failedTimeout]
}

// autotune, on a tune tick, passes the progress made since the window
// started and the trees that timed out meanwhile, scaled to the tune
// interval, to the tuner and applies its choice. A tick while the spout is inactive restarts the window without
// a step; so does one less than half an interval into it (a system
// ticker's tick that came late, then one on time), which keeps its
// progress for the next.
func (x *spoutExec) autotune() {
	now := x.rt.clock.Now().UnixNano()
	if !x.active || x.tuneAt == 0 {
		x.restartTuneWindow()
		return
	}
	elapsed := time.Duration(now - x.tuneAt)
	if elapsed < x.tunePeriod/2 {
		return
	}
	total, timedOut := x.progress(), x.failedBy[failedTimeout]
	delta, late := total-x.tuneProgress, timedOut-x.tuneTimedOut
	if elapsed != x.tunePeriod {
		scale := float64(x.tunePeriod) / float64(elapsed)
		delta, late = int64(float64(delta)*scale), int64(float64(late)*scale)
	}
	x.tuneAt, x.tuneProgress, x.tuneTimedOut = now, total, timedOut
	d := x.tuner.Observe(autotune.Interval{Progress: delta, TimedOut: late})
	if !d.Changed() {
		x.rt.log.Debug("max spout pending kept", "component", x.comp.id, "value", d.New,
			"action", d.Action.String(), "progress", d.Progress, "baseline", d.Baseline)
		return
	}
	x.rt.log.Info("max spout pending tuned", "component", x.comp.id, "old", d.Old, "new", d.New,
		"action", d.Action.String(), "progress", d.Progress, "baseline", d.Baseline)
	x.maxPending = d.New
	x.rt.fbBudget.auto.Add(int64((d.New - d.Old) * len(x.tasks)))
	x.pubMaxPending.Store(int64(d.New * len(x.tasks)))
	if d.New > d.Old {
		x.unquiet()
	}
}
