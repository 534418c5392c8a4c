// Package bridge lets Gale's internal packages and galetest reach the parts
// of package gale's runtime that topology authors do not use: running one
// worker process's share of a topology, and the hooks tests observe a run
// with. Package gale keeps them unexported and sets the variables below in
// its init, as grpc-go's internal package does; bridge imports nothing of
// Gale's but the plain types of internal/worker and internal/metrics, so
// gale can import it.
//
// The variables are set before any caller's code runs: a caller has a
// *gale.Topology to pass, so it imports gale. Parameters typed any are
// values of package gale's types, named in each doc comment; another type
// panics.
package bridge

import (
	"context"
	"log/slog"
	"time"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/worker"
)

var (
	// StartWorker starts this process's share of a topology run by
	// len(asg.Workers) worker processes, each of which must be started
	// with the same topology, config and worker list. topo is a
	// *gale.Topology, conf its config layer (a gale.Config). It returns
	// once this worker's spouts are open and bolts prepared and it accepts
	// its peers' connections; tuples flow to a peer once it is up too
	// (until then the senders wait, as on a full queue). A bad asg is an
	// error wrapping worker.ErrInvalidAssignment.
	//
	// Executors are placed round-robin in task order.
	StartWorker func(name string, conf map[string]any, topo any, asg worker.Assignment, opts worker.Options, h Hooks) (worker.Handle, error)

	// SetHooks sets h on opts, a *gale.RunOptions, for gale.StartLocal or
	// gale.RunLocal.
	SetHooks func(opts any, h Hooks)

	// SetFileConfig sets the cluster's gale.yaml layer (file, as
	// internal/config.LoadFile reads it) on opts, a *gale.RunOptions, for
	// gale.StartLocal or gale.RunLocal: what `gale run` does with the
	// cluster's file. Without it a local run has no file layer.
	SetFileConfig func(opts any, file map[string]any)

	// LocalOf returns the test view of lt, a *gale.LocalTopology.
	LocalOf func(lt any) Local

	// ReplaceSpout returns a copy of topo, a *gale.Topology, whose spout
	// id is made by factory, a func() gale.Spout, instead; the new spout
	// must declare the same streams. The copy is a *gale.Topology.
	ReplaceSpout func(topo any, id string, factory any) (any, error)

	// SpoutStats returns the spout counters of a running topology, a
	// *gale.LocalTopology or a worker.Handle from StartWorker, by
	// component in id order. Safe for concurrent use; each counter is read
	// once, so they may be from slightly different instants.
	SpoutStats func(running any) []metrics.Spout

	// BoltStats returns the bolt counters of a running topology, as
	// SpoutStats does the spouts'. The capacity is measured over a
	// window that the calls themselves mark (at least 10 s of the
	// topology's clock, once it has run that long), so it is meaningful
	// when called now and then, as heartbeats do.
	BoltStats func(running any) []metrics.Bolt

	// PlanTopology returns the plan's input (internal/plan) of topo, a
	// *gale.Topology, under its config layer conf and the cluster's layer
	// file, as a cluster of workers would run it: what `submit` sends
	// nimbus to schedule from. It starts nothing.
	PlanTopology func(topo any, conf, file map[string]any, workers int) (plan.Topology, error)

	// PlanTopologyWith is PlanTopology with the executor counts of a
	// rebalance (-e component=N, worker.Assignment.Parallelism) applied,
	// as the workers apply them: each must name a component and be
	// between 1 and its tasks, or the error wraps
	// worker.ErrInvalidAssignment. Without the topology's code,
	// plan.Topology.WithParallelism applies them to a plan's input.
	PlanTopologyWith func(topo any, conf, file map[string]any, workers int, parallelism map[string]int) (plan.Topology, error)
)

// Hooks are the test-only settings of a run.
type Hooks struct {
	// Observer, if set, sees every emit, ack and fail.
	Observer *Observer
	// CheckTupleReuse catches bolts that break the promise of
	// topology.tuple.reuse: the tuples they ack or fail are poisoned
	// instead of reused, so that reading one later, or anchoring on it,
	// panics naming the bolt (handled by the panic policy), and a kept
	// Values slice shows placeholder values. galetest sets it.
	CheckTupleReuse bool
	// Clock, if set, is a gale.Clock for a worker started with
	// StartWorker (gale.RunOptions has its own for a local run).
	Clock any
	// DebugLogger, if set, receives the lines topology.debug logs, one
	// per emit at INFO, instead of the run's logger: `gale run` logs at
	// WARN and gives one at INFO, so that the emits show as in Storm
	// without the rest of the run's INFO lines.
	DebugLogger *slog.Logger
}

// Observer is told about a running topology's events. Its functions are
// called from executor goroutines, concurrently, and must not block; any of
// them may be nil. Values passed to Emit must not be modified or retained
// after Emit returns (copy them).
type Observer struct {
	Emit func(component, stream string, task int, values []any)
	Ack  func(spout string, task int, msgID any)
	Fail func(spout string, task int, msgID any, reason error)
	// Error sees every error a component reported (ReportError) or
	// caused (a panic, a rejected emit), at the topology clock's time.
	Error func(component string, task int, at time.Time, err error)
}

// Local is what a test may ask of a topology running in this process
// beyond gale.LocalTopology's methods. Its methods are safe for concurrent
// use.
type Local interface {
	// WaitQuiet waits until the topology has nothing left to do by
	// itself: no tuple or tree message in flight and every spout either
	// idle (its last rounds of NextTuple emitted nothing) or at max
	// pending. It returns the number of trees still pending (they wait
	// for an ack that will not come, or for their timeout), or ctx's
	// error.
	WaitQuiet(ctx context.Context) (pending int, err error)
	// TimeoutTick is the interval at which spouts check for timed-out
	// trees: topology.message.timeout.secs / 10.
	TimeoutTick() time.Duration
	// TaskIDs returns the task ids of a component, in order.
	TaskIDs(component string) []int
}
