package gale

import (
	"testing"
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
