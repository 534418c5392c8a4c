package gale

import (
	"fmt"
	"maps"
	"time"

	"github.com/gale-stream/gale/internal/bridge"
)

// This file holds what galetest's mock tuples and bolt harness need of the
// runtime (bridge.NewTuple, bridge.NewTick, bridge.NewBoltHarness): a bolt
// task made as a topology makes it, prepared and executed on the caller's
// goroutine, with what it emits, acks and fails read back from its outbox
// instead of being sent. Nothing here is on the path of a running topology.

// harnessSink is the id of the component the harness subscribes to every
// stream of the bolt under test, so that each emit makes one tuple whose
// anchors can be read back. "__" ids are refused to users, so it cannot
// clash.
const harnessSink = "__harness"

// harnessSinkBolt stands for the harness's sink; it never runs.
type harnessSinkBolt struct{ BaseBolt }

func (*harnessSinkBolt) DeclareOutputFields(OutputDeclarer) {}
func (*harnessSinkBolt) Execute(*Tuple)                     {}

// newMockTuple is bridge.NewTuple.
func newMockTuple(component, stream string, task int, fields []string, values []any) *Tuple {
	if len(fields) != len(values) {
		panic(fmt.Sprintf("galetest: tuple from %s:%s has %d values for %d fields %v", component, stream, len(values), len(fields), fields))
	}
	si := newStreamInfo(component, stream, append([]string(nil), fields...), false)
	si.task = int32(task)
	t := &Tuple{src: si}
	t.setValues(values)
	return t
}

// newTick is bridge.NewTick: a tick tuple, as an executor delivers one.
func newTick(secs int) *Tuple {
	t := &Tuple{src: tickInfo}
	t.inl[0] = secs
	return t
}

// boltHarness is bridge.BoltHarness.
type boltHarness struct {
	rt    *runtime
	x     *boltExec
	task  *boltTask
	roots map[uint64]*Tuple // the tuples executed, by the tree id given them
	tree  []ackMsg          // the tree messages since the last collect
	next  uint64            // the last tree id given
	rec   bridge.HarnessRecord
	errs  []bridge.HarnessError
}

// newBoltHarness is bridge.NewBoltHarness.
func newBoltHarness(b any, component string, conf Config, opts RunOptions) (*boltHarness, error) {
	var bolt Bolt
	switch v := b.(type) {
	case Bolt:
		bolt = v
	case BasicBolt:
		bolt = &basicBoltAdapter{b: v}
	default:
		return nil, fmt.Errorf("galetest: NewBoltHarness wants a gale.Bolt or gale.BasicBolt, got %T", b)
	}
	if component == "" {
		component = "bolt"
	}
	tb := NewTopologyBuilder()
	tb.SetBolt(component, func() Bolt { return bolt }, 1)
	if len(tb.errs) > 0 {
		return nil, tb.errs[0]
	}
	def := cloneDef(tb.def)
	sink := ComponentDef{ID: harnessSink, Language: "go", Parallelism: 1, Tasks: 1}
	for _, s := range def.Bolts[0].Streams {
		if !s.Direct {
			sink.Inputs = append(sink.Inputs, InputDef{Component: component, Stream: s.ID, Grouping: GroupingDef{Type: GroupingAll}})
		}
	}
	def.Bolts = append(def.Bolts, sink)
	topo := &Topology{Def: def, spouts: map[string]func() Spout{}, customs: tb.customs, types: tb.types.Clone(),
		bolts: map[string]func() Bolt{component: tb.bolts[component], harnessSink: func() Bolt { return &harnessSinkBolt{} }}}
	conf = maps.Clone(conf)
	if conf == nil {
		conf = Config{}
	}
	// Acks and anchors are read from the tree messages (treeSink).
	conf[TopologyAckerExecutors] = 1
	if _, set := conf[TopologyTestingAlwaysTrySerialize]; !set {
		conf[TopologyTestingAlwaysTrySerialize] = true
	}
	h := &boltHarness{roots: map[uint64]*Tuple{}}
	opts.hooks.Observer = &bridge.Observer{
		Emit: func(c, stream string, _ int, values []any) {
			if c == component {
				h.rec.Emits = append(h.rec.Emits, bridge.HarnessEmit{Stream: stream, Values: append([]any(nil), values...)})
			}
		},
		Error: func(c string, task int, at time.Time, err error) {
			h.errs = append(h.errs, bridge.HarnessError{Task: task, Time: at, Err: err})
		},
	}
	rt, err := newRuntime("galetest", topo, conf, opts)
	if err != nil {
		return nil, err
	}
	h.rt = rt
	for _, x := range rt.boltExecs {
		if x.comp.id == component {
			h.x = x
		}
	}
	h.task = h.x.tasks[0]
	// Emits wait in the outbox for collect, however many there are.
	h.x.out.blockOnFull = false
	h.x.out.treeSink = func(m ackMsg) { h.tree = append(h.tree, m) }
	if err := bolt.Prepare(h.task.tc, h.task.coll); err != nil {
		rt.cancel()
		return nil, fmt.Errorf("galetest: prepare bolt %q: %w", component, err)
	}
	return h, nil
}

func (h *boltHarness) Context() any { return h.task.tc }

func (h *boltHarness) TickSecs() int { return int(h.x.tick / time.Second) }

// Execute runs the bolt's Execute on t and returns what it did. A tuple
// outside any tree is given one, so that its ack or fail can be seen.
func (h *boltHarness) Execute(v any) bridge.HarnessRecord {
	t := v.(*Tuple)
	if t.root == 0 && !t.isDone() {
		h.next++
		t.root, t.edge = h.next, h.next
		h.roots[t.root] = t
	}
	h.task.bolt.Execute(t)
	return h.collect()
}

// collect reads back, and empties, what the task left in its outbox.
func (h *boltHarness) collect() bridge.HarnessRecord {
	out := h.x.out
	rec := h.rec
	h.rec = bridge.HarnessRecord{}
	n := 0 // the tuples at the sink are the emits, in order
	for _, task := range out.dataDirty {
		b := out.data[task-out.taskBase]
		if b == nil {
			continue
		}
		out.data[task-out.taskBase] = nil
		for _, t := range b.tuples {
			if n < len(rec.Emits) {
				rec.Emits[n].Anchors = h.anchors(t)
			}
			n++
		}
		h.rt.recycleBatch(b)
	}
	out.dataDirty = out.dataDirty[:0]
	for _, m := range h.tree {
		t := h.roots[m.root]
		switch {
		case t == nil:
		case m.kind == msgAck:
			rec.Done = append(rec.Done, bridge.HarnessDone{Tuple: t})
		case m.kind == msgFail:
			var err error
			if fe, ok := m.reason.(*FailedError); ok {
				err = fe.Err
			}
			rec.Done = append(rec.Done, bridge.HarnessDone{Tuple: t, Failed: true, Err: err})
		case m.kind == msgReset:
			rec.Resets = append(rec.Resets, t)
		}
	}
	clear(h.tree)
	h.tree = h.tree[:0]
	rec.Errors, h.errs = h.errs, nil
	return rec
}

// anchors returns the executed tuples t is anchored on.
func (h *boltHarness) anchors(t *Tuple) []any {
	var as []any
	if a := h.roots[t.treeRoot()]; a != nil {
		as = append(as, a)
	}
	for _, p := range t.morePairs() {
		if a := h.roots[p.root]; a != nil {
			as = append(as, a)
		}
	}
	return as
}

func (h *boltHarness) Cleanup() bridge.HarnessRecord {
	h.task.bolt.Cleanup()
	h.rt.cancel()
	return h.collect()
}

func init() {
	bridge.NewTuple = func(component, stream string, task int, fields []string, values []any) any {
		return newMockTuple(component, stream, task, fields, values)
	}
	bridge.NewTick = func(secs int) any { return newTick(secs) }
	bridge.NewBoltHarness = func(bolt any, component string, conf map[string]any, opts any) (bridge.BoltHarness, error) {
		ro := *opts.(*RunOptions)
		h, err := newBoltHarness(bolt, component, conf, ro)
		if err != nil {
			return nil, err // not a nil *boltHarness in a non-nil interface
		}
		return h, nil
	}
}
