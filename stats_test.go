package gale_test

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/testutil"
)

// startManual starts topo on a manual clock.
func startManual(t *testing.T, topo *gale.Topology, conf gale.Config) (*gale.LocalTopology, *galetest.Clock) {
	t.Helper()
	clock := galetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lt, err := gale.StartLocal("stats", conf, topo, gale.RunOptions{Logger: testLogger(t), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lt.Stop)
	return lt, clock
}

// settle waits until lt is quiet with at most pending trees in flight,
// letting simulated time pass (timeout ticks) while more are.
func settle(t *testing.T, lt *gale.LocalTopology, clock *galetest.Clock, pending int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := bridge.LocalOf(lt)
	for {
		n, err := h.WaitQuiet(ctx)
		if err != nil {
			t.Fatalf("waiting for quiet: %v", err)
		}
		if n <= pending {
			return
		}
		clock.Advance(h.TimeoutTick())
		if err := clock.WaitHandled(ctx); err != nil {
			t.Fatalf("waiting for the ticks: %v", err)
		}
	}
}

// splitTopology: nums emits 100 trees to split, which fails seq 7, holds
// seq 13 without acking it, and emits the others anchored to sink.
func splitTopology(t *testing.T) *gale.Topology {
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", seqSpout(100), 1)
	b.SetBolt("split", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			execute: func(b *funcBolt, tu *gale.Tuple) {
				switch seq := tu.GetInt(0); seq {
				case 7:
					b.Collector.Fail(tu, nil)
				default:
					b.Collector.Emit(tu, seq)
					if seq != 13 {
						b.Collector.Ack(tu)
					}
				}
			},
		}
	}, 1).ShuffleGrouping("nums")
	b.SetBolt("sink", func() gale.Bolt { return &funcBolt{} }, 2).ShuffleGrouping("split")
	return build(t, b)
}

// TestBoltStats: each bolt's executed, acked, failed and emitted are what
// it did, one Execute in metrics.ExecuteSampleEvery is timed, and the
// spout's failures are split into those a bolt failed and those that
// timed out.
func TestBoltStats(t *testing.T) {
	lt, clock := startManual(t, splitTopology(t), nil)
	settle(t, lt, clock, 0)
	bolts := bridge.BoltStats(lt)
	want := []metrics.Bolt{
		{Component: "sink", Tasks: 2, Executed: 99, Acked: 99},
		{Component: "split", Tasks: 1, Executed: 100, Acked: 98, Failed: 1, Emitted: 99, ExecuteSamples: 2, ProcessSamples: 2},
	}
	if len(bolts) != len(want) {
		t.Fatalf("bolt stats %+v, want %+v", bolts, want)
	}
	for i, w := range want {
		g := bolts[i]
		checkExecutors(t, lt, g)
		g.Executors, g.Inputs, g.Outputs = nil, nil, nil // TestStreamStats checks them
		if g.Component == "sink" {
			// Two executors time their first Execute each, then one in 64.
			if g.ExecuteSamples < 2 || g.ExecuteSamples > 3 || g.ProcessSamples != g.ExecuteSamples {
				t.Errorf("sink: %d Execute calls timed of 99 in 2 executors, %d acks; want 2 or 3 of each", g.ExecuteSamples, g.ProcessSamples)
			}
			g.ExecuteSamples, g.ProcessSamples = 0, 0
		}
		g.Capacity = 0      // TestBoltCapacity checks it
		g.QueueCapacity = 0 // TestQueueDepth checks it
		if !reflect.DeepEqual(g, w) {
			t.Errorf("got %+v, want %+v", g, w)
		}
	}
	spouts := bridge.SpoutStats(lt)
	if len(spouts) != 1 {
		t.Fatalf("spout stats %+v, want nums only", spouts)
	}
	s := spouts[0]
	if s.Emitted != 100 || s.Acked != 98 || s.Failed != 2 || s.FailedByBolt != 1 || s.TimedOut != 1 || s.FailedShutdown != 0 {
		t.Errorf("nums: emitted %d, acked %d, failed %d (by a bolt %d, timed out %d, at shutdown %d); want 100, 98, 2 (1, 1, 0)",
			s.Emitted, s.Acked, s.Failed, s.FailedByBolt, s.TimedOut, s.FailedShutdown)
	}
	if s.Transferred != 0 {
		t.Errorf("nums: %d transferred in one process, want 0", s.Transferred)
	}
	task := bridge.LocalOf(lt).TaskIDs("nums")[0]
	if len(s.Executors) != 1 || s.Executors[0] != (metrics.Executor{FirstTask: task, LastTask: task, Emitted: 100, Acked: 98, Failed: 2}) {
		t.Errorf("nums: executors %+v, want one of task %d with 100 emitted, 98 acked, 2 failed", s.Executors, task)
	}
}

// TestSpoutStatsShutdown: a tree still in flight when the topology stops
// counts as failed at shutdown, not as timed out.
func TestSpoutStatsShutdown(t *testing.T) {
	lt, clock := startManual(t, splitTopology(t), nil)
	settle(t, lt, clock, 1) // seq 13 is held
	lt.Stop()
	s := metrics.TotalSpouts(bridge.SpoutStats(lt))
	if s.Failed != 2 || s.FailedByBolt != 1 || s.TimedOut != 0 || s.FailedShutdown != 1 {
		t.Errorf("after Stop: failed %d (by a bolt %d, timed out %d, at shutdown %d); want 2 (1, 0, 1)",
			s.Failed, s.FailedByBolt, s.TimedOut, s.FailedShutdown)
	}
}

// TestBoltCapacity: a bolt whose every Execute takes 1 ms of the clock,
// and nothing else taking time, has an execute latency of 1 ms and a
// capacity of 1; once it has been idle for a whole window, 0.
func TestBoltCapacity(t *testing.T) {
	var clock *galetest.Clock
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", seqSpout(100), 1)
	b.SetBolt("slow", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, tu *gale.Tuple) {
			clock.Advance(time.Millisecond)
			b.Collector.Ack(tu)
		}}
	}, 1).ShuffleGrouping("nums")
	// The clock is made before the topology runs: StartLocal takes it.
	clock = galetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lt, err := gale.StartLocal("capacity", nil, build(t, b), gale.RunOptions{Logger: testLogger(t), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	settle(t, lt, clock, 0)
	slow := bridge.BoltStats(lt)[0]
	if slow.Executed != 100 || slow.ExecuteLatency() != time.Millisecond {
		t.Fatalf("slow: executed %d, execute latency %v; want 100, 1ms", slow.Executed, slow.ExecuteLatency())
	}
	if math.Abs(slow.Capacity-1) > 1e-9 {
		t.Errorf("slow: capacity %v after 100 × 1 ms in 100 ms, want 1", slow.Capacity)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	idle := func(d time.Duration) float64 {
		clock.Advance(d)
		if err := clock.WaitHandled(ctx); err != nil {
			t.Fatal(err)
		}
		return bridge.BoltStats(lt)[0].Capacity
	}
	// 100 ms busy in 10.1 s; then a window with nothing executed.
	if got, want := idle(10*time.Second), 0.1/10.1; math.Abs(got-want) > 1e-9 {
		t.Errorf("after 10 s idle: capacity %v, want %v", got, want)
	}
	if got := idle(10 * time.Second); got != 0 {
		t.Errorf("after a whole idle window: capacity %v, want 0", got)
	}
}

// TestBoltCapacityInALongExecute: a bolt stuck in one long Execute shows
// busy while it runs, before any call has been timed or counted.
func TestBoltCapacityInALongExecute(t *testing.T) {
	var clock *galetest.Clock
	entered, release := make(chan struct{}), make(chan struct{})
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", seqSpout(1), 1)
	b.SetBolt("stuck", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, tu *gale.Tuple) {
			close(entered)
			<-release
			b.Collector.Ack(tu)
		}}
	}, 1).ShuffleGrouping("nums")
	clock = galetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lt, err := gale.StartLocal("capacity", gale.Config{gale.TopologyMessageTimeoutSecs: 3600}, build(t, b), gale.RunOptions{Logger: testLogger(t), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Stop()
	<-entered
	clock.Advance(12 * time.Second)
	stuck := bridge.BoltStats(lt)[0]
	if stuck.Capacity < 0.99 {
		t.Errorf("stuck: capacity %v 12 s into an Execute, want 1", stuck.Capacity)
	}
	close(release)
	settle(t, lt, clock, 0)
	if c := bridge.BoltStats(lt)[0].Capacity; c < 0.99 || c > 1 {
		t.Errorf("after the Execute returned: capacity %v, want 1 (busy the whole window)", c)
	}
}

// TestTransferred: in two workers, the copies of a tuple sent to a task
// in the other worker count as transferred, those to a task in the same
// worker do not, for spouts and bolts alike.
func TestTransferred(t *testing.T) {
	const n = 200
	b := gale.NewTopologyBuilder()
	b.SetSpout("nums", seqSpout(n), 1)
	b.SetBolt("all", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			execute: func(b *funcBolt, tu *gale.Tuple) {
				b.Collector.Emit(tu, tu.GetInt(0))
				b.Collector.Ack(tu)
			},
		}
	}, 2).AllGrouping("nums")
	b.SetBolt("sink", func() gale.Bolt { return &funcBolt{} }, 2).AllGrouping("all")
	w := startWorkers(t, 2, build(t, b), gale.Config{}, nil, nil)
	// Where each component's tasks run, tasks[worker][component], and
	// the counters, once every tree is acked and every bolt has published
	// what it executed.
	var (
		tasks            []map[string]int
		bolts            []map[string]metrics.Bolt
		spoutAt          int
		spoutTransferred int64
	)
	testutil.Eventually(t, 10*time.Second, "every tree acked and every tuple executed", func() bool {
		tasks, bolts = make([]map[string]int, 2), make([]map[string]metrics.Bolt, 2)
		var acked, executed int64
		for i, wk := range w.ws {
			tasks[i], bolts[i] = map[string]int{}, map[string]metrics.Bolt{}
			for _, s := range bridge.SpoutStats(wk) {
				acked += s.Acked
				if s.Tasks > 0 {
					spoutAt, spoutTransferred = i, s.Transferred
				}
			}
			for _, bs := range bridge.BoltStats(wk) {
				tasks[i][bs.Component] = bs.Tasks
				bolts[i][bs.Component] = bs
				executed += bs.Executed
			}
		}
		// 2 all tasks execute each tuple, 2 sink tasks each of theirs.
		return acked == n && executed == 2*n+2*2*n
	})
	if want := int64(n * tasks[1-spoutAt]["all"]); spoutTransferred != want {
		t.Errorf("nums (worker %d): transferred %d, want %d: each of %d tuples to the %d all tasks in the other worker",
			spoutAt, spoutTransferred, want, n, tasks[1-spoutAt]["all"])
	}
	for i := range 2 {
		all := bolts[i]["all"]
		if want := int64(n * all.Tasks * tasks[1-i]["sink"]); all.Transferred != want {
			t.Errorf("all in worker %d: transferred %d, want %d (%d tuples from each of %d tasks to %d sink tasks in the other worker)",
				i, all.Transferred, want, n, all.Tasks, tasks[1-i]["sink"])
		}
		if len(all.Outputs) != 1 || all.Outputs[0].Transferred != all.Transferred || all.Outputs[0].Emitted != all.Emitted {
			t.Errorf("all in worker %d: outputs %+v, want the default stream's with the component's %d emitted, %d transferred",
				i, all.Outputs, all.Emitted, all.Transferred)
		}
		if all.Executed != int64(n*all.Tasks) || all.Emitted != all.Executed {
			t.Errorf("all in worker %d: executed %d, emitted %d; want %d each", i, all.Executed, all.Emitted, n*all.Tasks)
		}
	}
}

// checkExecutors checks that a bolt's executors cover its tasks in order,
// one each here, and that their counters add up to the component's.
func checkExecutors(t *testing.T, lt *gale.LocalTopology, b metrics.Bolt) {
	t.Helper()
	tasks := bridge.LocalOf(lt).TaskIDs(b.Component)
	if len(b.Executors) != len(tasks) {
		t.Fatalf("%s: executors %+v, want one per task %v", b.Component, b.Executors, tasks)
	}
	var sum metrics.Executor
	for i, e := range b.Executors {
		if e.FirstTask != tasks[i] || e.LastTask != tasks[i] {
			t.Errorf("%s executor %d: tasks %d–%d, want %d", b.Component, i, e.FirstTask, e.LastTask, tasks[i])
		}
		sum.Executed += e.Executed
		sum.Acked += e.Acked
		sum.Failed += e.Failed
		sum.Emitted += e.Emitted
		sum.ExecuteSamples += e.ExecuteSamples
		sum.ProcessSamples += e.ProcessSamples
	}
	if sum.Executed != b.Executed || sum.Acked != b.Acked || sum.Failed != b.Failed || sum.Emitted != b.Emitted ||
		sum.ExecuteSamples != b.ExecuteSamples || sum.ProcessSamples != b.ProcessSamples {
		t.Errorf("%s: the executors' counters sum to %+v, want the component's %+v", b.Component, sum, b)
	}
}
