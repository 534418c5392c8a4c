package gale

import (
	"maps"
	"slices"
	"testing"

	"github.com/gale-stream/gale/internal/worker"
)

// TestRootsFollowTheAssignment: a spout's new roots pick an acker in its
// own worker, wherever the assignment puts the ackers; a spout whose
// worker runs no acker spreads its trees over every acker.
func TestRootsFollowTheAssignment(t *testing.T) {
	tb := NewTopologyBuilder()
	tb.SetSpout("s", func() Spout { return &benchSpout{} }, 2)
	tb.SetBolt("b", func() Bolt { return &benchBolt{} }, 2).ShuffleGrouping("s")
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	// Executors: b 0–1, s 2–3, ackers 4–6.
	tests := []struct {
		name  string
		execs []int
		want  [2][]int // acker executors each worker's spout reaches
	}{
		{"one acker here, two there", []int{0, 1, 0, 1, 1, 0, 1}, [2][]int{{5}, {4, 6}}},
		{"no acker on worker 1", []int{0, 1, 0, 1, 0, 0, 0}, [2][]int{{4, 5, 6}, {4, 5, 6}}},
		{"no acker on worker 0", []int{0, 1, 0, 1, 1, 1, 1}, [2][]int{{4, 5, 6}, {4, 5, 6}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for w := range 2 {
				asg := &worker.Assignment{Worker: w, Workers: []string{"127.0.0.1:1", "127.0.0.1:2"}, Executors: tc.execs}
				rt, err := newRuntimeWith("roots", topo, Config{TopologyAckerExecutors: 3}, RunOptions{}, asg)
				if err != nil {
					t.Fatal(err)
				}
				if len(rt.spoutExecs) != 1 || rt.spoutExecs[0].idx != 2+w {
					t.Fatalf("worker %d runs spout executors %v, want executor %d", w, rt.spoutExecs, 2+w)
				}
				em := rt.spoutExecs[0].tasks[0].em
				seen := map[int]bool{}
				for range 3000 {
					root := em.newRoot()
					if root == 0 || root&doneBit != 0 {
						t.Fatalf("invalid root %#x", root)
					}
					seen[rt.ackerExec(root)] = true
				}
				if got := slices.Sorted(maps.Keys(seen)); !slices.Equal(got, tc.want[w]) {
					t.Errorf("worker %d: roots reach acker executors %v, want %v", w, got, tc.want[w])
				}
			}
		})
	}
}

// TestLayoutFollowsThePlan: the runtime numbers what the plan says, with
// the plan computed from the effective config: a component's own
// topology.max.task.parallelism over the topology's, the acker count.
// Executors in id order: a 0–1, s 2–3, z 4, ackers 5–6.
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
	if want := []int{5, 6}; !slices.Equal(rt.ackers, want) {
		t.Errorf("ackers %v, want %v", rt.ackers, want)
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
