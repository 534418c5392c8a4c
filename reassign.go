package gale

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/gale-stream/gale/internal/scheduler"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/worker"
)

// Moving peers. When a peer worker is started again in another slot (its
// machine was lost, say), the others are given the same assignment with
// that peer's new address (worker.Handle.Reassign). The assignment's
// fingerprint, which every hello carries, covers the addresses, so it
// changes with them, and the old and the new copy of the moved worker
// cannot both exchange tuples with the reassigned workers:
//
//  1. the listener checks hellos against the new fingerprint from then on,
//     so the old copy, which still holds the old assignment, is refused
//     for good when it (re)connects, and fails;
//  2. the connections the moved peers dialled with the old fingerprint are
//     closed, and openInbound closes any whose handshake was under way;
//  3. the connection to each moved peer is redirected to its new address
//     (transport.Sender.Redirect), and every other connection's hello is
//     the new one from its next handshake on. The connections to peers
//     that did not move stay up.
//
// What was on its way to a moved peer: frames still in the connection's
// queue go to the new address, which runs the same executors; frames
// written to the old connection, and what the old copy had not processed,
// are lost, and their trees time out and replay from their spouts
// (at-least-once), as with any broken connection. An executor waiting
// for credit from a moved peer waits until the new connection refills the
// credits, or until the worker stops: nothing blocks for good, and no
// goroutine or connection of the old peer's is left.
//
// A moved worker started with the new assignment before its peers are
// reassigned is refused by them until they are, and retries, when the new
// assignment's Version is higher (nimbus's assignments are versioned);
// with equal versions it is refused for good and fails, to be restarted.
// A peer that has not been reassigned yet still holds the old assignment:
// if its connection to a reassigned worker breaks in that window, its
// reconnection is refused for good and it fails, to be restarted with the
// new assignment, since it cannot be told from a stale copy.

// Reassign implements worker.Handle.
func (w *workerShare) Reassign(a worker.Assignment) error {
	rt := w.rt
	if err := a.Validate(); err != nil {
		return err
	}
	rt.moves.Lock()
	defer rt.moves.Unlock()
	cur := rt.moves.asg
	if err := rt.checkMove(cur, a); err != nil {
		return fmt.Errorf("%w: %s", worker.ErrInvalidAssignment, err)
	}
	moved := make(map[int]bool)
	for i := range a.Workers {
		if a.Workers[i] != cur.Workers[i] {
			moved[i] = true
		}
	}
	if len(moved) == 0 {
		// The same assignment, at this version or a newer one: the
		// fingerprint stays, and so does every connection.
		if a.Version != cur.Version {
			h := rt.moves.hello
			h.AssignmentVersion = a.Version
			w.server.SetHello(h)
			for _, p := range rt.peers {
				if p != nil {
					p.sender.SetHello(h)
				}
			}
			rt.moves.hello = h
			rt.moves.asg.Version = a.Version
		}
		return nil
	}
	sa := scheduler.Assignment{Slots: slotsOf(a.Workers), Executors: rt.execWorker}
	h := rt.moves.hello
	old := h.Assignment
	h.Assignment, h.AssignmentVersion = sa.Fingerprint(), a.Version

	w.server.SetHello(h)
	rt.inMu.Lock()
	rt.inStale = staleHellos{assignment: old, workers: moved}
	var drop []*transport.ServerConn
	for c := range rt.inbound {
		if rt.inStale.has(c.Peer()) {
			drop = append(drop, c)
		}
	}
	rt.inMu.Unlock()
	for _, c := range drop {
		c.Close()
	}
	for i, p := range rt.peers {
		switch {
		case p == nil:
		case moved[i]:
			p.sender.Redirect(a.Workers[i], h)
		default:
			p.sender.SetHello(h)
		}
	}
	rt.moves.asg = a
	rt.moves.asg.Workers = slices.Clone(a.Workers)
	rt.moves.hello = h
	for i := range moved {
		rt.log.Info("peer worker moved", "peer", i, "from", cur.Workers[i], "to", a.Workers[i], "assignment", h.Assignment)
	}
	return nil
}

// checkMove says what, besides peers' addresses, a changes from cur, the
// assignment in force; nil if nothing.
func (rt *runtime) checkMove(cur, a worker.Assignment) error {
	restart := "a worker takes a new assignment only when peers move; restart the workers with it"
	switch {
	case a.Version < cur.Version:
		return fmt.Errorf("the new assignment's version %d is older than the %d in force", a.Version, cur.Version)
	case a.Worker != cur.Worker:
		return fmt.Errorf("the new assignment is worker %d's, this is worker %d: start a worker for it", a.Worker, cur.Worker)
	case len(a.Workers) != len(cur.Workers):
		return fmt.Errorf("the new assignment lists %d workers, this worker runs with %d: %s", len(a.Workers), len(cur.Workers), restart)
	case a.Workers[a.Worker] != cur.Workers[cur.Worker]:
		return fmt.Errorf("the new assignment moves this worker itself (worker %d from %s to %s): start a new worker there",
			a.Worker, cur.Workers[cur.Worker], a.Workers[a.Worker])
	case !maps.Equal(a.Parallelism, cur.Parallelism):
		return fmt.Errorf("the new assignment changes the executor counts (Parallelism %v, this worker runs %v): %s", a.Parallelism, cur.Parallelism, restart)
	case a.Secret != cur.Secret:
		return fmt.Errorf("the new assignment has another topology secret: %s", restart)
	}
	execs := a.Executors
	if execs == nil {
		even, err := scheduler.Even(rt.plan, slotsOf(a.Workers))
		if err != nil {
			return err
		}
		execs = even.Executors
	}
	if len(execs) != len(rt.execWorker) {
		return fmt.Errorf("the new assignment places %d executors, this worker's plan has %d: %s", len(execs), len(rt.execWorker), restart)
	}
	for i, w := range execs {
		if w != rt.execWorker[i] {
			return fmt.Errorf("the new assignment moves executor %d (%s) from worker %d to worker %d: %s",
				i, rt.plan.Executors[i], rt.execWorker[i], w, restart)
		}
	}
	return nil
}

// slotsOf is the scheduler's view of the workers' addresses.
func slotsOf(addrs []string) []scheduler.Slot {
	slots := make([]scheduler.Slot, len(addrs))
	for i, addr := range addrs {
		slots[i] = scheduler.Slot{ID: strconv.Itoa(i), Addr: addr}
	}
	return slots
}

// peerAddr is where peer worker w listens in the assignment in force.
func (rt *runtime) peerAddr(w int) string {
	rt.moves.Lock()
	defer rt.moves.Unlock()
	return rt.moves.asg.Workers[w]
}

// staleHellos are the hellos that the last Reassign made stale: those of
// the peers it moved, carrying the assignment it replaced. A connection
// whose handshake used the old hello, under way while Reassign ran, is
// closed when it opens.
type staleHellos struct {
	assignment string
	workers    map[int]bool
}

func (s staleHellos) has(h transport.Hello) bool {
	if s.workers == nil || h.Assignment != s.assignment {
		return false
	}
	w, err := strconv.Atoi(h.Worker)
	return err == nil && s.workers[w]
}
