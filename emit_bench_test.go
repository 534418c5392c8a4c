package gale

import (
	"sync/atomic"
	"testing"

	"github.com/gale-stream/gale/internal/worker"
)

type benchSpout struct{ BaseSpout }

func (*benchSpout) DeclareOutputFields(d OutputDeclarer) { d.Declare("sentence") }
func (*benchSpout) NextTuple()                           {}

type benchBolt struct{ BaseBolt }

func (*benchBolt) DeclareOutputFields(d OutputDeclarer) { d.Declare("word") }
func (*benchBolt) Execute(*Tuple)                       {}

// emitRig is a split bolt task whose emits nobody consumes: drain takes
// the batches its flush sent, so that emits can be measured in one
// goroutine without scheduling.
type emitRig struct {
	rt     *runtime
	split  *boltTask
	anchor *Tuple
}

func newEmitRig(tb testing.TB, acking bool) *emitRig {
	tb.Helper()
	b := NewTopologyBuilder()
	b.SetSpout("s", func() Spout { return &benchSpout{} }, 1)
	b.SetBolt("split", func() Bolt { return &benchBolt{} }, 1).ShuffleGrouping("s")
	b.SetBolt("count", func() Bolt { return &benchBolt{} }, 2).FieldsGrouping("split", "word")
	topo, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	conf := Config{TopologyAckerExecutors: 0}
	if acking {
		conf = nil
	}
	rt, err := newRuntime("bench", topo, conf, RunOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	r := &emitRig{rt: rt, anchor: &Tuple{src: rt.comps["s"].streams[DefaultStream], root: 12345, edge: 678}}
	for _, x := range rt.boltExecs {
		if x.comp.id == "split" {
			r.split = x.tasks[0]
		}
	}
	return r
}

// drain flushes the split task and releases what it sent.
func (r *emitRig) drain() {
	rt := r.rt
	r.split.em.out.flush()
	for _, x := range rt.boltExecs {
		if x.comp.id != "count" {
			continue
		}
		for in := rt.execs[x.idx].in; len(in) > 0; {
			rt.putBatch(<-in)
		}
	}
	for _, x := range rt.spoutExecs {
		for ch := rt.execs[x.idx].ctl; len(ch) > 0; {
			rt.putAckBatch(<-ch)
		}
	}
}

var benchWords = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}

// BenchmarkBoltEmit measures the emit path of a bolt task, per tuple:
// validate, make the tuple, route by fields grouping (two tasks), enqueue.
// A consumer in the same goroutine takes the batches, so no scheduling is
// measured. "string" emits with EmitString, the rest with Emit.
func BenchmarkBoltEmit(b *testing.B) {
	for _, c := range []struct {
		name           string
		acking, string bool
	}{{"noack", false, false}, {"noack-string", false, true}, {"ack", true, false}, {"ack-string", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			r := newEmitRig(b, c.acking)
			coll := r.split.coll
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.string {
					coll.EmitString(r.anchor, benchWords[i&7][i&1:])
				} else {
					coll.Emit(r.anchor, benchWords[i&7][i&1:])
				}
				if i&63 == 63 {
					r.drain()
				}
			}
		})
	}
}

// BenchmarkSpoutAck measures a spout executor's handling of its trees'
// completions, per tree: find the tree, count it, call the spout's Ack;
// with a counter mirror (worker.Options.SpoutMirrors, a supervised
// worker's counter file) and without.
func BenchmarkSpoutAck(b *testing.B) {
	for _, mirrored := range []bool{false, true} {
		name := "nomirror"
		if mirrored {
			name = "mirror"
		}
		b.Run(name, func(b *testing.B) {
			tb := NewTopologyBuilder()
			tb.SetSpout("s", func() Spout { return &benchSpout{} }, 1)
			tb.SetBolt("split", func() Bolt { return &benchBolt{} }, 1).ShuffleGrouping("s")
			topo, err := tb.Build()
			if err != nil {
				b.Fatal(err)
			}
			rt, err := newRuntime("bench", topo, nil, RunOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if mirrored {
				var c [4]atomic.Int64
				rt.mirrorSpouts(func(s []worker.SpoutSlot) []worker.SpoutMirror {
					return []worker.SpoutMirror{{Acked: &c[0], Failed: &c[1], Emitted: &c[2], Transferred: &c[3]}}
				})
			}
			x := rt.spoutExecs[0]
			t := x.tasks[0]
			const batch = 64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				ab := rt.getAckBatch()
				for j := range batch {
					slot, _ := t.pending.next()
					root := makeRoot(x.first, slot, uint64(i+j))
					t.pending.put(root, pendingEntry{msgID: nil, xor: 1})
					ab.msgs = append(ab.msgs, ackMsg{kind: msgAck, root: root, val: 1})
				}
				x.handleCtl(ab)
			}
		})
	}
}
