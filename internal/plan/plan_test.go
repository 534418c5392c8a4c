package plan

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/gale-stream/gale/internal/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestNumbering pins the numbering of one topology, worked out by hand:
// components in id order whatever order they come in, task ids from 1,
// a capped component's tasks cut to its cap, contiguous executor ranges
// and nothing after them, streams in component order then declaration
// order.
func TestNumbering(t *testing.T) {
	top := Topology{
		Components: []Component{
			{ID: "b", Tasks: 5, Parallelism: 2, Streams: []string{"default", "side"}, Inputs: []Input{{Component: "a", Stream: "default"}}},
			{ID: "a", Spout: true, Tasks: 3, Parallelism: 3, Streams: []string{"default"}},
			{ID: "c", Tasks: 4, Parallelism: 4, MaxTaskParallelism: 2, Inputs: []Input{{Component: "b", Stream: "side"}}},
		},
	}
	p, err := New(top)
	if err != nil {
		t.Fatal(err)
	}
	want := Plan{
		Components: []ComponentPlan{
			{ID: "a", Kind: Spout, FirstTask: 1, Tasks: 3, FirstExecutor: 0, Executors: 3},
			{ID: "b", Kind: Bolt, FirstTask: 4, Tasks: 5, FirstExecutor: 3, Executors: 2},
			{ID: "c", Kind: Bolt, FirstTask: 9, Tasks: 2, FirstExecutor: 5, Executors: 2},
		},
		Executors: []Executor{
			{Spout, "a", 1, 1}, {Spout, "a", 2, 1}, {Spout, "a", 3, 1},
			{Bolt, "b", 4, 2}, {Bolt, "b", 6, 3},
			{Bolt, "c", 9, 1}, {Bolt, "c", 10, 1},
		},
		Streams: []Stream{{"a", "default"}, {"b", "default"}, {"b", "side"}},
		Tasks:   10,
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", p, want)
	}
	if got, want := p.TaskExecutors(), []int{-1, 0, 1, 2, 3, 3, 4, 4, 4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("TaskExecutors: got %v, want %v", got, want)
	}
	if c, ok := p.Component("b"); !ok || c.FirstTask != 4 {
		t.Errorf(`Component("b"): got %+v, %v`, c, ok)
	}
	if _, ok := p.Component("zz"); ok {
		t.Errorf(`Component("zz") found a component the topology does not have`)
	}
}

func TestNewRejects(t *testing.T) {
	spout := func(id string) Component {
		return Component{ID: id, Spout: true, Tasks: 1, Parallelism: 1, Streams: []string{"default"}}
	}
	bolt := func(id string, ins ...Input) Component {
		return Component{ID: id, Tasks: 1, Parallelism: 1, Inputs: ins}
	}
	tests := []struct {
		name string
		top  Topology
		want string
	}{
		{"empty id", Topology{Components: []Component{spout("")}}, "empty id"},
		{"duplicate id", Topology{Components: []Component{spout("s"), bolt("s")}}, `two components have the id "s"`},
		{"no tasks", Topology{Components: []Component{{ID: "s", Tasks: 0, Parallelism: 1}}}, `"s": 0 tasks`},
		{"no executors", Topology{Components: []Component{{ID: "s", Tasks: 1, Parallelism: 0}}}, `"s": parallelism 0`},
		{"negative cap", Topology{Components: []Component{{ID: "s", Tasks: 1, Parallelism: 1, MaxTaskParallelism: -2}}}, `"s": max task parallelism -2`},
		{"spout with inputs", Topology{Components: []Component{{ID: "s", Spout: true, Tasks: 1, Parallelism: 1, Inputs: []Input{{Component: "s", Stream: "default"}}}}}, `spout "s" has inputs`},
		{"stream twice", Topology{Components: []Component{{ID: "s", Tasks: 1, Parallelism: 1, Streams: []string{"x", "x"}}}}, `"s": stream id "x"`},
		{"unknown component", Topology{Components: []Component{spout("s"), bolt("b", Input{Component: "t", Stream: "default"})}}, `bolt "b" subscribes to component "t"`},
		{"undeclared stream", Topology{Components: []Component{spout("s"), bolt("b", Input{Component: "s", Stream: "other"})}}, `stream "other" of "s"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.top)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want an error wrapping ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// randomTopology makes a valid topology: spouts and bolts with random
// tasks, parallelism, caps, streams and inputs, in random order.
func randomTopology(r *rand.Rand) Topology {
	n := 1 + r.IntN(8)
	var top Topology
	for i := range n {
		c := Component{ID: fmt.Sprintf("c%02d", r.IntN(100)) + strconv.Itoa(i), Spout: i == 0 || r.IntN(3) == 0,
			Tasks: 1 + r.IntN(12), Parallelism: 1 + r.IntN(12)}
		if r.IntN(3) == 0 {
			c.MaxTaskParallelism = 1 + r.IntN(6)
		}
		for s := range r.IntN(4) {
			c.Streams = append(c.Streams, fmt.Sprintf("s%d", s))
		}
		top.Components = append(top.Components, c)
	}
	for i := range top.Components {
		c := &top.Components[i]
		if c.Spout {
			continue
		}
		for range r.IntN(3) {
			src := top.Components[r.IntN(n)]
			if len(src.Streams) > 0 {
				c.Inputs = append(c.Inputs, Input{Component: src.ID, Stream: src.Streams[r.IntN(len(src.Streams))]})
			}
		}
	}
	return top
}

// reference is the numbering as the runtime's layout computed it before
// the plan existed, kept as the oracle the plan must match: task ids per
// component in id order, min(parallelism, tasks) executors over
// contiguous ranges, streams numbered in the sorted component order.
// Each executor is [first task, tasks, 1 for a spout's].
func reference(top Topology) (taskExec []int, execs [][3]int, streams []Stream) {
	comps := slices.Clone(top.Components)
	slices.SortFunc(comps, func(a, b Component) int { return cmp.Compare(a.ID, b.ID) })
	taskExec = []int{-1}
	for _, c := range comps {
		numTasks := c.Tasks
		if c.MaxTaskParallelism > 0 && numTasks > c.MaxTaskParallelism {
			numTasks = c.MaxTaskParallelism
		}
		first := len(taskExec)
		for _, s := range c.Streams {
			streams = append(streams, Stream{c.ID, s})
		}
		n := min(c.Parallelism, numTasks)
		for e := range n {
			lo := e * numTasks / n
			hi := (e + 1) * numTasks / n
			idx := len(execs)
			spout := 0
			if c.Spout {
				spout = 1
			}
			execs = append(execs, [3]int{first + lo, hi - lo, spout})
			for range hi - lo {
				taskExec = append(taskExec, idx)
			}
		}
	}
	return taskExec, execs, streams
}

// TestRandomTopologies checks the plan of random topologies against the
// reference numbering, its invariants (every task in exactly one
// executor of its own component, executors balanced within a
// component), and that it depends neither on the order of the components
// nor on when it is computed.
func TestRandomTopologies(t *testing.T) {
	seed := testutil.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	for i := range 500 {
		top := randomTopology(r)
		p, err := New(top)
		if err != nil {
			t.Fatalf("topology %d %+v: %v", i, top, err)
		}
		te, execs, streams := reference(top)
		if got := p.TaskExecutors(); !slices.Equal(got, te) {
			t.Fatalf("topology %d %+v: task → executor %v, reference %v", i, top, got, te)
		}
		if len(p.Executors) != len(execs) {
			t.Fatalf("topology %d: %d executors, reference %d", i, len(p.Executors), len(execs))
		}
		for x, e := range p.Executors {
			ref := execs[x]
			if e.FirstTask != ref[0] || e.Tasks != ref[1] || (e.Kind == Spout) != (ref[2] == 1) {
				t.Fatalf("topology %d: executor %d is %+v, reference %v", i, x, e, ref)
			}
		}
		if !slices.Equal(p.Streams, streams) && !(len(p.Streams) == 0 && len(streams) == 0) {
			t.Fatalf("topology %d: streams %v, reference %v", i, p.Streams, streams)
		}
		checkInvariants(t, top, p)

		shuffled := top
		shuffled.Components = slices.Clone(top.Components)
		r.Shuffle(len(shuffled.Components), func(a, b int) {
			shuffled.Components[a], shuffled.Components[b] = shuffled.Components[b], shuffled.Components[a]
		})
		p2, err := New(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, p2) || p.Fingerprint() != p2.Fingerprint() {
			t.Fatalf("topology %d: the plan depends on the order of the components:\n%+v\n%+v", i, p, p2)
		}
	}
}

func checkInvariants(t *testing.T, top Topology, p Plan) {
	t.Helper()
	seen := make([]int, p.Tasks+1)
	for _, cp := range p.Components {
		var sizes []int
		for x := cp.FirstExecutor; x < cp.FirstExecutor+cp.Executors; x++ {
			e := p.Executors[x]
			if e.Component != cp.ID || e.Kind != cp.Kind {
				t.Fatalf("executor %d (%v) is in %q's range", x, e, cp.ID)
			}
			if e.FirstTask < cp.FirstTask || e.FirstTask+e.Tasks > cp.FirstTask+cp.Tasks || e.Tasks < 1 {
				t.Fatalf("executor %d (%v) runs tasks outside %q's %d–%d", x, e, cp.ID, cp.FirstTask, cp.FirstTask+cp.Tasks-1)
			}
			for task := e.FirstTask; task < e.FirstTask+e.Tasks; task++ {
				seen[task]++
			}
			sizes = append(sizes, e.Tasks)
		}
		if len(sizes) > 0 && slices.Max(sizes)-slices.Min(sizes) > 1 {
			t.Fatalf("%q's executors are unbalanced: %v tasks", cp.ID, sizes)
		}
	}
	for task := 1; task <= p.Tasks; task++ {
		if seen[task] != 1 {
			t.Fatalf("task %d is in %d executors, want 1", task, seen[task])
		}
	}
	// The components' executor ranges, in order, are all the executors.
	next := 0
	for _, cp := range p.Components {
		if cp.FirstExecutor != next {
			t.Fatalf("%q's executors start at %d, want %d", cp.ID, cp.FirstExecutor, next)
		}
		next += cp.Executors
	}
	if next != len(p.Executors) {
		t.Fatalf("the components have %d executors, the plan %d", next, len(p.Executors))
	}
	if len(p.Components) != len(top.Components) {
		t.Fatalf("%d components planned, the topology has %d", len(p.Components), len(top.Components))
	}
}

// TestJSONRoundTrip: a plan survives JSON, as nimbus would store it.
func TestJSONRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 1))
	for range 50 {
		p, err := New(randomTopology(r))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back Plan
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Fingerprint() != p.Fingerprint() || !reflect.DeepEqual(normalize(back), normalize(p)) {
			t.Fatalf("round trip changed the plan:\n%s\n%+v", b, back)
		}
	}
	var k Kind
	if err := json.Unmarshal([]byte(`"worker"`), &k); err == nil {
		t.Errorf("an unknown kind unmarshalled as %v", k)
	}
}

// normalize makes empty slices nil, which JSON does not tell apart.
func normalize(p Plan) Plan {
	if len(p.Streams) == 0 {
		p.Streams = nil
	}
	if len(p.Components) == 0 {
		p.Components = nil
	}
	if len(p.Executors) == 0 {
		p.Executors = nil
	}
	return p
}

// plansJSON is the plans of count random topologies drawn from seed.
func plansJSON(t *testing.T, seed uint64, count int) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	var ps []Plan
	for range count {
		p, err := New(randomTopology(r))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	b, err := json.Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPlansInChild runs only in the child process TestSameInAnotherProcess
// starts: it writes the plans to the file the parent names.
func TestPlansInChild(t *testing.T) {
	testutil.ComputeInChild(t, func(t *testing.T, seed uint64) []byte { return plansJSON(t, seed, 200) })
}

// TestSameInAnotherProcess: another process (this test binary run again,
// with its own heap, map seeds and scheduling) computes the same plans,
// byte for byte.
func TestSameInAnotherProcess(t *testing.T) {
	testutil.SameInAnotherProcess(t, "TestPlansInChild", func(t *testing.T, seed uint64) []byte { return plansJSON(t, seed, 200) })
}
