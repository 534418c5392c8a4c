package galetest

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/internal/bridge"
)

// Tuple returns a tuple from component on stream with the given values, as
// a bolt's Execute receives one: the mock tuple of Storm's
// MockTupleHelpers, for a bolt's unit test (see BoltHarness). Its fields
// are named v0, v1...; use TupleWithFields when the bolt reads values by
// field name. Its SourceTask is 0. Use Tick for a tick tuple: a tuple from
// __system on __tick made here is not one.
func Tuple(component, stream string, values ...any) *gale.Tuple {
	fields := make([]string, len(values))
	for i := range fields {
		fields[i] = fmt.Sprintf("v%d", i)
	}
	return TupleWithFields(component, stream, fields, values...)
}

// TupleWithFields is Tuple with the stream's field names, so that
// ValueByField and the Get...ByField getters work. It panics if there are
// not as many values as fields.
func TupleWithFields(component, stream string, fields []string, values ...any) *gale.Tuple {
	return bridge.NewTuple(component, stream, 0, fields, values).(*gale.Tuple)
}

// Tick returns a tick tuple: IsTick reports true, as for the ticks of
// topology.tick.tuple.freq.secs. Its one value, rate_secs, is 0;
// BoltHarness.Tick executes one carrying the bolt's frequency.
func Tick() *gale.Tuple { return bridge.NewTick(0).(*gale.Tuple) }

// HarnessOptions configure NewBoltHarness.
type HarnessOptions struct {
	// Component is the bolt's id; default "bolt".
	Component string
	// Config is the topology config layer the bolt sees.
	Config gale.Config
	// Clock is the clock TopologyContext.Now reads; default a new Clock
	// at 2026-01-01T00:00:00Z, which only the test moves.
	Clock *Clock
	// Logger receives the task's logs; default: discarded.
	Logger *slog.Logger
}

// Emit is one tuple a bolt emitted under a BoltHarness.
type Emit struct {
	Stream string
	Values gale.Values
	// Anchors are the tuples, among those executed, the emit is anchored
	// on; none for an unanchored emit.
	Anchors []*gale.Tuple
}

// TupleFailure is an input a bolt failed under a BoltHarness.
type TupleFailure struct {
	Tuple *gale.Tuple
	// Err is the error given to BoltCollector.Fail, or returned by a
	// BasicBolt's Execute.
	Err error
}

// BoltHarness runs one task of a bolt without a topology, so that its
// Execute can be unit-tested with mock tuples and ticks, as Storm users
// test a bolt with a mocked OutputCollector: the harness prepares the bolt
// with a real TopologyContext and BoltCollector, calls Execute on the
// test's goroutine, and records what the bolt emitted, acked and failed.
// A panic in the bolt is the test's.
//
// The emits go nowhere: a bolt's EmitDirect fails with gale.ErrDirect (no
// task subscribes) and shows among Errors. A BoltHarness is not safe for
// concurrent use.
type BoltHarness struct {
	h     bridge.BoltHarness
	clock *Clock
	emits []Emit
	acked []*gale.Tuple
	fails []TupleFailure
	errs  []gale.ComponentError
	reset []*gale.Tuple
	comp  string
}

// NewBoltHarness prepares one task of bolt, a gale.Bolt or a
// gale.BasicBolt, as the only task of its component. The bolt declares its
// output fields as in a topology; a bad declaration or a Prepare error is
// returned.
func NewBoltHarness(bolt any, opts HarnessOptions) (*BoltHarness, error) {
	if opts.Component == "" {
		opts.Component = "bolt"
	}
	if opts.Clock == nil {
		opts.Clock = NewClock(defaultStart)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ro := gale.RunOptions{Logger: opts.Logger, Clock: opts.Clock}
	h, err := bridge.NewBoltHarness(bolt, opts.Component, opts.Config, &ro)
	if err != nil {
		return nil, err
	}
	return &BoltHarness{h: h, clock: opts.Clock, comp: opts.Component}, nil
}

// Context is the TopologyContext the bolt was prepared with.
func (b *BoltHarness) Context() *gale.TopologyContext { return b.h.Context().(*gale.TopologyContext) }

// Clock is the clock the bolt's TopologyContext.Now reads.
func (b *BoltHarness) Clock() *Clock { return b.clock }

// Execute calls the bolt's Execute with t and records what it did.
func (b *BoltHarness) Execute(t *gale.Tuple) { b.record(b.h.Execute(t)) }

// Tick executes a tick tuple carrying the bolt's
// topology.tick.tuple.freq.secs (0 if unset), as the topology would every
// that many seconds. The harness does not move the clock.
func (b *BoltHarness) Tick() {
	b.Execute(bridge.NewTick(b.h.TickSecs()).(*gale.Tuple))
}

// Cleanup calls the bolt's Cleanup and ends its TopologyContext's Context.
// Call it once, at the end of the test.
func (b *BoltHarness) Cleanup() { b.record(b.h.Cleanup()) }

func (b *BoltHarness) record(r bridge.HarnessRecord) {
	for _, e := range r.Emits {
		em := Emit{Stream: e.Stream, Values: e.Values}
		for _, a := range e.Anchors {
			em.Anchors = append(em.Anchors, a.(*gale.Tuple))
		}
		b.emits = append(b.emits, em)
	}
	for _, d := range r.Done {
		t := d.Tuple.(*gale.Tuple)
		if d.Failed {
			b.fails = append(b.fails, TupleFailure{Tuple: t, Err: d.Err})
		} else {
			b.acked = append(b.acked, t)
		}
	}
	for _, t := range r.Resets {
		b.reset = append(b.reset, t.(*gale.Tuple))
	}
	for _, e := range r.Errors {
		b.errs = append(b.errs, gale.ComponentError{Component: b.comp, Task: e.Task, Time: e.Time, Err: e.Err})
	}
}

// Emits returns every emit so far, in order.
func (b *BoltHarness) Emits() []Emit { return slices.Clone(b.emits) }

// Emitted returns the values emitted so far on stream (default: the
// default stream), in order.
func (b *BoltHarness) Emitted(stream ...string) []gale.Values {
	s := gale.DefaultStream
	if len(stream) > 0 {
		s = stream[0]
	}
	var out []gale.Values
	for _, e := range b.emits {
		if e.Stream == s {
			out = append(out, e.Values)
		}
	}
	return out
}

// Acked returns the tuples the bolt acked so far, in order.
func (b *BoltHarness) Acked() []*gale.Tuple { return slices.Clone(b.acked) }

// Failed returns the tuples the bolt failed so far, in order.
func (b *BoltHarness) Failed() []TupleFailure { return slices.Clone(b.fails) }

// ResetTimeouts returns the tuples the bolt called ResetTimeout on.
func (b *BoltHarness) ResetTimeouts() []*gale.Tuple { return slices.Clone(b.reset) }

// Errors returns the errors the bolt reported (ReportError), caused (a
// rejected emit) or failed inputs with, in order.
func (b *BoltHarness) Errors() []gale.ComponentError { return slices.Clone(b.errs) }

// Interactions is the number of things the bolt did with its collector so
// far: emits, acks, fails, timeout resets and errors. Zero is Storm's
// verifyNoInteractions(collector).
func (b *BoltHarness) Interactions() int {
	return len(b.emits) + len(b.acked) + len(b.fails) + len(b.reset) + len(b.errs)
}

// Reset forgets what was recorded so far.
func (b *BoltHarness) Reset() {
	b.emits, b.acked, b.fails, b.reset, b.errs = nil, nil, nil, nil, nil
}
