package gale

import (
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"github.com/gale-stream/gale/internal/autotune"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/worker"
)

// spoutTask is one spout instance with its collector and in-flight trees.
type spoutTask struct {
	rt       *runtime
	x        *spoutExec
	spout    Spout
	tc       *TopologyContext
	coll     *SpoutCollector
	em       *emitter
	pending  *pendingMap
	deferred []any // message ids to ack after NextTuple (acking off)
	emits    int
	retry    RetryReporter // the spout, if it reports its retries; nil otherwise

	_ [16]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

func (t *spoutTask) emit(stream string, msgID any, direct int, vals []any) ([]int, error) {
	var root uint64
	if msgID != nil && t.rt.acking {
		slot, ok := t.pending.next()
		if !ok {
			return nil, errTooManyTrees
		}
		root = makeRoot(t.em.task, slot, t.em.rng.Uint64())
	}
	root, xor, err := t.em.emitSpout(stream, vals, direct, root)
	if err != nil {
		return nil, err
	}
	t.emits++
	if msgID != nil {
		if root != 0 {
			t.pending.put(root, pendingEntry{msgID: msgID, emitted: t.x.now, xor: xor})
		} else {
			// Acking is off, or nobody subscribes: the tree is complete
			// now. Ack after NextTuple returns, never from inside it.
			t.deferred = append(t.deferred, msgID)
		}
	}
	return t.em.targetIDs(), nil
}

// spoutExec runs a spout's tasks in one goroutine: it calls NextTuple in
// rounds, delivers acks and fails, and times out trees.
type spoutExec struct {
	rt         *runtime
	idx        int
	comp       *compInfo
	first      int32
	tasks      []*spoutTask
	out        *outbox
	ctl        chan *ackBatch
	maxPending int // per task; 0 = unset

	// With acking on and topology.max.spout.pending unset, the executor
	// sets its own in-flight limit from Little's law: at most as many
	// trees per task as complete in a quarter of the message timeout, so
	// a slow topology throttles its spouts instead of timing trees out.
	autoLimit  int
	autoFloor  int   // the least and the most autoLimit may be: this worker's
	autoMost   int   // floor and tree budget, shared by its spout tasks (budget.go)
	resolved   int   // trees completed or failed since the last retune
	tunedAt    int64 // clock nanos of the last retune; 0 = none yet
	earlyTuned bool  // retuned early since the last tune tick (tunedAt is then exact)
	active     bool
	now        int64 // clock nanos, read once per round
	timeoutErr error

	pendingCount atomic.Int64 // for shutdown and galetest
	rounds       atomic.Int64
	idleRounds   atomic.Int64 // consecutive rounds without an emit
	capped       atomic.Bool  // every task is at max pending
	wakes        atomic.Int64 // unquiet calls: a pending slot freed or the limit raised
	stopped      atomic.Bool  // saw the deactivation and published since
	blockedTicks int          // timeout ticks handled while a send waited, not yet tickDone

	// Trees acked and failed by this executor's tasks, counted by its
	// goroutine; publish copies them and the tasks' emits for spoutStats.
	// failed is split by reason: by a bolt, timed out, at shutdown.
	acked, failed                   int64
	failedBy                        [failReasons]int64
	pubEmitted, pubAcked, pubFailed atomic.Int64
	pubFailedBy                     [failReasons]atomic.Int64
	pubTransferred                  atomic.Int64
	// mirror, if set, is where the counters are mirrored for a kill -9
	// to keep (worker.Options.SpoutMirrors): acked and failed before the
	// spout's Ack or Fail, the others as they are published.
	mirror worker.SpoutMirror
	// latency: the complete latency of the trees acked, recorded by its
	// goroutine, read by spoutStats.
	latency metrics.LatencyRecorder
	// With topology.stats.enabled (stats): the time every task was held
	// at its in-flight limit, closed intervals in throttled and the open
	// one from cappedAt (clock nanos, 0 = none); and the tasks' retries
	// (RetryReporter), all published by publishCounts.
	stats                         bool
	cappedAt, throttled           int64
	pubThrottled, pubBackpressure atomic.Int64
	pubRetries, pubDeadLetters    atomic.Int64

	timeoutTk, tuneTk Ticker // made by start, so their phase is fixed before any executor runs

	// With topology.max.spout.pending.autotune, tuner chooses maxPending
	// on each tune tick (spout_autotune.go); pubMaxPending is maxPending
	// times the tasks, for spoutStats.
	tuner         *autotune.Tuner
	tunePeriod    time.Duration
	tuneAt        int64 // clock nanos when the current window started
	tuneProgress  int64 // the progress counted then
	tuneTimedOut  int64 // the trees timed out by then (failedBy[failedTimeout])
	pubMaxPending atomic.Int64
}

func newSpoutExec(rt *runtime, idx int, c *compInfo, first, n int) *spoutExec {
	x := &spoutExec{rt: rt, idx: idx, comp: c, first: int32(first), ctl: rt.execs[idx].ctl, stats: rt.stats}
	x.out = newOutbox(rt, false, c)
	x.out.ctlIn = x.ctl
	x.maxPending, _ = c.conf.Int(TopologyMaxSpoutPending)
	x.newTuner(n)
	if x.maxPending == 0 && rt.acking {
		x.autoFloor, x.autoMost = rt.autoBounds()
		x.autoLimit = x.autoFloor
		rt.fbBudget.auto.Add(int64(x.autoLimit * n))
	}
	x.timeoutErr = fmt.Errorf("%w after %s (topology.message.timeout.secs)", ErrTimeout, rt.timeout)
	for i := 0; i < n; i++ {
		task := first + i
		t := &spoutTask{rt: rt, x: x, spout: rt.topo.spouts[c.id](), pending: newPendingMap()}
		t.tc = rt.context(c, task)
		t.em = newEmitter(rt, c, task, x.out, t.tc.log)
		t.coll = &SpoutCollector{task: t}
		t.retry, _ = t.spout.(RetryReporter)
		x.tasks = append(x.tasks, t)
	}
	x.tasks = lineClone(x.tasks)
	if rt.acking {
		x.pubMaxPending.Store(int64(x.maxPending * n))
	}
	return x
}

// mirrorSpouts gives each spout executor its mirror (see
// worker.Options.SpoutMirrors). Called before any executor runs.
func (rt *runtime) mirrorSpouts(f func([]worker.SpoutSlot) []worker.SpoutMirror) {
	slots := make([]worker.SpoutSlot, len(rt.spoutExecs))
	for i, x := range rt.spoutExecs {
		slots[i] = worker.SpoutSlot{Component: x.comp.id, FirstTask: int(x.first)}
	}
	for i, m := range f(slots) {
		if i < len(rt.spoutExecs) {
			rt.spoutExecs[i].mirror = m
		}
	}
}

// call runs a user callback, applying the panic policy.
func (x *spoutExec) call(t *spoutTask, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			x.rt.handlePanic(x.comp.id, int(t.em.task), r)
		}
	}()
	fn()
}

func (x *spoutExec) run() {
	defer x.rt.wg.Done()
	defer x.shutdown()
	tk, tuneTk := x.timeoutTk, x.tuneTk
	defer tk.Stop()
	defer tuneTk.Stop()
	timeouts, tunes := tk.C(), tuneTk.C()
	// A send that waits for room still times trees out.
	x.out.ticks, x.out.onTick = timeouts, x.expireBlocked
	expired := 0 // timeout ticks handled since the last flush
	tuneEvery := autoTuneInterval(x.rt.timeout)
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	defer idle.Stop()
	idleN, busyRounds := 0, 0
	var lingerStart time.Time // when the spout started filling the current batch
	lingerEmits := 0          // emits before that
	for {
		// Acks and fails first: they free pending slots.
		for _, b := range x.out.parked {
			x.handleCtl(b)
		}
		clear(x.out.parked)
		x.out.parked = x.out.parked[:0]
		if x.rt.stopping.Load() {
			return
		}
		// A select locks every channel it names, so look (len is a
		// cheap, single-consumer-safe hint) before selecting.
	drain:
		for i := 0; i < 16 && (len(x.ctl) > 0 || len(timeouts) > 0 || len(tunes) > 0); i++ {
			select {
			case b := <-x.ctl:
				x.handleCtl(b)
			case <-timeouts:
				x.expire()
				expired++
			case <-tunes:
				x.retune(tuneEvery)
				tickDone(tuneTk)
			case <-x.rt.quit:
				return
			default:
				break drain
			}
		}
		if a := x.rt.active.Load(); a != x.active {
			if !a && x.cappedAt != 0 {
				x.uncapped(x.rt.clock.Now().UnixNano()) // not throttled while inactive
			}
			x.active = a
			x.restartTuneWindow()
			for _, t := range x.tasks {
				if a {
					x.call(t, t.spout.Activate)
				} else {
					x.call(t, t.spout.Deactivate)
				}
			}
		}
		emitted, capped := false, true
		if x.active {
			x.now = x.rt.clock.Now().UnixNano()
			for _, t := range x.tasks {
				e, c := x.round(t)
				emitted = emitted || e
				capped = capped && c
			}
			if capped && x.autoLimit > 0 && x.maxPending == 0 {
				x.retuneEarly(x.now)
			}
			if x.stats {
				switch {
				case capped && x.cappedAt == 0:
					x.cappedAt = x.now
				case !capped && x.cappedAt != 0:
					x.uncapped(x.now)
				}
			}
		}
		if emitted {
			// The idle backoff restarts whenever the source produces, not
			// only at a flush after an emitting round: a round that fills a
			// batch usually ends with an empty round, whose flush never saw
			// emitted, and the pause stayed at its 1 ms cap.
			idleN = 0
		}
		// While the source keeps producing, keep filling the batch: after
		// a round that emitted less than a batch, yield and run another
		// round before flushing. The flush comes when a round comes up
		// empty, a batch's worth was emitted, or fillWindow has passed.
		// Fewer, fuller batches mean fewer wakeups downstream; at
		// moderate rates that lowered CPU per tuple by ~5% and the p99
		// complete latency (docs/performance.md).
		if emitted {
			n := 0
			for _, t := range x.tasks {
				n += t.emits
			}
			now := time.Now()
			if lingerStart.IsZero() {
				lingerStart, lingerEmits = now, n
			}
			if n-lingerEmits < x.rt.batchSize && now.Sub(lingerStart) < fillWindow {
				goruntime.Gosched()
				continue
			}
		}
		lingerStart = time.Time{}
		for _, t := range x.tasks {
			for i, id := range t.deferred {
				x.acked++
				if x.mirror.Acked != nil {
					x.mirror.Acked.Store(x.acked)
				}
				x.call(t, func() { t.spout.Ack(id) })
				if x.rt.obs.Ack != nil {
					x.rt.obs.Ack(x.comp.id, int(t.em.task), id)
				}
				t.deferred[i] = nil
			}
			t.deferred = t.deferred[:0]
		}
		if !x.out.flush() {
			return
		}
		expired, x.blockedTicks = expired+x.blockedTicks, 0
		for ; expired > 0; expired-- {
			tickDone(tk)
		}
		x.endRound(emitted, capped)
		if emitted {
			if busyRounds++; busyRounds%busyYieldEvery == 0 {
				goruntime.Gosched() // see busyYieldEvery
			}
			continue
		}
		// Nothing to emit now (or at max pending): wait for an ack, a
		// timeout tick, or a short, growing pause before asking again.
		if len(x.ctl) > 0 || len(timeouts) > 0 || len(tunes) > 0 {
			continue // handled at the top of the loop, without a select
		}
		var pause <-chan time.Time
		if !capped || !x.active {
			idle.Reset(min(time.Millisecond, time.Duration(10<<min(idleN, 7))*time.Microsecond))
			pause = idle.C
			idleN++
		}
		select {
		case b := <-x.ctl:
			x.handleCtl(b)
		case <-timeouts:
			x.expire()
			expired++
		case <-tunes:
			x.retune(tuneEvery)
			tickDone(tuneTk)
		case <-pause:
		case <-x.rt.quit:
			return
		}
		if pause != nil && !idle.Stop() {
			select {
			case <-idle.C:
			default:
			}
		}
	}
}

// round calls NextTuple on t until it stops emitting, a batch's worth has
// been emitted or the task reaches max pending. capped reports the last.
// Counting emits rather than calls bounds what a round buffers: a spout
// that emits many tuples per call (a paced source catching up, a poll of
// a broker) still hands over batches of about topology.producer.batch.size,
// so the queues' capacity in batches bounds the tuples in them.
func (x *spoutExec) round(t *spoutTask) (emitted, capped bool) {
	limit := x.maxPending
	if limit == 0 {
		limit = x.autoLimit
	}
	if x.rt.acking && (limit == 0 || limit > maxTreesPerTask) {
		limit = maxTreesPerTask // what a root can name (tree.go)
	}
	if x.rt.fbBudget.closed() {
		return false, false // a cycle is full: let it drain (feedback.go)
	}
	start := t.emits
	for t.emits-start < x.rt.batchSize {
		if limit > 0 && t.pending.len() >= limit {
			return emitted, true
		}
		before := t.emits
		x.call(t, t.spout.NextTuple)
		if t.emits == before {
			return emitted, false
		}
		emitted = true
	}
	return emitted, false
}

// uncapped ends the interval the spout was held at its in-flight limit,
// at now.
func (x *spoutExec) uncapped(now int64) {
	x.throttled += now - x.cappedAt
	x.cappedAt = 0
}

// endRound publishes what a round did once its emits are flushed: the
// pending count first, so that whoever sees capped set sees the count it
// was set with (waitQuiet reads them in the other order).
func (x *spoutExec) endRound(emitted, capped bool) {
	x.publish(emitted)
	x.capped.Store(x.active && capped)
	x.stopped.Store(!x.active)
}

func (x *spoutExec) publish(emitted bool) {
	var n, emits int
	for _, t := range x.tasks {
		n += t.pending.len()
		emits += t.emits
	}
	x.pendingCount.Store(int64(n))
	x.publishCounts(emits)
	if emitted {
		x.idleRounds.Store(0)
	} else {
		x.idleRounds.Add(1)
	}
	x.rounds.Add(1)
}

func (x *spoutExec) handleCtl(b *ackBatch) {
	freed := false
	var now int64 // read at the batch's first completion
	for i := range b.msgs {
		m := &b.msgs[i]
		ti := int(rootTask(m.root)) - int(x.first)
		if ti < 0 || ti >= len(x.tasks) {
			continue // not this executor's tree (checkAcks refuses it from a peer)
		}
		t := x.tasks[ti]
		slot := rootSlot(m.root)
		switch m.kind {
		case msgAck:
			if e, ok := t.pending.ack(slot, m.root, m.val); ok {
				freed = true
				x.resolved++
				x.acked++
				if x.stats {
					if now == 0 {
						now = x.rt.clock.Now().UnixNano()
					}
					x.latency.Record(time.Duration(now - e.emitted))
				}
				if x.mirror.Acked != nil {
					x.mirror.Acked.Store(x.acked)
				}
				x.call(t, func() { t.spout.Ack(e.msgID) })
				if x.rt.obs.Ack != nil {
					x.rt.obs.Ack(x.comp.id, int(t.em.task), e.msgID)
				}
			}
		case msgFail:
			if e, ok := t.pending.remove(slot, m.root); ok {
				freed = true
				x.resolved++
				x.fail(t, e.msgID, m.reason, failedByBolt)
			}
		case msgReset:
			t.pending.touch(slot, m.root)
		}
	}
	if freed {
		// A slot is free: the spout is neither capped nor idle until it
		// has had its rounds. Clear both before putAckBatch releases the
		// in-flight count, so waitQuiet never sees nothing in flight with
		// stale flags.
		x.unquiet()
	}
	x.rt.putAckBatch(b)
	x.publish(false)
}

// unquiet marks the spout as having work to do. Counting it lets
// waitQuiet tell a spout that stayed capped from one that was freed and
// capped again while it looked.
func (x *spoutExec) unquiet() {
	x.wakes.Add(1)
	x.capped.Store(false)
	x.idleRounds.Store(0)
}

// The reasons a spout's tree fails, as spoutExec.failedBy counts them.
const (
	failedByBolt   = iota // a bolt failed it (or panicked on it)
	failedTimeout         // topology.message.timeout.secs passed
	failedShutdown        // in flight when the topology stopped
	failReasons
)

func (x *spoutExec) fail(t *spoutTask, msgID any, reason error, why int) {
	x.failed++
	x.failedBy[why]++
	if x.mirror.Failed != nil {
		x.mirror.Failed.Store(x.failed)
	}
	x.call(t, func() { t.spout.Fail(msgID, reason) })
	if x.rt.obs.Fail != nil {
		x.rt.obs.Fail(x.comp.id, int(t.em.task), msgID, reason)
	}
}

// expire rotates every task's pending generations and fails the trees that
// fell off the end.
func (x *spoutExec) expire() {
	for _, t := range x.tasks {
		for _, e := range t.pending.rotate() {
			x.resolved++
			x.unquiet()
			x.fail(t, e.msgID, x.timeoutErr, failedTimeout)
		}
	}
	x.publish(false)
}

// expireBlocked handles a timeout tick that came while a send waited for
// room: first the completions parked meanwhile (a tree that completed in
// time must not time out), then the expiry. No user code is running: a
// spout's sends wait only after NextTuple has returned.
func (x *spoutExec) expireBlocked() {
	x.now = x.rt.clock.Now().UnixNano()
	for _, b := range x.out.parked {
		x.handleCtl(b)
	}
	clear(x.out.parked)
	x.out.parked = x.out.parked[:0]
	x.expire()
	x.blockedTicks++
}

// retune sets the automatic in-flight limit from the trees resolved since
// the last retune: a tune tick, interval ago, or an early retune.
func (x *spoutExec) retune(interval time.Duration) {
	if x.tuner != nil {
		x.autotune()
		return
	}
	now := x.rt.clock.Now().UnixNano()
	if x.earlyTuned && now > x.tunedAt {
		interval = time.Duration(now - x.tunedAt)
	}
	x.setAutoLimit(x.limitFor(interval))
	x.tunedAt, x.earlyTuned = now, false
}

// retuneEarly raises the automatic limit before the next tune tick when
// every task is capped by it and the trees resolved since the last retune
// (at least a limit's worth, over at least earlyTuneAfter) show that the
// topology completes more than the limit allows. Without it a spout starts
// at autoPendingFloor and stays there until the first tick, up to 250 ms:
// in two workers at 300k sentences/s, 100 trees per task is less than a
// millisecond of emits, so any hiccup in the first ticks held the spout
// back and the backlog's sentences saw 10 ms and more.
func (x *spoutExec) retuneEarly(now int64) {
	if x.tunedAt == 0 {
		x.tunedAt = now // the first round: the window starts here
		return
	}
	elapsed := time.Duration(now - x.tunedAt)
	if elapsed < earlyTuneAfter || x.resolved < x.autoLimit {
		return
	}
	if n := x.limitFor(elapsed); n > x.autoLimit {
		x.setAutoLimit(n)
		x.tunedAt, x.earlyTuned = now, true
	}
}

// limitFor is the automatic limit per task for the trees resolved over
// elapsed (Little's law: as many in flight as complete in a quarter of the
// message timeout), within the worker's floor and budget.
func (x *spoutExec) limitFor(elapsed time.Duration) int {
	perQuarter := float64(x.resolved) * float64(x.rt.timeout/4) / float64(elapsed)
	return min(x.autoMost, max(x.autoFloor, int(min(perQuarter, 1<<40))/len(x.tasks)))
}

func (x *spoutExec) setAutoLimit(n int) {
	old := x.autoLimit
	x.autoLimit = n
	x.rt.fbBudget.auto.Add(int64((n - old) * len(x.tasks)))
	if n > old {
		x.unquiet()
	}
	x.resolved = 0
}

// earlyTuneAfter is the shortest window an early retune measures over.
const earlyTuneAfter = 2 * time.Millisecond

// fillWindow bounds how long a spout keeps filling a batch before it
// flushes (see run).
const fillWindow = 200 * time.Microsecond

// autoPendingFloor is the least in-flight limit the automatic limit sets
// for a worker, shared by its spout tasks (at least 1 each).
const autoPendingFloor = 100

// autoTuneInterval is how often the automatic limit is recomputed.
func autoTuneInterval(timeout time.Duration) time.Duration {
	return min(250*time.Millisecond, timeout/(pendingBuckets-1))
}

// shutdown delivers acks that already arrived, fails the trees still in
// flight with ErrShutdown and closes each task.
func (x *spoutExec) shutdown() {
	for _, b := range x.out.parked {
		x.handleCtl(b)
	}
	for {
		select {
		case b := <-x.ctl:
			x.handleCtl(b)
			continue
		default:
		}
		break
	}
	for _, t := range x.tasks {
		if x.active {
			x.call(t, t.spout.Deactivate)
		}
		for _, e := range t.pending.drain() {
			x.fail(t, e.msgID, ErrShutdown, failedShutdown)
		}
		x.call(t, t.spout.Close)
	}
	x.pendingCount.Store(0)
	emits := 0
	for _, t := range x.tasks {
		emits += t.emits
	}
	x.publishCounts(emits)
}

// publishCounts makes the executor's counters visible to spoutStats.
func (x *spoutExec) publishCounts(emits int) {
	x.pubEmitted.Store(int64(emits))
	x.pubAcked.Store(x.acked)
	x.pubFailed.Store(x.failed)
	for i := range x.failedBy {
		x.pubFailedBy[i].Store(x.failedBy[i])
	}
	x.pubTransferred.Store(x.out.transferred)
	if x.mirror.Emitted != nil {
		x.mirror.Emitted.Store(int64(emits))
	}
	if x.mirror.Transferred != nil {
		x.mirror.Transferred.Store(x.out.transferred)
	}
	if !x.stats {
		return
	}
	throttled := x.throttled
	if x.cappedAt != 0 {
		throttled += x.now - x.cappedAt
	}
	x.pubThrottled.Store(throttled)
	x.pubBackpressure.Store(x.out.waitNanos)
	var retries, dead int64
	for _, t := range x.tasks {
		if t.retry != nil {
			r, d := t.retry.RetryStats()
			retries, dead = retries+r, dead+d
		}
	}
	x.pubRetries.Store(retries)
	x.pubDeadLetters.Store(dead)
	for _, t := range x.tasks {
		t.em.publishOutputs()
	}
}
