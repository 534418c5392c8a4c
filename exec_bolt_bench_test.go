package gale

import (
	"testing"
	"time"
)

// countingBolt acks its inputs and closes done at the want-th.
type countingBolt struct {
	BaseBolt
	n, want int64
	done    chan struct{}
}

func (*countingBolt) DeclareOutputFields(OutputDeclarer) {}
func (b *countingBolt) Execute(t *Tuple) {
	b.Collector.Ack(t)
	if b.n++; b.n == b.want {
		close(b.done)
	}
}

// BenchmarkBoltExecutor measures a bolt executor's run loop, per tuple:
// take a batch off the queue, execute and ack each tuple, release the
// batch; with a tick tuple every second of the system clock, so that the
// loop watches for ticks as it does in a topology that has them.
func BenchmarkBoltExecutor(b *testing.B) {
	sink := &countingBolt{want: int64(b.N), done: make(chan struct{})}
	tb := NewTopologyBuilder()
	tb.SetSpout("s", func() Spout { return &benchSpout{} }, 1)
	tb.SetBolt("sink", func() Bolt { return sink }, 1).ShuffleGrouping("s")
	topo, err := tb.Build()
	if err != nil {
		b.Fatal(err)
	}
	rt, err := newRuntime("bench", topo, Config{TopologyAckerExecutors: 0, TopologyTickTupleFreqSecs: 1}, RunOptions{})
	if err != nil {
		b.Fatal(err)
	}
	x := rt.boltExecs[0]
	task := x.tasks[0]
	if err := task.bolt.Prepare(task.tc, task.coll); err != nil {
		b.Fatal(err)
	}
	x.tk = rt.newTicker(time.Second)
	rt.wg.Add(1)
	go x.run()
	si := rt.comps["s"].streams[DefaultStream]
	// The same tuples go round: after the first ack, acks are no-ops.
	tuples := make([]Tuple, rt.batchSize)
	for i := range tuples {
		tuples[i] = Tuple{src: si}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		bt := rt.getBatch()
		bt.task = int32(rt.comps["sink"].firstTask)
		for i := 0; i < rt.batchSize && sent < b.N; i++ {
			bt.tuples = append(bt.tuples, &tuples[i])
			sent++
		}
		rt.inflight.Add(int64(len(bt.tuples)))
		x.in <- bt
	}
	<-sink.done
	b.StopTimer()
	rt.stop(0)
}
