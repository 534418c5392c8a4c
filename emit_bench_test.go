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

// BenchmarkBoltEmit measures the emit path of a bolt task, per tuple:
// validate, make the tuple, route by fields grouping, enqueue. A consumer in
// the same goroutine takes the batches, so no scheduling is measured.
func BenchmarkBoltEmit(b *testing.B) {
	for _, acking := range []bool{false, true} {
		name := "noack"
		if acking {
			name = "ack"
		}
		b.Run(name, func(b *testing.B) {
			tb := NewTopologyBuilder()
			tb.SetSpout("s", func() Spout { return &benchSpout{} }, 1)
			tb.SetBolt("split", func() Bolt { return &benchBolt{} }, 1).ShuffleGrouping("s")
			tb.SetBolt("count", func() Bolt { return &benchBolt{} }, 1).FieldsGrouping("split", "word")
			topo, err := tb.Build()
			if err != nil {
				b.Fatal(err)
			}
			conf := Config{TopologyAckerExecutors: 0}
			if acking {
				conf = nil
			}
			rt, err := newRuntime("bench", topo, conf, RunOptions{})
			if err != nil {
				b.Fatal(err)
			}
			var split *boltTask
			for _, x := range rt.boltExecs {
				if x.comp.id == "split" {
					split = x.tasks[0]
				}
			}
			countIn := rt.execs[rt.taskExec[rt.comps["count"].firstTask]].in
			words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
			anchor := &Tuple{src: rt.comps["s"].streams[DefaultStream], root: 12345, edge: 678}
			c := split.coll
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Emit(anchor, words[i&7])
				if i&63 == 63 {
					split.em.out.flush()
					for len(countIn) > 0 {
						rt.putBatch(<-countIn)
					}
					for _, ai := range rt.ackers {
						for ch := rt.execs[ai].ctl; len(ch) > 0; {
							rt.putAckBatch(<-ch)
						}
					}
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
					root := uint64(i + j + 1)
					t.pending.put(root, pendingEntry{msgID: nil})
					ab.msgs = append(ab.msgs, ackMsg{kind: msgComplete, task: x.first, root: root})
				}
				x.handleCtl(ab)
			}
		})
	}
}
