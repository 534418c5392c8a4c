package gale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultStream is the id of the stream every component has.
const DefaultStream = "default"

// Values is a convenience name for the values of one tuple.
type Values = []any

// Spout is a source of tuples. All methods are called from the task's own
// goroutine, never concurrently. Embed BaseSpout for no-op defaults.
type Spout interface {
	// DeclareOutputFields declares the spout's output streams. It is called
	// once on a fresh instance when the topology is built.
	DeclareOutputFields(d OutputDeclarer)
	// Open is called once before any other call on this task. An error
	// stops the topology's start-up.
	Open(tc *TopologyContext, c *SpoutCollector) error
	// NextTuple emits zero or more tuples and returns quickly. It is not
	// called while the spout is deactivated, throttled by backpressure, or
	// at topology.max.spout.pending.
	NextTuple()
	// Ack is called when the tree of the tuple emitted with msgID completed.
	Ack(msgID any)
	// Fail is called when the tree failed or timed out. reason is a
	// *FailedError (a bolt failed it) or wraps ErrTimeout.
	Fail(msgID any, reason error)
	// Activate is called when the spout becomes active.
	Activate()
	// Deactivate is called when the spout is deactivated (shutdown, or an
	// operator's request). Acks and fails may still arrive.
	Deactivate()
	// Close is called once at shutdown, after the last Ack or Fail.
	Close()
}

// Bolt processes tuples. Every input tuple must be acked or failed exactly
// once, else its tree times out. All methods are called from the task's own
// goroutine. Embed BaseBolt for defaults.
type Bolt interface {
	DeclareOutputFields(d OutputDeclarer)
	// Prepare is called once before the first Execute.
	Prepare(tc *TopologyContext, c *BoltCollector) error
	// Execute processes one input tuple. The tuple may be kept and acked
	// later (joins, batching).
	Execute(t *Tuple)
	// Cleanup is called once at shutdown.
	Cleanup()
}

// BasicBolt is the simple bolt form: tuples emitted through the
// BasicCollector are anchored on the input automatically, and the input is
// acked when Execute returns nil or failed with the returned error.
type BasicBolt interface {
	DeclareOutputFields(d OutputDeclarer)
	Prepare(tc *TopologyContext) error
	Execute(t *Tuple, c *BasicCollector) error
	Cleanup()
}

// BaseSpout provides no-op Open, Ack, Fail, Activate, Deactivate and Close,
// and keeps the collector in Collector.
type BaseSpout struct {
	Collector *SpoutCollector
}

// Open keeps the collector.
func (b *BaseSpout) Open(_ *TopologyContext, c *SpoutCollector) error {
	b.Collector = c
	return nil
}

// Ack does nothing.
func (*BaseSpout) Ack(any) {}

// Fail does nothing.
func (*BaseSpout) Fail(any, error) {}

// Activate does nothing.
func (*BaseSpout) Activate() {}

// Deactivate does nothing.
func (*BaseSpout) Deactivate() {}

// Close does nothing.
func (*BaseSpout) Close() {}

// BaseBolt provides a Prepare that keeps the collector in Collector, and a
// no-op Cleanup.
type BaseBolt struct {
	Collector *BoltCollector
}

// Prepare keeps the collector.
func (b *BaseBolt) Prepare(_ *TopologyContext, c *BoltCollector) error {
	b.Collector = c
	return nil
}

// Cleanup does nothing.
func (*BaseBolt) Cleanup() {}

// BaseBasicBolt provides no-op Prepare and Cleanup for a BasicBolt.
type BaseBasicBolt struct{}

// Prepare does nothing.
func (BaseBasicBolt) Prepare(*TopologyContext) error { return nil }

// Cleanup does nothing.
func (BaseBasicBolt) Cleanup() {}

// OutputDeclarer is how a component declares its output streams.
type OutputDeclarer interface {
	// Declare declares the default stream with the given fields.
	Declare(fields ...string)
	// DeclareStream declares a named stream.
	DeclareStream(stream string, fields ...string)
	// DeclareDirectStream declares a named direct stream: tuples go to the
	// task the emitter names with EmitDirect.
	DeclareDirectStream(stream string, fields ...string)
}

// ErrTimeout is the reason a tree that did not complete within
// topology.message.timeout.secs is failed with; test with errors.Is.
var ErrTimeout = errors.New("gale: tuple tree timed out")

// ErrShutdown is the reason trees still in flight when the topology stopped
// are failed with.
var ErrShutdown = errors.New("gale: topology shut down before the tuple tree completed")

// FailedError is the reason a spout's Fail receives when a bolt failed a
// tuple of the tree.
type FailedError struct {
	Component string // the bolt that failed the tuple
	Task      int
	Err       error // the error the bolt gave, or nil
}

func (e *FailedError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("failed by bolt %s (task %d)", e.Component, e.Task)
	}
	return fmt.Sprintf("failed by bolt %s (task %d): %v", e.Component, e.Task, e.Err)
}

func (e *FailedError) Unwrap() error { return e.Err }

// PanicError is the error a component's panic is reported as, with the
// goroutine's stack at the panic.
type PanicError struct {
	Component string
	Task      int
	Value     any
	Stack     string
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("component %s (task %d) panicked: %v", e.Component, e.Task, e.Value)
}

// TopologyContext tells a task where it runs.
type TopologyContext struct {
	topologyName string
	componentID  string
	taskID       int
	taskIndex    int
	config       *Effective
	rt           *runtime
	log          *slog.Logger
}

// TopologyName is the name the topology was submitted under.
func (tc *TopologyContext) TopologyName() string { return tc.topologyName }

// ComponentID is the id of this task's component.
func (tc *TopologyContext) ComponentID() string { return tc.componentID }

// TaskID is this task's id, unique in the topology.
func (tc *TopologyContext) TaskID() int { return tc.taskID }

// TaskIndex is this task's index among its component's tasks, from 0.
func (tc *TopologyContext) TaskIndex() int { return tc.taskIndex }

// Context is cancelled when the topology shuts down, so that I/O a
// connector starts in Open or Prepare, and goroutines it starts there,
// give up. In an orderly stop it is cancelled once the drain is over
// (every tree completed, or topology.shutdown.drain.timeout.secs passed):
// NextTuple, Execute, Ack, Fail and Deactivate during the drain see it
// live, Close and Cleanup see it cancelled. It is cancelled at once when
// a component's failure stops the topology, when start-up fails (before
// the tasks already open are closed), and, under RunLocal, when its ctx
// ends before start-up is done. The same context serves every task of
// the topology in this process.
func (tc *TopologyContext) Context() context.Context { return tc.rt.ctx }

// Config is the effective configuration of this component.
func (tc *TopologyContext) Config() *Effective { return tc.config }

// Logger is a logger with the topology, component and task as attributes.
func (tc *TopologyContext) Logger() *slog.Logger { return tc.log }

// Now is the topology's time: the system clock's, or under galetest the
// simulated clock's. A task that reads the time (windows, expiry,
// timestamps) should read it here rather than from time.Now, so that its
// tests run on simulated time. Safe for concurrent use.
func (tc *TopologyContext) Now() time.Time { return tc.rt.clock.Now() }

// ProgressReporter is implemented by a spout that knows its own progress:
// how many of its messages are done, counted as each is done and each
// once (a Kafka spout's records finished, a JetStream spout's acks), where
// that differs from its trees acked (a retried message's every tree is
// acked or failed, but it is done once). The max-spout-pending auto-tuner
// (topology.max.spout.pending.autotune) measures progress with it instead
// of counting acks. It must move with the work, not in steps of its own:
// a count that moves only at a periodic commit aliases with the tuner's
// interval, which then takes its steps for falls in progress.
type ProgressReporter interface {
	// Progress returns the cumulative progress; it never decreases. It is
	// called on the spout's own goroutine.
	Progress() int64
}
