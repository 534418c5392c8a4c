package gale_test

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/internal/worker"
)

// startAssigned starts len(execs) workers of topo in this process, worker
// i with the executor map execs[i] (nil: none given) and its own
// observer obs(i).
func startAssigned(t *testing.T, topo *gale.Topology, conf gale.Config, execs [][]int, obs func(i int) *bridge.Observer, log *slog.Logger) *workers {
	t.Helper()
	return startWorkersWith(t, len(execs), topo, conf, workerSetup{execs: execs, obs: obs, log: log})
}

// TestWorkersGivenAssignment: workers route by the executor map they are
// given, whatever it is, and the run stays exact: every sentence acked
// once, no failure, every word counted once by the one task its fields
// grouping picks. The word count's executors in id order: count 0–1,
// sentences 2–3, split 4–5; each runs one task, task = executor + 1. The
// trees of a spout task are kept by it, so its acks go to its worker.
func TestWorkersGivenAssignment(t *testing.T) {
	tests := []struct {
		name  string
		execs []int
	}{
		{"even", []int{0, 1, 0, 1, 0, 1}},
		{"reversed", []int{1, 0, 1, 0, 1, 0}},
		{"spouts on a worker of their own", []int{0, 0, 1, 1, 0, 0}},
		{"each spout with the other's bolts", []int{1, 0, 0, 1, 1, 0}},
		{"everything on worker 1, worker 0 idle", []int{1, 1, 1, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wc := &wordCount{n: 1500}
			topo := wc.topology(t, 2, 2, 2)
			rec := newRecorder(galetest.NewClock(testEpoch))
			all := rec.observer()
			var misplaced atomic.Int64
			var mu sync.Mutex
			var firstMisplaced string
			obs := func(w int) *bridge.Observer {
				return &bridge.Observer{
					Ack:  all.Ack,
					Fail: all.Fail,
					Emit: func(component, _ string, task int, _ []any) {
						if tc.execs[task-1] != w {
							if misplaced.Add(1) == 1 {
								mu.Lock()
								firstMisplaced = fmt.Sprintf("%s task %d emitted in worker %d, assigned to worker %d", component, task, w, tc.execs[task-1])
								mu.Unlock()
							}
						}
					},
				}
			}
			w := startAssigned(t, topo, gale.Config{}, [][]int{tc.execs, tc.execs}, obs, nil)
			total := 2 * wc.n
			testutil.Eventually(t, 60*time.Second, "every sentence acked", func() bool { return len(rec.Acked("sentences")) >= total })
			if n := misplaced.Load(); n > 0 {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%d emits ran in a worker the assignment does not place them in; first: %s", n, firstMisplaced)
			}
			checkExact(t, rec, wc, total)
			for i, st := range w.status() {
				if st.Pending != 0 {
					t.Errorf("worker %d has %d trees pending after every ack", i, st.Pending)
				}
			}
		})
	}
}

// TestStartWorkerBadExecutorMap: a map that does not fit the topology's
// plan is refused with ErrInvalidAssignment, naming the executor at
// fault, before anything runs.
func TestStartWorkerBadExecutorMap(t *testing.T) {
	topo := (&wordCount{n: 1}).topology(t, 2, 2, 2) // 6 executors
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2"}
	tests := []struct {
		name  string
		execs []int
		want  string
	}{
		{"too short", []int{0, 1, 0, 1, 0}, "places 5 executors, the plan has 6"},
		{"too long", []int{0, 1, 0, 1, 0, 1, 0}, "places 7 executors, the plan has 6"},
		{"empty", []int{}, "places 0 executors, the plan has 6"},
		{"unknown worker", []int{0, 1, 0, 1, 0, 2}, `executor 5 (bolt "split", task 6) is placed on worker 2`},
		{"negative worker", []int{0, 1, -1, 1, 0, 1}, `executor 2 (spout "sentences", task 3) is placed on worker -1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bridge.StartWorker("test", gale.Config{}, topo, worker.Assignment{Worker: 0, Workers: addrs, Executors: tc.execs}, worker.Options{}, bridge.Hooks{})
			if !errors.Is(err, worker.ErrInvalidAssignment) {
				t.Fatalf("got %v, want ErrInvalidAssignment", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestWorkersDifferentAssignmentsRefused: two workers given different
// executor maps for the same topology would misroute each other's
// tuples; they refuse each other at the hello, with a message that shows
// the topology is the same and the assignment differs, and no spout
// starts.
func TestWorkersDifferentAssignmentsRefused(t *testing.T) {
	var calls atomic.Int64
	b := gale.NewTopologyBuilder()
	b.SetSpout("a", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("v") },
			next:    func(s *funcSpout) { calls.Add(1) },
		}
	}, 1)
	b.SetBolt("b", func() gale.Bolt { return &funcBolt{} }, 1).ShuffleGrouping("a")
	topo := build(t, b)
	var mu sync.Mutex
	var errs []string
	log := slog.New(captureLogs{testLogger(t).Handler(), &mu, &errs})
	// Executors: a, b.
	w := startAssigned(t, topo, gale.Config{}, [][]int{{0, 1}, {1, 0}}, func(int) *bridge.Observer { return nil }, log)
	var refusal string
	testutil.Eventually(t, 10*time.Second, "a refused hello", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range errs {
			if strings.Contains(e, "refused a worker connection") {
				refusal = e
				return true
			}
		}
		return false
	})
	// The message says the topology is the same and the assignments differ,
	// and quotes both assignments' fingerprints.
	if strings.Contains(refusal, "runs topology") {
		t.Fatalf("the refusal %q says the topologies differ; only the assignment does", refusal)
	}
	if !strings.Contains(refusal, "hold different assignments") {
		t.Fatalf("the refusal %q does not say the assignments differ", refusal)
	}
	var fps []string
	for i, part := range strings.Split(refusal, `"`) {
		if i%2 == 1 && part != "0" && part != "1" {
			fps = append(fps, part)
		}
	}
	if len(fps) != 2 || fps[0] == fps[1] {
		t.Fatalf("the refusal %q does not quote two different assignment fingerprints (got %q)", refusal, fps)
	}
	for i, st := range w.status() {
		if st.PeersConnected != 0 {
			t.Errorf("worker %d connected to a peer with another assignment: %+v", i, st)
		}
	}
	if n := calls.Load(); n > 0 {
		t.Errorf("the spout ran %d times though its worker never reached its peer", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "malformed") }) {
		t.Errorf("a tuple crossed between workers with different assignments: %q", errs)
	}
}

// TestWorkersParallelismOverride: workers given a rebalance's executor
// counts (Assignment.Parallelism) run that many executors of the
// component, over the same tasks, and the run stays exact. The count
// bolt has 4 tasks on 2 executors by definition; the executor maps fit
// only the overridden plans (executors in id order: count, sentences
// 2, split 2).
func TestWorkersParallelismOverride(t *testing.T) {
	tests := []struct {
		name  string
		count int
		execs []int
	}{
		{"count on 4 executors", 4, []int{0, 1, 1, 0, 1, 0, 0, 1}},
		{"count on 1 executor", 1, []int{1, 0, 1, 0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wc := &wordCount{n: 1000, countTasks: 4}
			topo := wc.topology(t, 2, 2, 2)
			rec := newRecorder(galetest.NewClock(testEpoch))
			obs := rec.observer()
			startWorkersWith(t, 2, topo, gale.Config{}, workerSetup{
				execs:       [][]int{tc.execs, tc.execs},
				obs:         func(int) *bridge.Observer { return obs },
				parallelism: map[string]int{"count": tc.count},
			})
			total := 2 * wc.n
			testutil.Eventually(t, 60*time.Second, "every sentence acked", func() bool { return len(rec.Acked("sentences")) >= total })
			checkExact(t, rec, wc, total)
			pt, err := bridge.PlanTopologyWith(topo, gale.Config{}, nil, 2, map[string]int{"count": tc.count})
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan.New(pt)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Executors) != len(tc.execs) {
				t.Errorf("PlanTopologyWith gives %d executors, the workers run %d", len(p.Executors), len(tc.execs))
			}
		})
	}
}

// TestStartWorkerBadParallelism: an executor count outside 1 … the
// component's tasks, or for a component the topology does not have, is
// refused with ErrInvalidAssignment naming the component, the number and
// the tasks, before anything runs; PlanTopologyWith says the same.
func TestStartWorkerBadParallelism(t *testing.T) {
	topo := (&wordCount{n: 1, countTasks: 4}).topology(t, 2, 2, 2)
	tests := []struct {
		name string
		p    map[string]int
		want string
	}{
		{"zero", map[string]int{"count": 0}, `count=0: component "count" has 4 tasks, so it runs 1 to 4 executors`},
		{"over the tasks", map[string]int{"count": 5}, `count=5: component "count" has 4 tasks`},
		{"over a spout's tasks", map[string]int{"sentences": 3}, `sentences=3: component "sentences" has 2 tasks`},
		{"unknown component", map[string]int{"counter": 2}, `counter=2: the topology has no component "counter"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			asg := worker.Assignment{Worker: 0, Workers: []string{"127.0.0.1:1", "127.0.0.1:2"}, Parallelism: tc.p}
			w, err := bridge.StartWorker("test", gale.Config{}, topo, asg, worker.Options{}, bridge.Hooks{})
			if err == nil {
				w.Stop()
			}
			if !errors.Is(err, worker.ErrInvalidAssignment) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("StartWorker: got %v, want ErrInvalidAssignment saying %q", err, tc.want)
			}
			_, err = bridge.PlanTopologyWith(topo, gale.Config{}, nil, 2, tc.p)
			if !errors.Is(err, worker.ErrInvalidAssignment) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PlanTopologyWith: got %v, want ErrInvalidAssignment saying %q", err, tc.want)
			}
		})
	}
}
