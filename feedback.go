package gale

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Cycles. A topology may subscribe a bolt to its own stream, or to a bolt
// downstream of it. Bounded queues that block a full sender would then
// deadlock: every executor on the cycle waits for room in the next one's
// queue. The edges that close a cycle (feedback edges, found from the
// definition, the same in every process) therefore never block: a batch
// sent on one goes to the consumer's feedback queue, which the consumer
// drains before its other input, and which is bounded in tuples by the
// trees the spouts may have in flight. A batch that does not fit fails
// its trees (ErrFeedbackFull) rather than wait. See docs/architecture.md,
// "Cycles".

// ErrFeedbackFull is wrapped by the reason a tree fails with when a tuple
// of it did not fit in the feedback queue of a cycle: the tuples going
// round the cycle outgrew the trees in flight (a bolt on the cycle emits
// more tuples per input than the cycle ends).
var ErrFeedbackFull = errors.New("gale: a cycle's feedback queue is full")

// feedbackEdge is a subscription from producer to consumer that closes a
// cycle.
type feedbackEdge struct{ producer, consumer string }

// feedbackEdges returns the edges of def's component graph that close a
// cycle: the back edges of a depth-first search from the spouts, then
// from any component not reached, each in id order, visiting consumers in
// id order. Removing them leaves the graph acyclic, and every process
// computes the same set.
func feedbackEdges(def *TopologyDef) map[feedbackEdge]bool {
	consumers := make(map[string][]string)
	var ids []string
	for _, c := range def.Spouts {
		ids = append(ids, c.ID)
	}
	nSpouts := len(ids)
	for _, c := range def.Bolts {
		ids = append(ids, c.ID)
		for _, in := range c.Inputs {
			if !slices.Contains(consumers[in.Component], c.ID) {
				consumers[in.Component] = append(consumers[in.Component], c.ID)
			}
		}
	}
	for _, cs := range consumers {
		slices.Sort(cs)
	}
	slices.Sort(ids[:nSpouts])
	slices.Sort(ids[nSpouts:])
	const (
		white = iota
		grey  // on the search's stack
		black // done
	)
	color := make(map[string]int, len(ids))
	back := make(map[feedbackEdge]bool)
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		for _, c := range consumers[id] {
			switch color[c] {
			case white:
				visit(c)
			case grey:
				back[feedbackEdge{id, c}] = true
			}
		}
		color[id] = black
	}
	for _, id := range ids {
		if color[id] == white {
			visit(id)
		}
	}
	return back
}

// feedbackDests returns, indexed by executor, whether a batch c sends to
// that executor travels on a feedback edge; nil if c has none.
func (rt *runtime) feedbackDests(c *compInfo) []bool {
	var dests []bool
	for e := range rt.feedback {
		if e.producer != c.id {
			continue
		}
		if dests == nil {
			dests = make([]bool, len(rt.execs))
		}
		d := rt.comps[e.consumer]
		for t := d.firstTask; t < d.firstTask+d.numTasks; t++ {
			dests[rt.taskExec[t]] = true
		}
	}
	return dests
}

// hasFeedbackInput reports whether bolt c is the consumer of a feedback
// edge.
func (rt *runtime) hasFeedbackInput(c *compInfo) bool {
	for e := range rt.feedback {
		if e.consumer == c.id {
			return true
		}
	}
	return false
}

// feedbackBudget bounds the tuples in a worker's feedback queues, all of
// them together, by what the worker admitted: the trees its spouts may
// have in flight (each should have about one tuple going round a cycle at
// once), and at least what all its bolts' input queues hold, which is
// also the bound when nothing caps the trees in flight (acking off).
// While the queues hold more than one input queue's worth (gate), the
// worker's spouts emit nothing: a cycle slower than its input holds the
// spouts back, as a full queue does elsewhere, and the spouts are the
// one place where waiting cannot close a cycle.
type feedbackBudget struct {
	tuples atomic.Int64 // in the worker's feedback queues
	floor  int64        // the worker's bolts' input queues, in tuples
	gate   int64        // spouts pause from here; 0: no cycles
	fixed  int64        // trees admitted by topology.max.spout.pending
	auto   atomic.Int64 // trees admitted by this worker's automatic limits, now
	// workers scales auto to the topology: the automatic limits of the
	// other workers' spouts are about as this one's.
	workers int64
}

func (b *feedbackBudget) limit() int64 {
	return max(b.floor, b.fixed+b.auto.Load()*b.workers)
}

// closed reports whether spouts must wait for the cycles to drain.
func (b *feedbackBudget) closed() bool {
	return b.gate > 0 && b.tuples.Load() >= b.gate
}

// feedbackQueue is a bolt executor's input from the feedback edges into
// it: many senders, one consumer (the executor), bounded in tuples, never
// blocking a sender. Safe for concurrent use.
type feedbackQueue struct {
	consumer string // the bolt's component id

	budget *feedbackBudget

	mu      sync.Mutex
	batches []*batch // FIFO from head
	head    int
	tuples  int

	queued atomic.Int32  // batches queued: the consumer's cheap look
	wake   chan struct{} // a token after a push, for a parked consumer

	rejected atomic.Int64 // batches that did not fit
	loggedAt atomic.Int64 // unix nanos of the last log about them
}

func newFeedbackQueue(consumer string, budget *feedbackBudget) *feedbackQueue {
	return &feedbackQueue{consumer: consumer, budget: budget, wake: make(chan struct{}, 1)}
}

// push queues b unless it would take the worker's feedback queues over
// their budget; an empty queue takes a batch regardless, so the bound is
// exceeded by at most a batch per queue. It never blocks.
func (q *feedbackQueue) push(b *batch) bool {
	n := int64(len(b.tuples))
	q.mu.Lock()
	if total := q.budget.tuples.Add(n); q.tuples > 0 && total > q.budget.limit() {
		q.budget.tuples.Add(-n)
		q.mu.Unlock()
		return false
	}
	q.batches = append(q.batches, b)
	q.tuples += len(b.tuples)
	q.queued.Add(1)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// ready reports whether a batch is queued; q may be nil (no feedback
// input). For the consumer.
func (q *feedbackQueue) ready() bool { return q != nil && q.queued.Load() > 0 }

// pop takes the oldest batch, or nil. For the consumer.
func (q *feedbackQueue) pop() *batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.batches) {
		return nil
	}
	b := q.batches[q.head]
	q.batches[q.head] = nil
	q.head++
	q.tuples -= len(b.tuples)
	q.budget.tuples.Add(-int64(len(b.tuples)))
	q.queued.Add(-1)
	switch {
	case q.head == len(q.batches):
		q.batches, q.head = q.batches[:0], 0
	case q.head >= 256 && 2*q.head >= len(q.batches):
		n := copy(q.batches, q.batches[q.head:])
		clear(q.batches[n:])
		q.batches, q.head = q.batches[:n], 0
	}
	return b
}

// wakeC is the channel a parked consumer waits on; nil if q is nil.
func (q *feedbackQueue) wakeC() <-chan struct{} {
	if q == nil {
		return nil
	}
	return q.wake
}

// sendFeedback puts b on the consumer's feedback queue; if it does not
// fit, b's trees are failed and its tuples dropped. It never blocks.
func (o *outbox) sendFeedback(q *feedbackQueue, b *batch) {
	n := int64(len(b.tuples))
	o.rt.inflight.Add(n)
	if q.push(b) {
		return
	}
	o.rt.inflight.Add(-n)
	if !o.rt.acking {
		q.reject(o.rt, b, "lost: acking is off")
		o.rt.recycleBatch(b)
		return
	}
	q.reject(o.rt, b, "its trees fail")
	var last uint64
	var reason error
	for _, t := range b.tuples {
		root := t.treeRoot()
		if root == 0 || root == last {
			continue
		}
		last = root
		if reason == nil {
			reason = &FailedError{Component: t.src.component, Task: int(t.src.task),
				Err: fmt.Errorf("%w: the tuples going round the cycle through bolt %q reached %d, what the trees in flight allow; a bolt on the cycle emits more tuples than the cycle ends", ErrFeedbackFull, q.consumer, q.budget.limit())}
		}
		o.treeMsg(ackMsg{kind: msgFail, root: root, reason: reason})
		for _, p := range t.morePairs() {
			o.treeMsg(ackMsg{kind: msgFail, root: p.root, reason: reason})
		}
	}
	o.rt.recycleBatch(b)
}

// reject counts a batch that did not fit, reports it as the consumer's
// error (LocalTopology.Errors), and logs it now and then.
func (q *feedbackQueue) reject(rt *runtime, b *batch, what string) {
	rejected := q.rejected.Add(1)
	rt.reportError(q.consumer, int(b.task), fmt.Errorf("%w: dropped %d tuples for bolt %q (the worker's feedback queues hold at most %d), %s",
		ErrFeedbackFull, len(b.tuples), q.consumer, q.budget.limit(), what))
	if now := time.Now().UnixNano(); now-q.loggedAt.Load() > int64(feedbackLogEvery) {
		q.loggedAt.Store(now)
		rt.log.Warn("cycle: feedback queue full, dropped a batch",
			"consumer", q.consumer, "task", b.task, "tuples", len(b.tuples), "then", what,
			"limit", q.budget.limit(), "batches_rejected", rejected)
	}
}

// sendRemoteFeedback sends b to a bolt of another worker on a feedback
// edge: without a credit, which could wait forever on a cycle; the
// receiving worker puts it on the bolt's feedback queue (deliverFeedback).
func (o *outbox) sendRemoteFeedback(slot *execSlot, b *batch) bool {
	n := len(b.tuples)
	buf, err := o.rt.appendTupleFrame(slot.peer.getBuf(), b)
	o.rt.recycleBatch(b)
	if err != nil {
		// As in sendRemoteData: the trees time out and replay.
		o.rt.log.Error("dropped a batch for a peer worker: it cannot be encoded", "err", err)
		slot.peer.putBuf(buf)
		return true
	}
	o.rt.wireTuples.Add(int64(n))
	return o.sendFrame(slot.peer, buf)
}

// deliverFeedback puts b, from a peer, on the feedback queue of local
// executor idx if it came on a feedback edge (its sender took no credit),
// and reports whether it did. A batch that does not fit is dropped, and
// its trees time out.
func (rt *runtime) deliverFeedback(idx int, b *batch) bool {
	q := rt.execs[idx].fb
	if q == nil || len(b.tuples) == 0 || !rt.feedback[feedbackEdge{b.tuples[0].src.component, q.consumer}] {
		return false
	}
	n := int64(len(b.tuples))
	rt.inflight.Add(n)
	if !q.push(b) {
		rt.inflight.Add(-n)
		q.reject(rt, b, "its trees time out")
		rt.recycleBatch(b)
	}
	return true
}

// feedbackLogEvery spaces the warnings about a full feedback queue.
const feedbackLogEvery = 10 * time.Second
