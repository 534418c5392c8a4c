package gale

import (
	"maps"
	"testing"

	"github.com/gale-stream/gale/internal/config"
)

func TestFeedbackEdges(t *testing.T) {
	in := func(ids ...string) []InputDef {
		var out []InputDef
		for _, id := range ids {
			out = append(out, InputDef{Component: id, Stream: DefaultStream, Grouping: GroupingDef{Type: GroupingShuffle}})
		}
		return out
	}
	spouts := []ComponentDef{{ID: "s"}}
	for _, tc := range []struct {
		name  string
		bolts []ComponentDef
		want  map[feedbackEdge]bool
	}{
		{"acyclic diamond", []ComponentDef{{ID: "a", Inputs: in("s")}, {ID: "b", Inputs: in("s")}, {ID: "c", Inputs: in("a", "b")}},
			map[feedbackEdge]bool{}},
		{"self loop", []ComponentDef{{ID: "a", Inputs: in("s", "a")}},
			map[feedbackEdge]bool{{"a", "a"}: true}},
		{"two-bolt cycle", []ComponentDef{{ID: "ping", Inputs: in("s", "pong")}, {ID: "pong", Inputs: in("ping")}},
			map[feedbackEdge]bool{{"pong", "ping"}: true}},
		{"cycle entered downstream", []ComponentDef{{ID: "a", Inputs: in("s")}, {ID: "c", Inputs: in("b")}, {ID: "b", Inputs: in("a", "c")}},
			map[feedbackEdge]bool{{"c", "b"}: true}},
		{"two cycles sharing a bolt", []ComponentDef{{ID: "a", Inputs: in("s", "b", "c")}, {ID: "b", Inputs: in("a")}, {ID: "c", Inputs: in("a")}},
			map[feedbackEdge]bool{{"b", "a"}: true, {"c", "a"}: true}},
		{"cycle no spout reaches", []ComponentDef{{ID: "x", Inputs: in("y")}, {ID: "y", Inputs: in("x")}, {ID: "a", Inputs: in("s")}},
			map[feedbackEdge]bool{{"y", "x"}: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := &TopologyDef{Spouts: spouts, Bolts: tc.bolts}
			got := feedbackEdges(def)
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			// The same whatever order the definition lists the bolts in.
			rev := &TopologyDef{Spouts: spouts}
			for i := len(tc.bolts) - 1; i >= 0; i-- {
				rev.Bolts = append(rev.Bolts, tc.bolts[i])
			}
			if got := feedbackEdges(rev); !maps.Equal(got, tc.want) {
				t.Fatalf("bolts listed in reverse: got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAutoLimitWithinBudget: however fast trees complete, the automatic
// in-flight limit of a spout task stays within the worker's tree budget
// shared by its spout tasks.
func TestAutoLimitWithinBudget(t *testing.T) {
	tb := NewTopologyBuilder()
	tb.SetSpout("s", func() Spout { return &benchSpout{} }, 3)
	tb.SetBolt("b", func() Bolt { return &benchBolt{} }, 1).ShuffleGrouping("s")
	topo, err := tb.Build()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime("budget", topo, nil, RunOptions{file: Config{config.WorkerHeapMemoryMB: 64}})
	if err != nil {
		t.Fatal(err)
	}
	want := int(int64(64<<20)/treeShare/treeBytes) / 3
	for _, x := range rt.spoutExecs {
		x.resolved = 1 << 40
		if got := x.limitFor(autoTuneInterval(rt.timeout)); got != want {
			t.Errorf("limit per task at a huge rate: got %d, want the budget's share %d", got, want)
		}
		x.resolved = 0
		if got := x.limitFor(autoTuneInterval(rt.timeout)); got != autoPendingFloor/3 {
			t.Errorf("limit per task with nothing resolved: got %d, want the floor's share %d", got, autoPendingFloor/3)
		}
	}
}

// TestFeedbackQueue: FIFO across many pushes and pops, the worker's budget
// shared by its queues, and an empty queue taking a batch regardless.
func TestFeedbackQueue(t *testing.T) {
	budget := &feedbackBudget{floor: 10}
	a, b := newFeedbackQueue("a", budget), newFeedbackQueue("b", budget)
	mk := func(task, n int) *batch {
		bt := &batch{task: int32(task)}
		for range n {
			bt.tuples = append(bt.tuples, &Tuple{})
		}
		return bt
	}
	if !a.push(mk(1, 6)) || !b.push(mk(2, 4)) {
		t.Fatal("pushes within the budget refused")
	}
	if a.push(mk(3, 1)) {
		t.Fatal("a push over the shared budget of 10 taken")
	}
	if got := budget.tuples.Load(); got != 10 {
		t.Fatalf("budget holds %d tuples, want 10", got)
	}
	if bt := b.pop(); bt == nil || bt.task != 2 || b.ready() {
		t.Fatalf("pop from b: got %v, want its one batch", bt)
	}
	c := newFeedbackQueue("c", budget)
	if !c.push(mk(4, 100)) {
		t.Fatal("an empty queue refused a batch")
	}
	if a.pop() == nil || c.pop() == nil || budget.tuples.Load() != 0 {
		t.Fatalf("after popping everything the budget holds %d tuples, want 0", budget.tuples.Load())
	}
	// FIFO through the queue's compaction.
	budget.floor = 1 << 20
	next := 0
	for i := range 5000 {
		a.push(mk(i, 1))
		if i%3 != 0 { // two pops a three pushes: the queue compacts
			if bt := a.pop(); int(bt.task) != next {
				t.Fatalf("popped batch %d, want %d", bt.task, next)
			}
			next++
		}
	}
	for a.ready() {
		if bt := a.pop(); int(bt.task) != next {
			t.Fatalf("popped batch %d, want %d", bt.task, next)
		}
		next++
	}
	if next != 5000 {
		t.Fatalf("popped %d batches, want 5000", next)
	}
}
