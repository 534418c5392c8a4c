package gale

import (
	"maps"
	"slices"
	"testing"
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
				asg := &Assignment{Worker: w, Workers: []string{"127.0.0.1:1", "127.0.0.1:2"}, Executors: tc.execs}
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
