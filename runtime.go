package gale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/ratelog"
	"github.com/gale-stream/gale/internal/transport"
	"github.com/gale-stream/gale/internal/worker"
)

// compInfo is the runtime's view of one component.
type compInfo struct {
	id        string
	def       *ComponentDef
	isSpout   bool
	firstTask int
	numTasks  int
	conf      *config.Effective
	streams   map[string]*streamInfo
	subs      map[string][]*subscription // by output stream
}

// subscription is one bolt's input from a stream.
type subscription struct {
	consumer *compInfo
	stream   string
	grouping GroupingDef
	fieldIdx []int
}

// execSlot is what other executors need to reach an executor.
type execSlot struct {
	in      chan *batch    // bolts: input tuples
	ctl     chan *ackBatch // spouts: tree messages (acks, fails, resets)
	spout   *spoutExec
	isSpout bool

	// Several workers (worker.go). A remote executor has its peer and, unless
	// it is a spout, the credits for sending to it; a local one receives
	// from peers on rin (bolts); a spout's ctl takes its peers' tree
	// messages too.
	peer    *peer
	credits chan struct{}
	rin     chan *batch

	fb *feedbackQueue // bolts consuming a feedback edge (feedback.go); nil otherwise

	// queued counts the tuples in in and rin (a bolt's queue depth), with
	// topology.stats.enabled: senders add, the executor subtracts.
	queued atomic.Int64

	_ [56]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

// runtime runs one topology in this process.
type runtime struct {
	name      string
	topo      *Topology
	conf      *config.Effective
	clock     Clock
	log       *slog.Logger
	debugLog  *slog.Logger // topology.debug's lines (bridge.Hooks.DebugLogger)
	seed      uint64
	quit      chan struct{}
	batchSize int
	timeout   time.Duration
	policy    string

	plan plan.Plan // task ids, executors and stream ids (internal/plan)

	// ctx is every task's TopologyContext.Context; cancel ends it (stop,
	// a failed start).
	ctx    context.Context
	cancel context.CancelFunc

	comps    map[string]*compInfo
	taskExec []int // task id → executor index
	execs    []*execSlot
	// acking: topology.acker.executors is not 0, so spout tuples with a
	// message id start trees, each kept by its spout task (tree.go).
	acking bool
	// upstream caches spoutsUpstream.
	upstream map[*compInfo][]*compInfo

	spoutExecs []*spoutExec
	boltExecs  []*boltExec

	active   atomic.Bool
	stopping atomic.Bool // set just before quit is closed; executors check it between units of work
	// inflight has a cache line of its own: every executor adds to it on
	// every send, and the fields around it are read on every emit.
	_        [cacheLine]byte
	inflight atomic.Int64 // tuples and tree messages sent and not yet processed
	_        [cacheLine - 8]byte
	errCount atomic.Int64
	errMu    sync.Mutex
	lastErrs []ComponentError
	// compErrs are the last maxComponentErrors errors of each component,
	// oldest first, under errMu (metrics.Spout.Errors).
	compErrs map[string][]metrics.Error

	// stats: topology.stats.enabled; sampleEvery: one Execute in this many
	// is timed (topology.stats.sample.rate).
	stats       bool
	sampleEvery int

	capture func(component, stream string, task int, vals []any)
	obs     bridge.Observer

	batchPool sync.Pool
	// freeTuples carries tuples recycled by bolts with TopologyTupleReuse
	// back to emitters; nil when no bolt reuses.
	freeTuples chan []*Tuple
	// emptyChunks carries the chunks of freeTuples back, emptied, so that
	// recycling allocates nothing.
	emptyChunks chan []*Tuple
	checkReuse  bool // bridge.Hooks.CheckTupleReuse
	// wireStreams holds every declared stream by its number in the plan,
	// the same in every worker of the topology (see wire.go).
	wireStreams []wireStream
	ackPool     sync.Pool
	queueCap    int // an executor's queue, in batches
	// peerQueue bounds the frames waiting for each peer's connection, and
	// the frame buffers it gives back (topology.transfer.buffer.size).
	peerQueue int
	spins     int // yields before an idle executor parks (spinsFor)

	feedback map[feedbackEdge]bool // edges closing a cycle (feedback.go)
	fbBudget feedbackBudget        // what the feedback queues may hold
	mem      memBudget             // this worker's memory budget (budget.go)

	// Several workers (worker.go); asg is nil when this process runs every
	// executor.
	asg            *worker.Assignment
	execWorker     []int  // executor index → worker: asg.Executors, or the even placement
	asgFingerprint string // of the assignment at the start, for the hello
	// moves is the assignment in force once Reassign has moved peers
	// (reassign.go): rt.asg with the peers' current addresses.
	moves struct {
		sync.Mutex
		asg   worker.Assignment
		hello transport.Hello // the hello in force
	}
	peers      []*peer
	peerLog    *ratelog.Limiter // rate-limits the lines peers can cause
	hello      transport.Hello
	inMu       sync.Mutex
	inbound    map[*transport.ServerConn]*inbound
	inStale    staleHellos  // under inMu: the hellos the last Reassign made stale
	wireTuples atomic.Int64 // tuples sent to peers
	activeMu   sync.Mutex   // orders the two below with active
	wantActive bool         // Activate/Deactivate's last word (true at start)
	peersUp    int          // peers connected at least once

	wg        sync.WaitGroup
	fatalOnce sync.Once
	died      atomic.Bool // die was called
	fatal     chan error
}

func (rt *runtime) getBatch() *batch {
	if b, ok := rt.batchPool.Get().(*batch); ok {
		return b
	}
	return &batch{tuples: make([]*Tuple, 0, rt.batchSize)}
}

func (rt *runtime) putBatch(b *batch) {
	rt.inflight.Add(-int64(len(b.tuples)))
	if b.origin != nil {
		b.origin.grant(rt.taskExec[b.task])
	}
	rt.recycleBatch(b)
}

// recycleBatch returns b to the pool without counting its tuples as
// processed.
func (rt *runtime) recycleBatch(b *batch) {
	clear(b.tuples)
	b.tuples = b.tuples[:0]
	b.origin = nil
	rt.batchPool.Put(b)
}

func (rt *runtime) getAckBatch() *ackBatch {
	if b, ok := rt.ackPool.Get().(*ackBatch); ok {
		return b
	}
	return &ackBatch{msgs: make([]ackMsg, 0, rt.batchSize)}
}

func (rt *runtime) putAckBatch(b *ackBatch) {
	rt.inflight.Add(-int64(len(b.msgs)))
	rt.recycleAckBatch(b)
}

func (rt *runtime) recycleAckBatch(b *ackBatch) {
	clear(b.msgs)
	b.msgs = b.msgs[:0]
	rt.ackPool.Put(b)
}

// maxTreeQueues bounds treeQueueCap: a spout's tree messages queue in at
// most this many executor queues' worth of batches.
const maxTreeQueues = 8

// treeQueueCap is the capacity, in batches, of spout sp's queue of tree
// messages: an executor queue's for each bolt executor that sends to it
// (each flushes its acks after every input batch, so each may have a
// batch waiting), and one more, up to maxTreeQueues. With one queue's
// worth, word count's two bolts waited on the spout's full queue ~7,000
// times in 4 s, and the spout-side ledger ran 2% faster than the acker
// it replaced instead of 15%.
func (rt *runtime) treeQueueCap(sp *compInfo) int {
	k := 1
	if rt.acking {
		for _, b := range rt.comps {
			if !b.isSpout && slices.Contains(rt.spoutsUpstream(b), sp) {
				k += min(b.numTasks, b.def.Parallelism)
			}
		}
	}
	return rt.queueCap * min(k, maxTreeQueues)
}

// spoutsUpstream returns the spouts whose tuples reach c, directly or
// through other bolts: the spouts c's executors send tree messages to.
func (rt *runtime) spoutsUpstream(c *compInfo) []*compInfo {
	if sp, ok := rt.upstream[c]; ok {
		return sp
	}
	if rt.upstream == nil {
		rt.upstream = make(map[*compInfo][]*compInfo)
		// Every component's producers, then a walk up from each.
		from := make(map[*compInfo][]*compInfo)
		for _, p := range rt.comps {
			for _, subs := range p.subs {
				for _, sub := range subs {
					from[sub.consumer] = append(from[sub.consumer], p)
				}
			}
		}
		for _, b := range rt.comps {
			seen := map[*compInfo]bool{b: true}
			var spouts []*compInfo
			for stack := []*compInfo{b}; len(stack) > 0; {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if x.isSpout {
					spouts = append(spouts, x)
				}
				for _, p := range from[x] {
					if !seen[p] {
						seen[p] = true
						stack = append(stack, p)
					}
				}
			}
			slices.SortFunc(spouts, func(a, b *compInfo) int { return cmp.Compare(a.firstTask, b.firstTask) })
			rt.upstream[b] = spouts
		}
	}
	return rt.upstream[c]
}

// reportError records a component's error (ReportError, a panic, a
// rejected emit): counted, the last few kept for LocalTopology.Errors and
// the last maxComponentErrors of each component for its counters
// (metrics.Spout.Errors, Bolt.Errors). Safe for concurrent use.
func (rt *runtime) reportError(component string, task int, err error) {
	now := rt.clock.Now()
	if rt.obs.Error != nil {
		rt.obs.Error(component, task, now, err)
	}
	rt.errCount.Add(1)
	rt.errMu.Lock()
	defer rt.errMu.Unlock()
	if len(rt.lastErrs) == maxKeptErrors {
		copy(rt.lastErrs, rt.lastErrs[1:])
		rt.lastErrs = rt.lastErrs[:maxKeptErrors-1]
	}
	rt.lastErrs = append(rt.lastErrs, ComponentError{Component: component, Task: task, Time: now, Err: err})
	if rt.compErrs == nil {
		rt.compErrs = make(map[string][]metrics.Error)
	}
	errs := rt.compErrs[component]
	if len(errs) == maxComponentErrors {
		errs = slices.Delete(errs, 0, 1)
	}
	rt.compErrs[component] = append(errs, metrics.Error{Task: task, TimeUnixMs: now.UnixMilli(), Error: err.Error()})
}

// componentErrors returns a copy of a component's last errors, oldest
// first.
func (rt *runtime) componentErrors(component string) []metrics.Error {
	rt.errMu.Lock()
	defer rt.errMu.Unlock()
	return slices.Clone(rt.compErrs[component])
}

const maxKeptErrors = 64

// maxComponentErrors is how many of a component's errors a process keeps
// for its counters (metrics.MaxErrors).
const maxComponentErrors = metrics.MaxErrors

// ComponentError is an error a component reported or caused.
type ComponentError struct {
	Component string
	Task      int
	Time      time.Time
	Err       error
}

// die stops the topology with err (the kill-worker panic policy).
func (rt *runtime) die(err error) {
	rt.died.Store(true)
	rt.fatalOnce.Do(func() { rt.fatal <- err })
}

// handlePanic reports a component's panic per the panic policy and
// returns the error describing it.
func (rt *runtime) handlePanic(component string, task int, v any) *PanicError {
	pe := &PanicError{Component: component, Task: task, Value: v, Stack: string(debug.Stack())}
	rt.log.Error("component panicked", "component", component, "task", task, "panic", fmt.Sprint(v), "policy", rt.policy, "stack", pe.Stack)
	rt.reportError(component, task, pe)
	if rt.policy == PanicPolicyKillWorker {
		rt.die(pe)
	}
	return pe
}

// RunOptions are the optional parts of running a topology.
type RunOptions struct {
	// Logger receives the runtime's logs; nil means slog.Default().
	Logger *slog.Logger
	// Clock is the time source; nil means the system clock.
	Clock Clock
	// file is the cluster's gale.yaml layer, which `gale run` sets
	// (bridge.SetFileConfig); nil means none.
	file Config
	// hooks are the test-only settings (bridge.SetHooks).
	hooks bridge.Hooks
	// spoutMirrors is worker.Options.SpoutMirrors, for a worker process.
	spoutMirrors func([]worker.SpoutSlot) []worker.SpoutMirror
}

func newRuntime(name string, topo *Topology, conf Config, opts RunOptions) (*runtime, error) {
	return newRuntimeWith(name, topo, conf, opts, nil)
}

// newRuntimeWith makes the runtime of one worker of several when asg is
// set (worker.go), of the whole topology otherwise.
func newRuntimeWith(name string, topo *Topology, conf Config, opts RunOptions, asg *worker.Assignment) (*runtime, error) {
	if topo == nil {
		return nil, errors.New("gale: nil topology")
	}
	if name == "" {
		return nil, fmt.Errorf("%w: the topology name is empty", ErrInvalidTopology)
	}
	eff, err := config.Resolve(opts.file, conf)
	if err != nil {
		return nil, err
	}
	eff = eff.WithTopologyName(name) // as Storm's conf carries it to prepare
	rt := &runtime{
		name:  name,
		topo:  topo,
		conf:  eff,
		clock: opts.Clock,
		log:   opts.Logger,
		seed:  rand.Uint64(),
		quit:  make(chan struct{}),
		comps: make(map[string]*compInfo),
		fatal: make(chan error, 1),
		asg:   asg,

		wantActive: true,
	}
	rt.ctx, rt.cancel = context.WithCancel(context.Background())
	rt.checkReuse = opts.hooks.CheckTupleReuse
	rt.spins = spinsFor(goruntime.GOMAXPROCS(0))
	if opts.hooks.Observer != nil {
		rt.obs = *opts.hooks.Observer
		rt.capture = rt.obs.Emit
	}
	if rt.clock == nil {
		rt.clock = systemClock{}
	}
	if rt.log == nil {
		rt.log = slog.Default()
	}
	rt.log = rt.log.With("topology", name)
	rt.debugLog = rt.log
	if opts.hooks.DebugLogger != nil {
		rt.debugLog = opts.hooks.DebugLogger.With("topology", name)
	}
	secs, _ := eff.Int(TopologyMessageTimeoutSecs)
	rt.timeout = time.Duration(secs) * time.Second
	rt.batchSize, _ = eff.Int(TopologyProducerBatchSize)
	rt.batchSize = max(rt.batchSize, 1)
	rt.peerQueue, _ = eff.Int(TopologyTransferBufferSize)
	rt.policy = eff.String(TopologyComponentPanicPolicy)
	rt.stats = eff.Bool(TopologyStatsEnabled)
	rt.sampleEvery = metrics.ExecuteSampleEvery
	if r, set := eff.Float(TopologyStatsSampleRate); set {
		rt.sampleEvery = max(1, int(math.Round(1/r)))
	}
	// Storm's acker executors: 0 turns acking off, as in Storm; any other
	// value (or none: Storm's default of one per worker) turns it on, and
	// each spout task keeps its own trees (tree.go).
	n, set := eff.Int(TopologyAckerExecutors)
	rt.acking = !set || n > 0
	rt.feedback = feedbackEdges(&topo.Def)
	if err := rt.layout(); err != nil {
		return nil, err
	}
	return rt, nil
}

// planTopology is the plan's input (internal/plan): the components with
// their effective numbers. In a worker of several, the
// assignment's Parallelism overrides the components' executor counts.
func (rt *runtime) planTopology() (plan.Topology, map[string]*config.Effective, error) {
	var defs []*ComponentDef
	for i := range rt.topo.Def.Spouts {
		defs = append(defs, &rt.topo.Def.Spouts[i])
	}
	for i := range rt.topo.Def.Bolts {
		defs = append(defs, &rt.topo.Def.Bolts[i])
	}
	// In id order, so that the first bad component config reported is
	// the same every time.
	slices.SortFunc(defs, func(a, b *ComponentDef) int { return cmp.Compare(a.ID, b.ID) })
	var pt plan.Topology
	confs := make(map[string]*config.Effective, len(defs))
	for _, d := range defs {
		ceff, err := rt.conf.ForComponent(d.ID, d.Config)
		if err != nil {
			return plan.Topology{}, nil, err
		}
		confs[d.ID] = ceff
		_, isSpout := rt.topo.spouts[d.ID]
		c := plan.Component{ID: d.ID, Spout: isSpout, Tasks: d.Tasks, Parallelism: d.Parallelism}
		if maxp, set := ceff.Int(TopologyMaxTaskParallelism); set {
			c.MaxTaskParallelism = maxp
		}
		for _, s := range d.Streams {
			c.Streams = append(c.Streams, s.ID)
		}
		for _, in := range d.Inputs {
			c.Inputs = append(c.Inputs, plan.Input{Component: in.Component, Stream: in.Stream,
				Grouping: in.Grouping.stormName(), Fields: slices.Clone(in.Grouping.Fields)})
		}
		pt.Components = append(pt.Components, c)
	}
	if rt.asg != nil && len(rt.asg.Parallelism) > 0 {
		// A rebalance's executor counts (-e component=N) replace the
		// definition's, within the component's tasks.
		var err error
		if pt, err = pt.WithParallelism(rt.asg.Parallelism); err != nil {
			return plan.Topology{}, nil, fmt.Errorf("%w: %w", worker.ErrInvalidAssignment, err)
		}
	}
	return pt, confs, nil
}

// layout computes the plan (task ids, executors, stream ids: see
// internal/plan) and builds on it this process's components,
// subscriptions and executors; in a worker of several, only those the
// assignment places here.
func (rt *runtime) layout() error {
	pt, confs, err := rt.planTopology()
	if err != nil {
		return err
	}
	p, err := plan.New(pt)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTopology, err)
	}
	rt.plan = p
	rt.taskExec = lineClone(p.TaskExecutors())
	var order []*compInfo
	for _, cp := range p.Components {
		d, _ := rt.topo.Def.Component(cp.ID)
		c := &compInfo{id: cp.ID, def: d, isSpout: cp.Kind == plan.Spout, firstTask: cp.FirstTask, numTasks: cp.Tasks,
			conf: confs[cp.ID], streams: make(map[string]*streamInfo), subs: make(map[string][]*subscription)}
		rt.comps[cp.ID] = c
		order = append(order, c)
		if last := c.firstTask + c.numTasks - 1; c.isSpout && rt.acking && last > maxTreeTask {
			return fmt.Errorf("%w: spout %q has task ids up to %d, and with acking on a spout's task ids must stay under %d (tree.go): "+
				"give the topology fewer tasks, or turn acking off (topology.acker.executors: 0)", ErrInvalidTopology, c.id, last, maxTreeTask+1)
		}
	}
	for id, ps := range p.Streams {
		c := rt.comps[ps.Component]
		s, _ := c.def.Stream(ps.Stream)
		si := newStreamInfo(c.id, s.ID, s.Fields, s.Direct)
		si.wireID = uint32(id)
		c.streams[s.ID] = si
		rt.wireStreams = append(rt.wireStreams, wireStream{info: si, comp: c})
	}
	for _, c := range order {
		for _, in := range c.def.Inputs {
			src := rt.comps[in.Component]
			sub := &subscription{consumer: c, stream: in.Stream, grouping: in.Grouping}
			for _, f := range in.Grouping.Fields {
				sub.fieldIdx = append(sub.fieldIdx, slices.Index(src.streams[in.Stream].fields, f))
			}
			src.subs[in.Stream] = append(src.subs[in.Stream], sub)
		}
	}
	for _, c := range order {
		if !c.isSpout && c.conf.Bool(TopologyTupleReuse) {
			rt.freeTuples = make(chan []*Tuple, freeTupleChunks)
			rt.emptyChunks = make(chan []*Tuple, freeTupleChunks)
			break
		}
	}
	recv, _ := rt.conf.Int(TopologyExecutorReceiveBufferSize)
	queueCap := max(2, recv/rt.batchSize)
	rt.queueCap = queueCap
	for _, e := range p.Executors {
		slot := &execSlot{isSpout: e.Kind == plan.Spout}
		if e.Kind == plan.Bolt {
			slot.in = make(chan *batch, queueCap)
		} else {
			slot.ctl = make(chan *ackBatch, rt.treeQueueCap(rt.comps[e.Component]))
		}
		rt.execs = append(rt.execs, slot)
	}
	rt.execs = lineClone(rt.execs)
	if rt.asg != nil {
		if err := rt.assign(); err != nil {
			return err
		}
		rt.inbound = make(map[*transport.ServerConn]*inbound)
		rt.setupPeers()
	}
	if err := rt.checkBudget(); err != nil {
		return err
	}
	// Now that every executor has a slot, make this process's executors.
	for idx, e := range p.Executors {
		if !rt.local(idx) {
			continue
		}
		switch e.Kind {
		case plan.Spout:
			x := newSpoutExec(rt, idx, rt.comps[e.Component], e.FirstTask, e.Tasks)
			rt.execs[idx].spout = x
			rt.spoutExecs = append(rt.spoutExecs, x)
		case plan.Bolt:
			rt.boltExecs = append(rt.boltExecs, newBoltExec(rt, idx, rt.comps[e.Component], e.FirstTask, e.Tasks))
		}
	}
	return nil
}

func (rt *runtime) context(c *compInfo, task int) *TopologyContext {
	return &TopologyContext{
		topologyName: rt.name,
		componentID:  c.id,
		taskID:       task,
		taskIndex:    task - c.firstTask,
		config:       &Effective{c.conf},
		rt:           rt,
		log:          rt.log.With("component", c.id, "task", task),
	}
}

// start opens every spout and prepares every bolt, then starts the
// executors. If any Open or Prepare fails, the ones already set up are
// closed and the error returned.
func (rt *runtime) start() error {
	var started []func()
	undo := func() {
		rt.cancel()
		for i := len(started) - 1; i >= 0; i-- {
			started[i]()
		}
	}
	for _, x := range rt.boltExecs {
		for _, t := range x.tasks {
			if err := rt.guard(t.em.comp.id, int(t.em.task), func() error { return t.bolt.Prepare(t.tc, t.coll) }); err != nil {
				undo()
				return fmt.Errorf("gale: prepare bolt %q task %d: %w", t.em.comp.id, t.em.task, err)
			}
			started = append(started, func() { rt.guard(t.em.comp.id, int(t.em.task), func() error { t.bolt.Cleanup(); return nil }) })
		}
	}
	for _, x := range rt.spoutExecs {
		for _, t := range x.tasks {
			if err := rt.guard(t.em.comp.id, int(t.em.task), func() error { return t.spout.Open(t.tc, t.coll) }); err != nil {
				undo()
				return fmt.Errorf("gale: open spout %q task %d: %w", t.em.comp.id, t.em.task, err)
			}
			started = append(started, func() { rt.guard(t.em.comp.id, int(t.em.task), func() error { t.spout.Close(); return nil }) })
		}
	}
	// A worker of several activates its spouts once it is connected to
	// every peer (worker.go), as Storm's workers wait for their
	// connections: tuples emitted before would only wait for credit.
	if rt.asg == nil {
		rt.active.Store(true)
	} else {
		rt.activeMu.Lock()
		rt.active.Store(rt.wantActive && rt.peersUp == len(rt.asg.Workers)-1)
		rt.activeMu.Unlock()
	}
	// Tickers are made here, before any executor runs, so that on a manual
	// clock their phase does not depend on goroutine scheduling.
	for _, x := range rt.boltExecs {
		x.tk = nilTicker{}
		if x.tick > 0 {
			x.tk = rt.newTicker(x.tick)
		}
	}
	for _, x := range rt.spoutExecs {
		x.timeoutTk, x.tuneTk = nilTicker{}, nilTicker{}
		if rt.acking {
			x.timeoutTk = rt.newTicker(rt.timeout / (pendingBuckets - 1))
		}
		if d := x.tuneInterval(); d > 0 {
			x.tuneTk = rt.newTicker(d)
		}
	}
	for _, x := range rt.boltExecs {
		rt.wg.Add(1)
		go x.run()
	}
	for _, x := range rt.spoutExecs {
		rt.wg.Add(1)
		go x.run()
	}
	return nil
}

// guard calls fn, turning a panic into an error.
func (rt *runtime) guard(component string, task int, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = rt.handlePanic(component, task, r)
		}
	}()
	return fn()
}

// pending is the number of trees in flight at all spouts.
func (rt *runtime) pending() int64 {
	var n int64
	for _, x := range rt.spoutExecs {
		n += x.pendingCount.Load()
	}
	return n
}

// spoutsStopped reports whether every spout executor has seen the
// deactivation and published its pending count since.
func (rt *runtime) spoutsStopped() bool {
	for _, x := range rt.spoutExecs {
		if !x.stopped.Load() {
			return false
		}
	}
	return true
}

// stop deactivates the spouts, waits up to drain for in-flight trees to
// complete and queued tuples to be processed, cancels the tasks' Context,
// then stops every executor; each closes or cleans up its tasks exactly
// once. Trees still pending are failed with ErrShutdown.
func (rt *runtime) stop(drain time.Duration) {
	rt.active.Store(false)
	if drain > 0 {
		deadline := time.Now().Add(drain)
		poll := time.NewTicker(time.Millisecond)
		// Wait for every spout to see the deactivation (so the trees of
		// its last round are counted), then for the trees to finish and
		// the queues to empty (with acking off there are no trees, but
		// queued tuples are still worth delivering).
		for (!rt.spoutsStopped() || rt.pending() > 0 || rt.inflight.Load() > 0) && time.Now().Before(deadline) {
			<-poll.C
		}
		poll.Stop()
	}
	rt.cancel()
	rt.stopping.Store(true)
	close(rt.quit)
	rt.wg.Wait()
}

// freeTupleChunks bounds the recycled tuples waiting for an emitter:
// 64 chunks of recycleChunk tuples, 1 MiB.
const freeTupleChunks = 64
