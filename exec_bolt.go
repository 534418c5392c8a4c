package gale

import (
	"log/slog"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/ratelog"
)

// boltTask is one bolt instance with its collector.
type boltTask struct {
	rt   *runtime
	bolt Bolt
	tc   *TopologyContext
	coll *BoltCollector
	em   *emitter

	wakeFns []func()      // registered by Wakeup, run on the executor's goroutine
	woken   atomic.Bool   // a wake since the fns last ran
	retry   RetryReporter // the bolt, if it reports its retries; nil otherwise

	// keepFail and logFail rate-limit the errors of BoltCollector.Fail
	// kept among the component's errors and logged.
	keepFail, logFail *ratelog.Limiter

	_ [16]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

// The errors of BoltCollector.Fail a task keeps among its component's
// recent errors: the first failErrorBurst of every failErrorInterval, so
// that a bolt failing every input keeps recent ones without taking the
// errors' lock for each.
const (
	failErrorBurst    = maxComponentErrors
	failErrorInterval = 10 * time.Second
)

// failed keeps and logs err, an input's failure (BoltCollector.Fail),
// within the task's rate limits.
func (t *boltTask) failed(err error) {
	if ok, _ := t.keepFail.Allow(); ok {
		t.rt.reportError(t.em.comp.id, int(t.em.task), err)
	}
	t.logFail.Log(t.em.log, slog.LevelWarn, "input failed", "err", err)
}

// boltExec runs a bolt's tasks in one goroutine.
type boltExec struct {
	rt    *runtime
	idx   int
	comp  *compInfo
	first int32
	tasks []*boltTask
	out   *outbox
	in    chan *batch
	rin   chan *batch    // from other workers; nil in one process
	fb    *feedbackQueue // from feedback edges (cycles); nil if none, drained first
	tick  time.Duration
	tk    Ticker         // tick tuples; made by start
	reuse *tupleRecycler // nil unless TopologyTupleReuse
	wakeC chan struct{}  // a task was woken (BoltCollector.Wakeup); capacity 1

	// Counters for boltStats, kept by the executor's goroutine: inputs
	// executed, and the Execute calls timed (one in rt.sampleEvery;
	// sampleIn counts down to the next) and their total time; arrived is
	// when the batch holding the next one timed was taken off the queue,
	// the start of its process latency (proc). publish copies them, with
	// the tasks' and the outbox's, into pub after each unit of work. With
	// topology.stats.enabled false none is kept.
	stats                           bool
	inputs                          *inputStats // per input stream; nil with the metrics off
	executed, samples, sampledNanos int64
	sampleIn                        int
	arrived                         int64
	proc                            procSample
	pub                             struct {
		executed, acked, failed, emitted, transferred, samples, sampledNanos atomic.Int64
		procSamples, procNanos, backpressure, retries, deadLetters           atomic.Int64
		// The time busy with input (busy): read with busyNanos, which
		// also counts a unit of work still running (since, while gen is
		// odd).
		busy, since, gen atomic.Int64
	}
	// busyNanos is the time spent in units of work (executing input,
	// ticks, wakeups), less the time they waited to emit on a full queue;
	// busyAt and busyWait mark the running unit's start.
	busyNanos, busyAt, busyWait int64
	// capacity is the share of its window the executor was busy, read
	// by boltStats.
	capacity metrics.Capacity

	// A tick taken off tk and held (held) until the input batches queued
	// before it have been taken: ahead more from in, aheadR from rin.
	held          bool
	ahead, aheadR int

	_ [56]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

// procSample is the input tuple an executor is timing the process latency
// of: from at, its arrival, to its ack. It belongs to the executor's
// goroutine; the emitters of its tasks record into it. An ack during the
// tuple's own Execute (inExec), the common case, is timed by the clock
// reading that ends the Execute's timing, which saves a reading.
type procSample struct {
	clock           Clock
	t               *Tuple   // nil: none being timed
	c               *inCount // t's input stream's counters
	at              int64    // clock nanos
	inExec, ackedIn bool     // t's Execute is running; t was acked in it
	samples, sum    int64    // the tuples timed and their total nanos
}

// acked ends the timing of t, if it is the tuple timed.
func (p *procSample) acked(t *Tuple) {
	if p.t != t {
		return
	}
	p.t = nil
	if p.inExec {
		p.ackedIn = true
		return
	}
	p.record(p.clock.Now().UnixNano())
}

func (p *procSample) record(now int64) {
	p.samples++
	p.sum += now - p.at
	p.c.procSamples++
	p.c.procNanos += now - p.at
}

func newBoltExec(rt *runtime, idx int, c *compInfo, first, n int) *boltExec {
	x := &boltExec{rt: rt, idx: idx, comp: c, first: int32(first), in: rt.execs[idx].in, rin: rt.execs[idx].rin,
		wakeC: make(chan struct{}, 1), stats: rt.stats}
	x.proc.clock = rt.clock
	x.inputs = newInputStats(rt, c)
	x.out = newOutbox(rt, true, c)
	x.out.fbDest = rt.feedbackDests(c)
	if rt.hasFeedbackInput(c) {
		x.fb = newFeedbackQueue(c.id, &rt.fbBudget)
		rt.execs[idx].fb = x.fb
	}
	if c.conf.Bool(TopologyTupleReuse) {
		x.reuse = newTupleRecycler(rt)
	}
	if secs, set := c.conf.Int(TopologyTickTupleFreqSecs); set {
		x.tick = time.Duration(secs) * time.Second
	}
	for i := 0; i < n; i++ {
		task := first + i
		t := &boltTask{rt: rt, bolt: rt.topo.bolts[c.id](),
			keepFail: ratelog.New(failErrorBurst, failErrorInterval, rt.clock.Now), logFail: ratelog.New(0, 0, rt.clock.Now)}
		t.retry, _ = t.bolt.(RetryReporter)
		if a, ok := t.bolt.(*basicBoltAdapter); ok {
			t.retry, _ = a.b.(RetryReporter)
		}
		t.tc = rt.context(c, task)
		t.em = newEmitter(rt, c, task, x.out, t.tc.log)
		if x.stats {
			t.em.proc, t.em.in = &x.proc, x.inputs
		}
		t.coll = &BoltCollector{task: t, x: x}
		x.tasks = append(x.tasks, t)
	}
	x.tasks = lineClone(x.tasks)
	x.capacity.Start(rt.clock.Now().UnixNano())
	return x
}

func (x *boltExec) run() {
	defer x.rt.wg.Done()
	defer x.cleanup()
	tk := x.tk
	defer tk.Stop()
	// A tick waits behind the input queued before it (tickTaken); while
	// it is held, ticks is nil, so no second one is taken.
	tickC := tk.C()
	ticks := tickC
	for n := 0; ; n++ {
		ticked := false
		var in *batch
		if x.rt.stopping.Load() {
			return
		}
		if n%busyYieldEvery == 0 {
			// Never hold a P for a whole scheduler slice (10 ms) while
			// other executors wait: a busy executor yields now and then.
			goruntime.Gosched()
		}
		// A select locks every channel it names, so look first (len is a
		// cheap hint, exact for this single consumer). When nothing is
		// ready, yield a few times before parking (Storm's progressive
		// wait): waking a parked goroutine costs more than a yield when
		// the producer is busy.
		for spin := 0; spin < x.rt.spins && len(x.in) == 0 && len(x.rin) == 0 && len(ticks) == 0 && len(x.wakeC) == 0 && !x.fb.ready(); spin++ {
			goruntime.Gosched()
		}
		switch {
		case len(ticks) > 0:
			<-ticks
			if ticked = x.tickTaken(); !ticked {
				ticks = nil
			}
		case len(x.wakeC) > 0:
			<-x.wakeC
			x.runWakes()
		case x.fb.ready():
			// What goes round a cycle first: it finishes trees already in
			// flight, while new input waits and holds the spouts back.
			in = x.fb.pop()
			x.process(in)
		case len(x.rin) > 0 && (n&1 == 1 || len(x.in) == 0):
			// Local and remote input take turns.
			in = <-x.rin
			x.dequeued(in)
			if x.held && x.tookAhead(true) {
				ticks, ticked = tickC, true
			}
		case len(x.in) > 0:
			in = <-x.in
			x.dequeued(in)
			if x.held && x.tookAhead(false) {
				ticks, ticked = tickC, true
			}
		default:
			select {
			case in = <-x.in:
				x.dequeued(in)
				if x.held && x.tookAhead(false) {
					ticks, ticked = tickC, true
				}
			case in = <-x.rin:
				x.dequeued(in)
				if x.held && x.tookAhead(true) {
					ticks, ticked = tickC, true
				}
			case <-ticks:
				if ticked = x.tickTaken(); !ticked {
					ticks = nil
				}
			case <-x.wakeC:
				x.runWakes()
			case <-x.fb.wakeC():
				// Taken at the top of the next turn.
			case <-x.rt.quit:
				return
			}
		}
		if !x.out.flush() {
			return
		}
		x.publish()
		if in != nil {
			// Released only now, so the in-flight count covers the input
			// until what it caused has been sent on (shutdown's drain and
			// galetest rely on it).
			if x.reuse != nil {
				for _, t := range in.tuples {
					x.reuse.put(t)
				}
			}
			x.rt.putBatch(in)
		}
		if ticked {
			tickDone(tk)
		}
	}
}

// busyYieldEvery is how many units of work an executor does between
// yields when it never has to wait. Executors are goroutines sharing
// GOMAXPROCS threads; Go preempts a goroutine only after 10 ms, so without
// this a busy bolt could keep another bolt or a spout off the CPU that long.
const busyYieldEvery = 8

// spinYields is how many times an executor with an empty queue yields
// before it parks.
const spinYields = 4

// spinsFor is the number of yields before parking with procs Ps. With one
// P, never: a P kept busy by yielding goroutines never goes idle, and an
// idle P is what polls the network at once; otherwise only sysmon does,
// every 10 ms, and tuples from other workers waited that long (2-worker
// bench at 250k sentences/s, pairs: p99 9.5/3.8/2.7 ms without spinning
// against 18.2/41.5/32.7 with).
func spinsFor(procs int) int {
	if procs == 1 {
		return 0
	}
	return spinYields
}

// dequeued processes a batch taken off the executor's queues (in, rin).
func (x *boltExec) dequeued(b *batch) {
	if x.stats {
		x.rt.execs[x.idx].queued.Add(-int64(len(b.tuples)))
	}
	x.process(b)
}

func (x *boltExec) process(b *batch) {
	x.busyStart()
	defer x.busyEnd()
	task := x.tasks[b.task-x.first]
	x.executed += int64(len(b.tuples))
	if x.stats {
		x.inputs.executed(b.tuples)
		if x.sampleIn <= len(b.tuples) {
			// A tuple of this batch is timed: its process latency starts now.
			x.arrived = x.rt.clock.Now().UnixNano()
		}
	}
	for i := 0; i < len(b.tuples); {
		i = x.executeFrom(task, b.tuples, i)
	}
}

// executeFrom executes ts[i:], returning len(ts); if a bolt panics it
// applies the panic policy to that tuple and returns the index after it.
func (x *boltExec) executeFrom(task *boltTask, ts []*Tuple, i int) (next int) {
	defer func() {
		if r := recover(); r != nil {
			x.proc.inExec = false
			pe := x.rt.handlePanic(x.comp.id, int(task.em.task), r)
			task.em.fail(ts[next], pe)
			next++
		}
	}()
	bolt := task.bolt
	if !x.stats {
		for next = i; next < len(ts); next++ {
			bolt.Execute(ts[next])
		}
		return next
	}
	for next = i; next < len(ts); next++ {
		if x.sampleIn--; x.sampleIn > 0 {
			bolt.Execute(ts[next])
			continue
		}
		// Timing every call would cost two clock reads a tuple.
		x.sampleIn = x.rt.sampleEvery
		start := x.rt.clock.Now()
		p := &x.proc
		p.t, p.c, p.at, p.inExec, p.ackedIn = ts[next], x.inputs.of(ts[next]), x.arrived, true, false
		bolt.Execute(ts[next])
		end := x.rt.clock.Now()
		p.inExec = false
		if p.ackedIn {
			p.record(end.UnixNano())
		}
		d := int64(end.Sub(start))
		x.samples++
		x.sampledNanos += d
		p.c.samples++
		p.c.sampledNanos += d
	}
	return next
}

// publish makes the executor's counters visible to boltStats.
func (x *boltExec) publish() {
	if !x.stats {
		return
	}
	var emitted, acked, failed, retries, dead int64
	for _, t := range x.tasks {
		emitted += t.em.emitted
		acked += t.em.acked
		failed += t.em.failed
		if t.retry != nil {
			r, d := t.retry.RetryStats()
			retries, dead = retries+r, dead+d
		}
	}
	p := &x.pub
	p.executed.Store(x.executed)
	p.acked.Store(acked)
	p.failed.Store(failed)
	p.emitted.Store(emitted)
	p.transferred.Store(x.out.transferred)
	p.samples.Store(x.samples)
	p.sampledNanos.Store(x.sampledNanos)
	p.procSamples.Store(x.proc.samples)
	p.procNanos.Store(x.proc.sum)
	p.backpressure.Store(x.out.waitNanos)
	p.retries.Store(retries)
	p.deadLetters.Store(dead)
	x.inputs.publish()
	for _, t := range x.tasks {
		t.em.publishOutputs()
	}
}

// busyStart marks the start of a unit of work for capacity.
func (x *boltExec) busyStart() {
	if !x.stats {
		return
	}
	x.busyAt, x.busyWait = x.rt.clock.Now().UnixNano(), x.out.waitNanos
	x.pub.since.Store(x.busyAt)
	x.pub.gen.Add(1) // odd: busy
}

// busyEnd adds the unit of work that busyStart began to the time busy,
// less what it waited on a full queue (that time belongs to the bolt
// downstream, whose capacity shows it).
func (x *boltExec) busyEnd() {
	if !x.stats {
		return
	}
	d := x.rt.clock.Now().UnixNano() - x.busyAt - (x.out.waitNanos - x.busyWait)
	x.busyNanos += max(d, 0)
	x.pub.busy.Store(x.busyNanos)
	x.pub.gen.Add(1) // even: idle
}

// busyUntil is the executor's time busy up to now (clock nanos),
// counting the unit of work it is in, so that a bolt stuck in a long
// Execute shows busy at once. A sequence count (gen) keeps the two
// readings consistent; any goroutine may call it.
func (x *boltExec) busyUntil(now int64) int64 {
	p := &x.pub
	for range 64 {
		g := p.gen.Load()
		busy, since := p.busy.Load(), p.since.Load()
		if p.gen.Load() != g {
			continue
		}
		if g&1 == 1 && now > since {
			busy += now - since
		}
		return busy
	}
	return p.busy.Load()
}

// runWakes runs the Wakeup functions of the tasks woken since they last
// ran. A panic in one is handled as a panic in Execute, without a tuple.
func (x *boltExec) runWakes() {
	x.busyStart()
	defer x.busyEnd()
	for _, task := range x.tasks {
		if len(task.wakeFns) == 0 || !task.woken.Swap(false) {
			continue
		}
		for _, fn := range task.wakeFns {
			func() {
				defer func() {
					if r := recover(); r != nil {
						x.rt.handlePanic(x.comp.id, int(task.em.task), r)
					}
				}()
				fn()
			}()
		}
	}
}

// tickTaken handles a tick just taken off the ticker. As in Storm, where
// the tick tuple joins the executor's receive queue, it goes after the
// input already queued: with nothing queued it is delivered now, and
// tickTaken returns true; otherwise it is held, noting how many batches
// are queued ahead of it, and delivered by tookAhead once they have been
// taken. The queues have one consumer, this executor, so those batches
// are exactly the next ones it takes from each queue. (While one queue
// drains its batches ahead, batches that came after the tick may be taken
// from the other, in the queues' usual alternation.)
func (x *boltExec) tickTaken() bool {
	x.ahead, x.aheadR = len(x.in), len(x.rin)
	if x.ahead == 0 && x.aheadR == 0 {
		x.deliverTicks()
		return true
	}
	x.held = true
	return false
}

// tookAhead counts a batch processed from rin (remote) or in while a tick
// is held, and delivers the tick if no batch queued before it remains. It
// reports whether it delivered it.
func (x *boltExec) tookAhead(remote bool) bool {
	if remote {
		if x.aheadR > 0 {
			x.aheadR--
		}
	} else if x.ahead > 0 {
		x.ahead--
	}
	if x.ahead > 0 || x.aheadR > 0 {
		return false
	}
	x.held = false
	x.deliverTicks()
	return true
}

func (x *boltExec) deliverTicks() {
	x.busyStart()
	defer x.busyEnd()
	secs := int(x.tick / time.Second)
	sampleIn := x.sampleIn
	x.sampleIn = 1 << 30 // tick tuples are not timed
	for _, task := range x.tasks {
		t := &Tuple{src: tickInfo}
		t.inl[0] = secs
		x.executeFrom(task, []*Tuple{t}, 0)
	}
	x.sampleIn = sampleIn
}

func (x *boltExec) cleanup() {
	for _, t := range x.tasks {
		x.rt.guard(x.comp.id, int(t.em.task), func() error { t.bolt.Cleanup(); return nil })
	}
	x.publish()
}
