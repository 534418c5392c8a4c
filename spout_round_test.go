package gale

import "testing"

// burstSpout emits perCall tuples on every NextTuple, as a paced source
// catching up or a broker poll does.
type burstSpout struct {
	BaseSpout
	perCall int
	calls   int
}

func (*burstSpout) DeclareOutputFields(d OutputDeclarer) { d.Declare("n") }
func (s *burstSpout) NextTuple() {
	s.calls++
	for i := 0; i < s.perCall; i++ {
		s.Collector.Emit(i, i)
	}
}

// A spout round hands over about a batch's worth, however many tuples each
// NextTuple emits: the queues are bounded in batches, so a round that
// buffered a hundred calls of a thousand tuples each put 100,000 tuples in
// one batch, and a backlog grew the heap by hundreds of megabytes.
func TestSpoutRoundBoundsBuffering(t *testing.T) {
	for _, tt := range []struct {
		name              string
		perCall, maxCalls int
	}{
		{name: "one per call", perCall: 1, maxCalls: 100},
		{name: "a few per call", perCall: 7, maxCalls: 15},
		{name: "a batch per call", perCall: 100, maxCalls: 1},
		{name: "a burst per call", perCall: 1000, maxCalls: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tb := NewTopologyBuilder()
			tb.SetSpout("s", func() Spout { return &burstSpout{perCall: tt.perCall} }, 1)
			tb.SetBolt("b", func() Bolt { return &benchBolt{} }, 1).ShuffleGrouping("s")
			topo, err := tb.Build()
			if err != nil {
				t.Fatal(err)
			}
			rt, err := newRuntime("round", topo, Config{TopologyProducerBatchSize: 100, TopologyAckerExecutors: 0}, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			x := rt.spoutExecs[0]
			task := x.tasks[0]
			s := task.spout.(*burstSpout)
			s.Collector = task.coll
			emitted, capped := x.round(task)
			if !emitted || capped {
				t.Fatalf("round: emitted %v, capped %v; want true, false", emitted, capped)
			}
			if s.calls != tt.maxCalls {
				t.Errorf("round called NextTuple %d times, want %d", s.calls, tt.maxCalls)
			}
			b := x.out.data[rt.comps["b"].firstTask-x.out.taskBase]
			if b == nil {
				t.Fatal("nothing buffered for the bolt")
			}
			// At most one call past a full batch.
			if limit := 100 + tt.perCall - 1; len(b.tuples) > limit {
				t.Errorf("round buffered %d tuples for the bolt, want at most %d", len(b.tuples), limit)
			}
		})
	}
}
