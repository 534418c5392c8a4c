package gale

import (
	"log/slog"
	"sync"
	"testing"
	"time"
)

// chanTicker is a Ticker whose ticks the test sends, so that it knows a
// tick is waiting before the executor looks.
type chanTicker chan time.Time

func (c chanTicker) C() <-chan time.Time { return c }
func (chanTicker) Stop()                 {}

// recordBolt runs its execute on each input, on the executor's goroutine.
type recordBolt struct {
	BaseBolt
	execute func(in *Tuple)
}

func (*recordBolt) DeclareOutputFields(OutputDeclarer) {}
func (b *recordBolt) Execute(in *Tuple)                { b.execute(in) }

// TestTickWaitsBehindQueuedInput: a tick is delivered after the tuples
// queued before it, local and from other workers, as in Storm, where the
// tick joins the executor's receive queue. The bolt holds its first tuple
// while the test queues more batches on both queues and then a tick; once
// released, it must execute every queued tuple before the tick.
func TestTickWaitsBehindQueuedInput(t *testing.T) {
	const local, remote = 6, 4 // batches queued behind the held one
	hold, holding, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var seen []int // the order executed, -1 the tick
	index := map[*Tuple]int{}
	bolt := &recordBolt{}
	bolt.execute = func(in *Tuple) {
		if in.IsTick() {
			mu.Lock()
			seen = append(seen, -1)
			mu.Unlock()
			close(done)
			return
		}
		if next := index[in]; next == 0 {
			close(holding)
			<-hold
		}
		mu.Lock()
		seen = append(seen, index[in])
		mu.Unlock()
	}
	tb := NewTopologyBuilder()
	tb.SetSpout("s", func() Spout { return &benchSpout{} }, 1)
	tb.SetBolt("b", func() Bolt { return bolt }, 1).ShuffleGrouping("s").
		AddConfiguration(TopologyTickTupleFreqSecs, 5)
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime("tick-order", topo, Config{TopologyAckerExecutors: 0}, RunOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	x := rt.boltExecs[0]
	x.rin = make(chan *batch, remote) // as a worker with peers has
	task := x.tasks[0]
	if err := task.bolt.Prepare(task.tc, task.coll); err != nil {
		t.Fatal(err)
	}
	ticks := make(chanTicker, 1)
	x.tk = ticks
	rt.wg.Add(1)
	go x.run()
	defer rt.stop(0)

	si := rt.comps["s"].streams[DefaultStream]
	next := 0
	batchOf := func(n int) *batch {
		b := rt.getBatch()
		b.task = int32(rt.comps["b"].firstTask)
		for range n {
			tp := &Tuple{src: si}
			index[tp] = next
			next++
			b.tuples = append(b.tuples, tp)
		}
		return b
	}
	x.in <- batchOf(1)
	<-holding
	for range local {
		x.in <- batchOf(3)
	}
	for range remote {
		x.rin <- batchOf(2)
	}
	ticks <- time.Time{}
	close(hold)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the bolt never got the tick")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != next+1 || seen[next] != -1 {
		t.Fatalf("the bolt saw %v (-1 is the tick); want all %d tuples queued before the tick, then the tick", seen, next)
	}
}
