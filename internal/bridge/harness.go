package bridge

import "time"

// What galetest's mock tuples and bolt harness reach in package gale.
var (
	// NewTuple returns a *gale.Tuple from task of component on stream,
	// with the given fields and values (as many of each, else it panics),
	// as if that task had emitted it. It belongs to no tree.
	NewTuple func(component, stream string, task int, fields []string, values []any) any

	// NewTick returns a tick tuple, a *gale.Tuple that IsTick, carrying
	// secs as its one value (rate_secs), as an executor delivers one.
	NewTick func(secs int) any

	// NewBoltHarness makes one task of bolt, a gale.Bolt or
	// gale.BasicBolt, as a topology of that one bolt, whose id is
	// component, under the topology config conf, would make it, and
	// prepares it. opts is a *gale.RunOptions (its Logger and Clock);
	// its hooks are the harness's own. Nothing runs until the harness's
	// methods are called.
	NewBoltHarness func(bolt any, component string, conf map[string]any, opts any) (BoltHarness, error)
)

// BoltHarness runs one bolt task on the caller's goroutine. It is not safe
// for concurrent use.
type BoltHarness interface {
	// Context is the task's *gale.TopologyContext.
	Context() any
	// TickSecs is the bolt's topology.tick.tuple.freq.secs, 0 if unset.
	TickSecs() int
	// Execute calls the bolt's Execute with t, a *gale.Tuple, and
	// returns what it did. A panic is the caller's.
	Execute(t any) HarnessRecord
	// Cleanup calls the bolt's Cleanup, returns what it did, and ends the
	// task's Context.
	Cleanup() HarnessRecord
}

// HarnessRecord is what a bolt did in one call.
type HarnessRecord struct {
	Emits  []HarnessEmit // in order
	Done   []HarnessDone // acks and fails, in order
	Resets []any         // the *gale.Tuple given to ResetTimeout, in order
	Errors []HarnessError
}

// HarnessEmit is one emit.
type HarnessEmit struct {
	Stream  string
	Values  []any // a copy
	Anchors []any // the executed *gale.Tuple it is anchored on
}

// HarnessDone is one ack or fail.
type HarnessDone struct {
	Tuple  any // the executed *gale.Tuple
	Failed bool
	Err    error // the error the bolt failed it with
}

// HarnessError is an error the task reported (ReportError, a rejected
// emit, the errors of BoltCollector.Fail).
type HarnessError struct {
	Task int
	Time time.Time
	Err  error
}
