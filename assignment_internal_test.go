package gale

import (
	"slices"
	"testing"

	"github.com/gale-stream/gale/internal/worker"
)

// TestLayoutFollowsThePlan: the runtime numbers what the plan says, with
// the plan computed from the effective config: a component's own
// topology.max.task.parallelism over the topology's. Executors in id
// order: a 0–1, s 2–3, z 4; no ackers (each spout task keeps its trees).
func TestLayoutFollowsThePlan(t *testing.T) {
	tb := NewTopologyBuilder()
	tb.SetSpout("s", func() Spout { return &benchSpout{} }, 2).SetNumTasks(4).AddConfiguration(TopologyMaxTaskParallelism, 3)
	tb.SetBolt("a", func() Bolt { return &benchBolt{} }, 3).ShuffleGrouping("s")
	tb.SetBolt("z", func() Bolt { return &benchBolt{} }, 1).SetNumTasks(5).ShuffleGrouping("a")
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime("layout", topo, Config{TopologyMaxTaskParallelism: 2, TopologyAckerExecutors: 2}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{"a": {1, 2}, "s": {3, 3}, "z": {6, 2}} // first task, tasks
	for id, w := range want {
		c := rt.comps[id]
		if c.firstTask != w[0] || c.numTasks != w[1] {
			t.Errorf("%s: tasks %d…%d, want %d…%d", id, c.firstTask, c.firstTask+c.numTasks-1, w[0], w[0]+w[1]-1)
		}
		if pc, _ := rt.plan.Component(id); pc.FirstTask != c.firstTask || pc.Tasks != c.numTasks {
			t.Errorf("%s: the runtime has tasks from %d (%d), the plan from %d (%d)", id, c.firstTask, c.numTasks, pc.FirstTask, pc.Tasks)
		}
	}
	if want := []int{-1, 0, 1, 2, 3, 3, 4, 4}; !slices.Equal(rt.taskExec, want) {
		t.Errorf("task → executor %v, want %v", rt.taskExec, want)
	}
	if len(rt.execs) != 5 || !rt.acking {
		t.Errorf("%d executors, acking %t: want 5, and acking on with topology.acker.executors 2", len(rt.execs), rt.acking)
	}
	var streams []string
	for id, ws := range rt.wireStreams {
		if ws.info.wireID != uint32(id) {
			t.Errorf("stream %s/%s at %d has wire id %d", ws.comp.id, ws.info.stream, id, ws.info.wireID)
		}
		streams = append(streams, ws.comp.id+"/"+ws.info.stream)
	}
	if want := []string{"a/default", "s/default", "z/default"}; !slices.Equal(streams, want) {
		t.Errorf("streams %v, want %v", streams, want)
	}
	var tasks []int
	for _, x := range rt.spoutExecs {
		tasks = append(tasks, int(x.first), len(x.tasks))
	}
	if want := []int{3, 1, 4, 2}; !slices.Equal(tasks, want) {
		t.Errorf("spout executors (first task, tasks): %v, want %v", tasks, want)
	}
}

// TestTransferBufferSizeBoundsPeerQueues: topology.transfer.buffer.size
// is the length of the queue of frames to each peer worker (and of the
// frame buffers kept for it), 256 by default.
func TestTransferBufferSizeBoundsPeerQueues(t *testing.T) {
	tb := NewTopologyBuilder()
	tb.SetSpout("s", func() Spout { return &benchSpout{} }, 1)
	tb.SetBolt("b", func() Bolt { return &benchBolt{} }, 2).ShuffleGrouping("s")
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		conf Config
		want int
	}{
		{nil, 256},
		{Config{TopologyTransferBufferSize: 17}, 17},
	} {
		asg := &worker.Assignment{Worker: 0, Workers: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}}
		rt, err := newRuntimeWith("transfer", topo, tc.conf, RunOptions{}, asg)
		if err != nil {
			t.Fatal(err)
		}
		for w, p := range rt.peers {
			if p == nil {
				continue
			}
			if got := p.senderConfig().QueueLen; got != tc.want {
				t.Errorf("config %v: peer %d's sender queue holds %d frames, want %d", tc.conf, w, got, tc.want)
			}
			if got := cap(p.bufs); got != tc.want {
				t.Errorf("config %v: peer %d keeps %d frame buffers, want %d", tc.conf, w, got, tc.want)
			}
		}
	}
}
