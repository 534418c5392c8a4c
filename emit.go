package gale

import (
	"errors"
	"fmt"
	"github.com/gale-stream/gale/internal/box"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/gale-stream/gale/internal/xrand"
)

// Emit errors; the returned error wraps one of these and names the
// component and stream.
var (
	ErrUndeclaredStream = errors.New("gale: emit on an undeclared stream")
	ErrWrongArity       = errors.New("gale: emit with the wrong number of values")
	ErrDirect           = errors.New("gale: direct emit mismatch")
	ErrGrouping         = errors.New("gale: a custom grouping chose an invalid task")
	// ErrNotSerializable: a value cannot cross to another worker (an
	// unregistered type, or a TypeCodec that failed). The error also wraps
	// the codec's, whose message names the type.
	ErrNotSerializable = errors.New("gale: emit of a value that cannot be sent between workers")
)

// emitter is the emitting half of one task: its output streams, routers,
// random source and tuple slab. It belongs to the task's executor goroutine.
type emitter struct {
	strs     box.Strings // EmitString's values
	rt       *runtime
	comp     *compInfo
	task     int32
	out      *outbox
	rng      *xrand.Source
	outs     map[string]*outStream
	defOut   *outStream
	slab     tupleSlab
	targets  []int
	logged   map[string]bool
	log      *slog.Logger
	debug    bool // topology.debug: log every emit, to debugLog
	debugLog *slog.Logger
	poison   *tuplePoison // set when acked inputs must be poisoned (bridge.Hooks.CheckTupleReuse)
	// trySerialize (topology.testing.always.try.serialize) encodes and
	// decodes every emit's values, into wire.
	trySerialize bool
	// plain: no hook watches this task's emits (no capture, debug log,
	// serialization check or reuse poisoning), so emitOne may skip them.
	plain    bool
	wire     []byte
	wireVals []any

	// A bolt task's counters (metrics.Bolt), kept by its executor's
	// goroutine: tuples emitted, inputs acked and failed.
	emitted, acked, failed int64
	// proc is the bolt executor's process latency sample and in its
	// per-input-stream counters; nil for spouts and with
	// topology.stats.enabled false. stats: count per output stream, in
	// outList (the streams in id order).
	proc    *procSample
	in      *inputStats
	stats   bool
	outList []*outStream

	_ [48]byte // to whole cache lines: see TestHotStructsFillCacheLines
}

func newEmitter(rt *runtime, comp *compInfo, task int, out *outbox, log *slog.Logger) *emitter {
	e := &emitter{
		slab: tupleSlab{pool: rt.freeTuples, empties: rt.emptyChunks},
		rt:   rt,
		comp: comp,
		task: int32(task),
		out:  out,
		rng:  xrand.New(rt.seed ^ uint64(task)*0x9e3779b97f4a7c15),
		outs: make(map[string]*outStream, len(comp.streams)),
		log:  log,
	}
	e.debug = comp.conf.Bool(TopologyDebug)
	if e.debug {
		e.debugLog = log
		if rt.debugLog != rt.log {
			e.debugLog = rt.debugLog.With("component", comp.id, "task", task)
		}
	}
	e.trySerialize = rt.conf.Bool(TopologyTestingAlwaysTrySerialize)
	if rt.checkReuse && !comp.isSpout && comp.conf.Bool(TopologyTupleReuse) {
		e.poison = newTuplePoison(comp.id)
	}
	for id, csi := range comp.streams {
		si := *csi
		si.task = int32(task)
		os := &outStream{info: &si, arity: len(si.fields), direct: si.direct}
		for _, sub := range comp.subs[id] {
			r := newRouter(rt, sub, task, e.rng)
			os.subs = append(os.subs, r)
			os.custom = os.custom || r.kind == kindCustom
			for _, t := range r.tasks {
				os.remote = os.remote || !rt.local(rt.taskExec[t])
			}
		}
		e.outs[id] = os
		if id == DefaultStream {
			e.defOut = os
		}
		e.outList = append(e.outList, os)
	}
	for _, os := range e.outs {
		os.subs = lineClone(os.subs)
		os.oneSub = !os.direct && len(os.subs) == 1 && os.subs[0].kind != kindCustom && os.subs[0].kind != kindDirect
	}
	e.plain = !e.trySerialize && !e.debug && e.poison == nil && rt.capture == nil
	e.targets = lineSlice[int](0)
	slices.SortFunc(e.outList, func(a, b *outStream) int { return strings.Compare(a.info.stream, b.info.stream) })
	e.stats = rt.stats
	return e
}

// countOut counts an emit on os to e.targets, with the metrics on.
func (e *emitter) countOut(os *outStream) {
	os.emitted++
	if os.remote {
		for _, dst := range e.targets {
			if !e.rt.local(e.rt.taskExec[dst]) {
				os.transferred++
			}
		}
	}
}

// emitError reports a bad emit once per stream and kind, and returns it.
func (e *emitter) emitError(err error) error {
	key := err.Error()
	if !e.logged[key] {
		if e.logged == nil {
			e.logged = make(map[string]bool)
		}
		e.logged[key] = true
		e.log.Error("emit rejected", "err", err)
	}
	e.rt.reportError(e.comp.id, int(e.task), err)
	return err
}

// prepare validates an emit, makes the first tuple and chooses the target
// tasks into e.targets.
//
// os is the stream's outStream as resolved by outFor (nil if undeclared).
func (e *emitter) prepare(os *outStream, stream string, vals []any, direct int) (*Tuple, error) {
	if os == nil || len(vals) != os.arity || os.direct != (direct >= 0) {
		return nil, e.badEmit(os, stream, len(vals), direct)
	}
	if e.trySerialize {
		if err := e.serialize(stream, vals); err != nil {
			return nil, err
		}
	} else if os.remote {
		if err := e.encodable(stream, vals); err != nil {
			return nil, err
		}
	}
	t := e.slab.get()
	t.src = os.info
	t.setValues(vals)
	e.targets = e.targets[:0]
	if !os.custom {
		for _, r := range os.subs {
			e.targets = r.choose(e.targets, vals, direct)
		}
	} else {
		tvals := t.Values()
		for _, r := range os.subs {
			if r.kind != kindCustom {
				e.targets = r.choose(e.targets, vals, direct)
				continue
			}
			var err error
			if e.targets, err = r.chooseCustom(e.targets, tvals, int(e.task)); err != nil {
				return nil, e.emitError(fmt.Errorf("component %q stream %q: %w", e.comp.id, stream, err))
			}
		}
	}
	if direct >= 0 && len(e.targets) == 0 {
		return nil, e.emitError(fmt.Errorf("%w: component %q sent a direct tuple on stream %q to task %d, which does not subscribe to it with direct grouping", ErrDirect, e.comp.id, stream, direct))
	}
	if e.rt.capture != nil {
		e.rt.capture(e.comp.id, stream, int(e.task), t.Values())
	}
	if e.debug {
		e.debugLog.Info("emitting", "stream", stream, "values", t.Values(), "tasks", e.targets)
	}
	return t, nil
}

// outFor returns the outStream of a stream, or nil if it is not declared.
func (e *emitter) outFor(stream string) *outStream {
	if stream == DefaultStream {
		return e.defOut
	}
	return e.outs[stream]
}

// serialize encodes and decodes vals as a send to another worker would,
// so that a value that cannot cross shows in tests run in one process.
//
//go:noinline
func (e *emitter) serialize(stream string, vals []any) error {
	types := e.rt.topo.types
	wire, err := types.AppendValues(e.wire[:0], vals)
	e.wire = wire
	if err == nil {
		e.wireVals, _, err = types.DecodeValues(wire, e.wireVals[:0])
		clear(e.wireVals)
	}
	if err != nil {
		return e.emitError(fmt.Errorf("%w: component %q stream %q: %w (topology.testing.always.try.serialize)", ErrNotSerializable, e.comp.id, stream, err))
	}
	return nil
}

// encodable checks that vals can be sent to another worker: the stream
// has subscribers in other workers, and the values are encoded only when
// the batch is sent, too late to fail the emit.
func (e *emitter) encodable(stream string, vals []any) error {
	simple := true
	for _, v := range vals {
		switch v.(type) {
		case nil, bool, string, int, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8, uintptr,
			float64, float32, []byte, time.Time:
		default:
			simple = false
		}
	}
	if simple {
		return nil // the codec takes every value of these types
	}
	wire, err := e.rt.topo.types.AppendValues(e.wire[:0], vals)
	e.wire = wire[:0]
	if err != nil {
		return e.emitError(fmt.Errorf("%w: component %q stream %q: %w (register the type with TopologyBuilder.RegisterType)", ErrNotSerializable, e.comp.id, stream, err))
	}
	return nil
}

// badEmit explains why an emit was rejected; it is off the hot path.
//
//go:noinline
func (e *emitter) badEmit(os *outStream, stream string, n, direct int) error {
	switch {
	case os == nil:
		return e.emitError(fmt.Errorf("%w: component %q emitted on stream %q, which it does not declare (declare it in DeclareOutputFields)", ErrUndeclaredStream, e.comp.id, stream))
	case n != len(os.info.fields):
		return e.emitError(fmt.Errorf("%w: component %q emitted %d values on stream %q, which declares %d fields %v", ErrWrongArity, e.comp.id, n, stream, len(os.info.fields), os.info.fields))
	case direct >= 0:
		return e.emitError(fmt.Errorf("%w: component %q used EmitDirect on stream %q, which is not direct (declare it with DeclareDirectStream)", ErrDirect, e.comp.id, stream))
	default:
		return e.emitError(fmt.Errorf("%w: component %q emitted on direct stream %q without a task; use EmitDirect", ErrDirect, e.comp.id, stream))
	}
}

// negativeTask is the error for an EmitDirect to a task id below 0.
func (e *emitter) negativeTask(stream string, task int) error {
	return e.emitError(fmt.Errorf("%w: component %q used EmitDirect on stream %q with task %d: task ids are ≥ 0 (TopologyContext.ComponentTasks lists a component's)",
		ErrDirect, e.comp.id, stream, task))
}

// tupleFor returns the tuple for the i-th target: the first tuple itself,
// or a copy sharing its values. proto is a copy of the first tuple made
// before it was sent: once sent, a reusing consumer may recycle it while
// copies are still being made.
func (e *emitter) tupleFor(first, proto *Tuple, i int) *Tuple {
	if i == 0 {
		return first
	}
	t := e.slab.get()
	t.shareValues(proto)
	t.src = proto.src
	return t
}

func (e *emitter) targetIDs() []int { return e.targets }

// emitSpout emits a spout tuple. With root (not 0) it starts that tree:
// it returns root and the XOR of the tree's first edges, or 0 if no task
// got the tuple.
func (e *emitter) emitSpout(stream string, vals []any, direct int, root uint64) (uint64, uint64, error) {
	os := e.outFor(stream)
	first, err := e.prepare(os, stream, vals, direct)
	if err != nil {
		return 0, 0, err
	}
	if e.stats {
		e.countOut(os)
	}
	if len(e.targets) == 0 {
		root = 0
	}
	var xor uint64
	var proto Tuple
	if len(e.targets) > 1 {
		proto = *first
	}
	for i, dst := range e.targets {
		t := e.tupleFor(first, &proto, i)
		if root != 0 {
			t.root = root
			t.edge = e.rng.NonZero()
			xor ^= t.edge
		}
		e.out.addTuple(dst, t)
	}
	return root, xor, nil
}

// emitOne emits a one-value tuple on the default stream anchored on a (may
// be nil): EmitString's path, v a boxed string. When the stream has one
// subscriber with a built-in grouping and no hook watches the emits, it
// takes the tuple to its one task without prepare's general checks (a
// string is always encodable, the arity is checked here); otherwise it is
// emitBolt.
func (e *emitter) emitOne(a *Tuple, v any) error {
	os := e.defOut
	vals := [1]any{v}
	if !e.plain || os == nil || !os.oneSub || os.arity != 1 {
		return e.emitBolt(DefaultStream, a, nil, vals[:], -1)
	}
	e.targets = os.subs[0].choose(e.targets[:0], vals[:], -1)
	if e.stats {
		e.countOut(os)
	}
	e.emitted++
	if len(e.targets) == 0 {
		return nil
	}
	t := e.slab.get()
	t.src = os.info
	t.inl[0] = v
	if a != nil && e.rt.acking {
		e.anchor(t, a)
	}
	e.out.addTuple(e.targets[0], t)
	return nil
}

// emitBolt emits a bolt tuple anchored on a (may be nil) and anchors.
func (e *emitter) emitBolt(stream string, a *Tuple, anchors []*Tuple, vals []any, direct int) error {
	os := e.outFor(stream)
	first, err := e.prepare(os, stream, vals, direct)
	if err != nil {
		return err
	}
	if e.stats {
		e.countOut(os)
	}
	if e.poison != nil {
		// Catch anchoring on a done input even when nobody subscribes.
		for _, x := range append([]*Tuple{a}, anchors...) {
			if x != nil && x.x != nil {
				x.x.live()
			}
		}
	}
	e.emitted++
	acking := e.rt.acking
	var proto Tuple
	if len(e.targets) > 1 {
		proto = *first
	}
	for i, dst := range e.targets {
		t := e.tupleFor(first, &proto, i)
		if acking {
			if a != nil {
				e.anchor(t, a)
			}
			for _, x := range anchors {
				e.anchor(t, x)
			}
		}
		e.out.addTuple(dst, t)
	}
	return nil
}

// anchor ties child into every tree anchor belongs to, with a fresh edge:
// the child carries the edge, and the anchor's own id in each tree absorbs
// it, so the anchor's ack cancels it out.
func (e *emitter) anchor(child, anchor *Tuple) {
	if anchor.treeRoot() == 0 {
		return // not part of any tree
	}
	edge := e.rng.NonZero()
	anchor.edge ^= edge
	child.addPair(anchor.treeRoot(), edge)
	if anchor.x != nil {
		for i := range anchor.x.more {
			anchor.x.more[i].edge ^= edge
			child.addPair(anchor.x.more[i].root, edge)
		}
	}
}

// addPair XORs edge into the child's id for root.
func (t *Tuple) addPair(root, edge uint64) {
	switch {
	case t.root == 0:
		t.root, t.edge = root, edge
		return
	case t.root == root:
		t.edge ^= edge
		return
	}
	if t.x == nil {
		t.x = &tupleExt{}
	}
	for i := range t.x.more {
		if t.x.more[i].root == root {
			t.x.more[i].edge ^= edge
			return
		}
	}
	t.x.more = append(t.x.more, anchorPair{root, edge})
}

// ack sends the acks for an input tuple.
func (e *emitter) ack(t *Tuple) {
	if t.isDone() {
		return
	}
	t.markDone() // also outside a tree: the bolt is done with it (reuse)
	e.acked++
	if e.proc != nil {
		e.proc.acked(t)
		e.in.of(t).acked++
	}
	if root := t.treeRoot(); root != 0 {
		e.out.treeMsg(ackMsg{kind: msgAck, root: root, val: t.edge})
		for _, p := range t.morePairs() {
			e.out.treeMsg(ackMsg{kind: msgAck, root: p.root, val: p.edge})
		}
	}
	if e.poison != nil {
		e.poison.apply(t)
	}
}

// fail fails every tree the input tuple belongs to.
func (e *emitter) fail(t *Tuple, reason error) {
	if t.isDone() {
		return
	}
	t.markDone()
	e.failed++
	if e.proc != nil {
		if e.proc.t == t {
			e.proc.t = nil // only acked tuples count, as in Storm
		}
		e.in.of(t).failed++
	}
	if root := t.treeRoot(); root != 0 {
		fe := &FailedError{Component: e.comp.id, Task: int(e.task), Err: reason}
		e.out.treeMsg(ackMsg{kind: msgFail, root: root, reason: fe})
		for _, p := range t.morePairs() {
			e.out.treeMsg(ackMsg{kind: msgFail, root: p.root, reason: fe})
		}
	}
	if e.poison != nil {
		e.poison.apply(t)
	}
}

func (e *emitter) resetTimeout(t *Tuple) {
	if t.treeRoot() == 0 || t.isDone() {
		return
	}
	e.out.treeMsg(ackMsg{kind: msgReset, root: t.treeRoot()})
	for _, p := range t.morePairs() {
		e.out.treeMsg(ackMsg{kind: msgReset, root: p.root})
	}
}
