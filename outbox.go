package gale

import (
	goruntime "runtime"
	"time"
)

// Messages between executors travel in batches over bounded channels: one
// channel operation moves up to topology.producer.batch.size tuples. An
// executor buffers what it emits per destination executor and flushes at
// the end of each unit of work (an input batch, a round of NextTuple), so a
// lightly loaded topology sends small batches at once and a loaded one
// sends full ones.

// batch is a group of tuples for one destination task.
type batch struct {
	task   int32
	tuples []*Tuple
	origin *inbound // the connection it came on, from another worker

	_ [24]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

// Tree messages go from bolts to the spout executor whose task emitted
// the tree: the root names it (tree.go).
const (
	msgAck   uint8 = iota + 1 // XOR val into root's tree
	msgFail                   // fail root's tree
	msgReset                  // reset root's timeout (ResetTimeout)
)

// ackMsg is one tree message.
type ackMsg struct {
	kind   uint8
	root   uint64
	val    uint64
	reason error // msgFail: a *FailedError
}

// ackBatch is a group of tree messages for one spout executor.
type ackBatch struct {
	msgs []ackMsg

	_ [40]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

// outbox buffers an executor's outgoing batches. It belongs to the
// executor's goroutine.
type outbox struct {
	rt        *runtime
	quit      <-chan struct{}
	batchSize int

	// data and ctl span only the destinations the executor can reach (see
	// newOutbox), so that their size does not grow with the topology.
	data      []*batch // by destination task id − taskBase
	taskBase  int
	dataDirty []int       // task ids
	ctl       []*ackBatch // by destination executor index − execBase (spouts)
	execBase  int
	ctlDirty  []int // executor indexes

	// blockOnFull: send a full batch at once, blocking until there is room
	// (bolts). Spouts never block inside user code: their full
	// batches wait for the flush at the end of the round.
	blockOnFull bool
	// ctlIn, if set, is received from while a send waits for room, and
	// what arrives is parked for the owner to handle later: a spout keeps
	// draining its tree messages so the bolts, which send to it, never
	// block on it for long (no deadlock), without calling user code
	// mid-flush.
	ctlIn  <-chan *ackBatch
	parked []*ackBatch
	// ticks, if set, is received from while a send waits too, and onTick
	// called for each tick: a spout blocked on a full queue still times
	// its trees out. flush allows onTick to emit (a spout's Fail replays).
	ticks  <-chan time.Time
	onTick func()

	// transferred counts the tuples sent to a task in another worker.
	transferred int64
	// waitNanos is the time spent waiting for room to send (backpressure),
	// on the runtime's clock, timed only when timeWaits
	// (topology.stats.enabled, an executor of a component) and only when a
	// send has to wait.
	timeWaits bool
	waitNanos int64

	// treeSink, if set, takes every tree message instead (galetest's
	// bolt harness, whose topology has no spout).
	treeSink func(ackMsg)

	// fbDest marks, by executor index, the destinations this executor
	// reaches on a feedback edge (feedback.go); nil if none.
	fbDest []bool

	_ [8]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

// newOutbox returns the outbox of an executor of c. A component's
// executors send tuples only to the tasks of the bolts subscribing to it,
// and tree messages (acks, fails, resets) only to the executors of the
// spouts upstream of it, which keep the trees (tree.go). Each table spans
// just those, so the outboxes of a topology with many tasks take memory in
// proportion to the tasks, not to their square.
func newOutbox(rt *runtime, blockOnFull bool, c *compInfo) *outbox {
	taskLo, taskHi := len(rt.taskExec), 0
	for _, subs := range c.subs {
		for _, s := range subs {
			taskLo = min(taskLo, s.consumer.firstTask)
			taskHi = max(taskHi, s.consumer.firstTask+s.consumer.numTasks)
		}
	}
	execLo, execHi := len(rt.execs), 0
	if rt.acking && !c.isSpout {
		for _, sp := range rt.spoutsUpstream(c) {
			lo, hi := rt.taskExec[sp.firstTask], rt.taskExec[sp.firstTask+sp.numTasks-1]
			execLo, execHi = min(execLo, lo), max(execHi, hi+1)
		}
	}
	taskHi, execHi = max(taskLo, taskHi), max(execLo, execHi)
	return &outbox{
		rt:          rt,
		quit:        rt.quit,
		batchSize:   rt.batchSize,
		data:        lineSlice[*batch](taskHi - taskLo),
		dataDirty:   lineSlice[int](taskHi - taskLo)[:0],
		taskBase:    taskLo,
		ctl:         lineSlice[*ackBatch](execHi - execLo),
		ctlDirty:    lineSlice[int](execHi - execLo)[:0],
		execBase:    execLo,
		blockOnFull: blockOnFull,
		timeWaits:   rt.stats,
	}
}

// waitStart is the clock reading when a send starts waiting, 0 if waits
// are not timed.
func (o *outbox) waitStart() int64 {
	if !o.timeWaits {
		return 0
	}
	return o.rt.clock.Now().UnixNano()
}

// waitEnd counts the wait begun at start (waitStart).
func (o *outbox) waitEnd(start int64) {
	if start != 0 {
		o.waitNanos += o.rt.clock.Now().UnixNano() - start
	}
}

func (o *outbox) addTuple(task int, t *Tuple) {
	slot := &o.data[task-o.taskBase]
	b := *slot
	if b == nil {
		b = o.rt.getBatch()
		b.task = int32(task)
		*slot = b
		o.dataDirty = append(o.dataDirty, task)
	}
	b.tuples = append(b.tuples, t)
	if o.blockOnFull && len(b.tuples) >= o.batchSize {
		*slot = nil
		o.sendData(b)
	}
}

func (o *outbox) addMsg(exec int, m ackMsg) {
	slot := &o.ctl[exec-o.execBase]
	b := *slot
	if b == nil {
		b = o.rt.getAckBatch()
		*slot = b
		o.ctlDirty = append(o.ctlDirty, exec)
	} else if m.kind == msgAck {
		// Acks for the same tree often come in a row (the words of one
		// sentence): XOR is associative, so fold them into one message.
		if last := &b.msgs[len(b.msgs)-1]; last.kind == msgAck && last.root == m.root {
			last.val ^= m.val
			return
		}
	}
	b.msgs = append(b.msgs, m)
	if o.blockOnFull && len(b.msgs) >= o.batchSize {
		*slot = nil
		o.sendCtl(exec, b)
	}
}

// treeMsg sends m to the spout executor that keeps its tree (tree.go).
// A root that names no spout upstream is dropped: only a broken peer's
// tuple carries one, and the wire decoder refuses those first.
func (o *outbox) treeMsg(m ackMsg) {
	if o.treeSink != nil {
		o.treeSink(m)
		return
	}
	if exec, ok := o.rt.treeExec(m.root); ok && exec >= o.execBase && exec-o.execBase < len(o.ctl) {
		o.addMsg(exec, m)
	}
}

// flush sends every buffered batch, blocking while destinations are full.
// It returns false if the runtime is stopping. What is added while it
// waits (by onTick) is sent too.
func (o *outbox) flush() bool {
	for k := 0; k < len(o.dataDirty); k++ {
		i := o.dataDirty[k] - o.taskBase
		if b := o.data[i]; b != nil {
			o.data[i] = nil
			if !o.sendData(b) {
				return false
			}
		}
	}
	o.dataDirty = o.dataDirty[:0]
	for k := 0; k < len(o.ctlDirty); k++ {
		i := o.ctlDirty[k]
		if b := o.ctl[i-o.execBase]; b != nil {
			o.ctl[i-o.execBase] = nil
			if !o.sendCtl(i, b) {
				return false
			}
		}
	}
	o.ctlDirty = o.ctlDirty[:0]
	return true
}

func (o *outbox) sendData(b *batch) bool {
	exec := o.rt.taskExec[b.task]
	slot := o.rt.execs[exec]
	if slot.peer != nil {
		o.transferred += int64(len(b.tuples))
	}
	if o.fbDest != nil && o.fbDest[exec] {
		if slot.fb != nil {
			o.sendFeedback(slot.fb, b)
			return true
		}
		if slot.peer != nil {
			return o.sendRemoteFeedback(slot, b)
		}
	}
	if slot.peer != nil {
		return o.sendRemoteData(slot, b)
	}
	if o.rt.stats {
		slot.queued.Add(int64(len(b.tuples)))
	}
	return send(o, slot.in, b, len(b.tuples))
}

func (o *outbox) sendCtl(exec int, b *ackBatch) bool {
	slot := o.rt.execs[exec]
	if slot.peer != nil {
		return o.sendRemoteCtl(slot, exec, b)
	}
	return send(o, slot.ctl, b, len(b.msgs))
}

// send puts a batch of n items on ch (put). The items count as in flight
// from here until the consumer releases the batch.
func send[B any](o *outbox, ch chan<- B, b B, n int) bool {
	o.rt.inflight.Add(int64(n))
	if !put(o, ch, b) {
		o.rt.inflight.Add(-int64(n))
		return false
	}
	return true
}

// fullSpins is how many times put yields, trying again after each, before
// it parks on a full channel. A producer that parks on its consumer's full
// queue is made runnable by the consumer's next receive, on the
// consumer's P (the channel readies it as that P's next goroutine); the
// other P, with nothing else to run, idles until it steals the producer,
// and the stage before, parked on the producer's full queue in turn, waits
// longer still. Yielding a few times instead keeps the producer on its own
// P, where the room the consumer makes is seen at once. Word count in
// process, 3 interleaved rounds (ab2.sh 4s 3): noack 2.08M → 2.82M
// sentences/s and CPU per sentence 0.74 → 0.67 µs; ack 1.35M → 1.47M/s.
// 2, 4 and 8 measured the same.
const fullSpins = 4

// put puts v on ch, blocking while ch is full: an executor's queue, or a
// peer's send queue (sendFrame). While it waits it parks what arrives on
// o.ctlIn and handles o.ticks, and the wait counts as backpressure
// (waitStart). It returns false if the runtime is stopping.
func put[T any](o *outbox, ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	default:
	}
	// The yields count as backpressure too: the time is the consumer's.
	start := o.waitStart()
	defer o.waitEnd(start)
	for range fullSpins {
		goruntime.Gosched()
		select {
		case ch <- v:
			return true
		default:
		}
	}
	for {
		select {
		case ch <- v:
			return true
		case ab := <-o.ctlIn:
			o.parked = append(o.parked, ab)
		case <-o.ticks:
			o.onTick()
		case <-o.quit:
			return false
		}
	}
}
