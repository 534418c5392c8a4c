// Package worker is the contract between one worker process's share of a
// topology, which package gale runs, and what starts it
// (internal/workerproc, galetest): the Assignment a worker is started
// with, its Options, the Handle it returns and the Status it reports. It
// is plain data and imports nothing of Gale's, so that internal/bridge,
// the scheduler and the launcher can all name these types. Start a worker
// with bridge.StartWorker.
package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

// Assignment tells a worker process its place in a multi-worker topology.
// Every worker of a topology must be given the same assignment, except for
// Worker.
type Assignment struct {
	// Worker is this worker's index in Workers.
	Worker int `json:"worker"`
	// Workers holds every worker's address (host:port), the one its peers
	// dial, in worker order.
	Workers []string `json:"workers"`
	// Executors maps each executor of the topology's plan (internal/plan)
	// to the index in Workers of the worker that runs it. Nil means the
	// even scheduler's placement (internal/scheduler.Even).
	Executors []int `json:"executors,omitempty"`
	// Parallelism overrides the number of executors of the components it
	// names (a rebalance's -e component=N); each must be between 1 and the
	// component's tasks.
	Parallelism map[string]int `json:"parallelism,omitempty"`
	// Secret is the topology's secret that nimbus hands out with the
	// assignment. When set, every hello proves it, and a peer that cannot
	// is refused.
	Secret string `json:"secret,omitempty"`
	// Version orders the assignments of a topology (coord.Assignment's,
	// which nimbus bumps with every change). A worker refuses a peer
	// holding another assignment; if the peer's is older, for good (it is
	// stale, and fails), if newer, until Reassign brings this worker up
	// to date (the peer retries). 0 on both: any difference is for good.
	Version int64 `json:"version,omitempty"`
}

// ErrInvalidAssignment is wrapped by the errors Validate returns.
var ErrInvalidAssignment = errors.New("worker: invalid assignment")

// Validate reports what is wrong with a, wrapping ErrInvalidAssignment.
func (a Assignment) Validate() error {
	if len(a.Workers) == 0 {
		return fmt.Errorf("%w: the assignment lists no workers", ErrInvalidAssignment)
	}
	if a.Worker < 0 || a.Worker >= len(a.Workers) {
		return fmt.Errorf("%w: worker %d is not one of the %d workers listed", ErrInvalidAssignment, a.Worker, len(a.Workers))
	}
	for i, addr := range a.Workers {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%w: worker %d's address %q: %v (want host:port)", ErrInvalidAssignment, i, addr, err)
		}
	}
	return nil
}

// Options are the optional parts of starting a worker.
type Options struct {
	// Logger receives the runtime's logs; nil means slog.Default().
	Logger *slog.Logger
	// FileConfig is the gale.yaml layer; nil means none.
	FileConfig map[string]any
	// Listener is where this worker accepts its peers' connections. If
	// nil, the worker listens on Workers[Worker] itself. The worker owns
	// it once it has started.
	Listener net.Listener
	// SpoutMirrors, if set, is called once before any executor runs with
	// this worker's spout executors, and returns where each (same order)
	// mirrors its counters; a shorter result, or nil fields, mirror
	// nothing. A spout executor stores its acked and failed counts there
	// before the spout's Ack or Fail is called, and its emitted and
	// transferred counts when it publishes them (internal/countfile).
	SpoutMirrors func(slots []SpoutSlot) []SpoutMirror
}

// SpoutSlot is one spout executor of a worker.
type SpoutSlot struct {
	Component string
	FirstTask int
}

// SpoutMirror is where a spout executor mirrors its counters.
type SpoutMirror struct {
	Acked, Failed, Emitted, Transferred *atomic.Int64
}

// Handle is a running worker. Its methods are safe for concurrent use.
type Handle interface {
	// Addr is the address this worker accepts its peers on.
	Addr() string
	// Failed yields at most one error: the one that should stop the
	// worker (a component panic under the kill-worker policy). Call Stop
	// after it.
	Failed() <-chan error
	// Activate and Deactivate turn this worker's spouts on and off. A
	// worker starts active, but its spouts wait until it has connected to
	// every peer.
	Activate()
	Deactivate()
	// Status reports the worker's state.
	Status() Status
	// Errors returns the most recent errors this worker's components
	// reported or caused, oldest first, and how many there were in all.
	Errors() ([]ComponentError, int64)
	// Reassign moves the worker to a new assignment that differs from its
	// current one only in its peers' addresses (a peer worker moved to
	// another slot): the executor map, the parallelism, the secret, this
	// worker's index and own address and the worker count must be the
	// same. It reconnects to the peers that moved, and from then on it
	// and its peers accept only hellos carrying the new assignment's
	// fingerprint, so the old copy of a moved worker is refused and
	// fails. Tuples on their way to a moved peer may be lost, and their
	// trees replay after their timeout. Any other change is an error
	// wrapping ErrInvalidAssignment, and the worker runs on as it was:
	// such a worker must be restarted.
	Reassign(a Assignment) error
	// Stop shuts the worker down in order: its spouts are deactivated,
	// its in-flight trees get up to topology.shutdown.drain.timeout.secs
	// (its peers still running), then every local task is closed or
	// cleaned up exactly once, and the connections are closed. To stop a
	// whole topology without failing trees, deactivate every worker first
	// and wait for Status().Pending to reach 0 everywhere. Stop is
	// idempotent and waits for everything the worker owns.
	Stop()
	// StopNow is Stop without the drain: the in-flight trees are not
	// waited for. It is for a worker whose whole topology stops after the
	// deactivation and wait of a kill (kill -w), where waiting again in
	// every worker only keeps its slot taken: the trees that did not
	// finish in the kill's wait need peers that are stopping too. After
	// Stop or StopNow, both do nothing.
	StopNow()
}

// ComponentError is an error a component of the worker reported or
// caused, as gale.ComponentError.
type ComponentError struct {
	Component string
	Task      int
	Time      time.Time
	Err       error
}

// Status is a worker's state at one moment.
type Status struct {
	// Pending is the number of trees this worker's spouts have in flight.
	Pending int `json:"pending"`
	// Inflight is the number of tuples and tree messages queued in this
	// worker and not yet processed.
	Inflight int64 `json:"inflight"`
	// WireBytesSent counts bytes written to peers, frame headers included;
	// WireTuplesSent the tuples sent to them; WireBytesReceived the bytes
	// read from them.
	WireBytesSent     int64 `json:"wire_bytes_sent"`
	WireTuplesSent    int64 `json:"wire_tuples_sent"`
	WireBytesReceived int64 `json:"wire_bytes_received"`
	// Stopped reports that the worker is deactivated and every spout
	// executor has seen it: no new trees start here.
	Stopped bool `json:"stopped"`
	// PeersConnected is how many peers this worker has a connection to.
	PeersConnected int `json:"peers_connected"`
	// Errors counts the errors components reported or caused.
	Errors int64 `json:"errors"`
}
