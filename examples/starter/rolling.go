// Package starter ports storm-starter's topologies and bolts to Gale, as a
// Storm user would port them: RollingCountBolt and the tools it counts
// with, so far.
package starter

import (
	"github.com/gale-stream/gale"
)

// RollingCountBolt counts objects over a sliding window, as
// storm-starter's: every EmitFrequencySecs (a tick tuple) it emits, for
// each object counted in the last WindowLengthSecs, the object, its count
// and the actual length of the window in seconds (the window is shorter
// while it fills up). The object is an input's first value; inputs are
// acked once counted. Ticks are not acked: they belong to no tree.
type RollingCountBolt struct {
	gale.BaseBolt
	// WindowLengthSecs is the window's length; default 300.
	WindowLengthSecs int
	// EmitFrequencySecs is how often it emits, and the length of one
	// slot of the window; default 60.
	EmitFrequencySecs int

	counter *SlidingWindowCounter[any]
	tracker *NthLastModifiedTimeTracker
	tc      *gale.TopologyContext
}

// Storm's defaults: a 5-minute window in 5 slots.
const (
	numWindowChunks           = 5
	defaultSlidingWindowSecs  = numWindowChunks * 60
	defaultEmitFrequencySecs  = defaultSlidingWindowSecs / numWindowChunks
	rollingCountWindowWarning = "actual window length differs from the configured one (expected while the window fills up)"
)

// NewRollingCountBolt returns a bolt over a window of windowSecs seconds
// emitting every emitSecs.
func NewRollingCountBolt(windowSecs, emitSecs int) *RollingCountBolt {
	return &RollingCountBolt{WindowLengthSecs: windowSecs, EmitFrequencySecs: emitSecs}
}

func (b *RollingCountBolt) lengths() (window, emit int) {
	window, emit = b.WindowLengthSecs, b.EmitFrequencySecs
	if window <= 0 {
		window = defaultSlidingWindowSecs
	}
	if emit <= 0 {
		emit = defaultEmitFrequencySecs
	}
	return window, emit
}

// DeclareOutputFields declares obj, count and actualWindowLengthInSeconds.
func (*RollingCountBolt) DeclareOutputFields(d gale.OutputDeclarer) {
	d.Declare("obj", "count", "actualWindowLengthInSeconds")
}

// ComponentConfiguration sets the bolt's tick frequency to
// EmitFrequencySecs, as Storm's getComponentConfiguration.
func (b *RollingCountBolt) ComponentConfiguration() gale.Config {
	_, emit := b.lengths()
	return gale.Config{gale.TopologyTickTupleFreqSecs: emit}
}

// Prepare sets up the window.
func (b *RollingCountBolt) Prepare(tc *gale.TopologyContext, c *gale.BoltCollector) error {
	b.Collector, b.tc = c, tc
	window, emit := b.lengths()
	chunks := window / emit
	b.counter = NewSlidingWindowCounter[any](chunks)
	b.tracker = NewNthLastModifiedTimeTracker(chunks, tc.Now)
	return nil
}

// Execute counts an input, or on a tick emits the window's counts.
func (b *RollingCountBolt) Execute(t *gale.Tuple) {
	if t.IsTick() {
		b.emitCurrentWindowCounts()
		return
	}
	b.counter.IncrementCount(t.Value(0))
	b.Collector.Ack(t)
}

func (b *RollingCountBolt) emitCurrentWindowCounts() {
	counts := b.counter.GetCountsThenAdvanceWindow()
	actual := b.tracker.SecondsSinceOldestModification()
	b.tracker.MarkAsModified()
	if window, _ := b.lengths(); actual != window {
		b.tc.Logger().Debug(rollingCountWindowWarning, "actual_secs", actual, "expected_secs", window)
	}
	for obj, n := range counts {
		b.Collector.Emit(nil, obj, n, actual)
	}
}
