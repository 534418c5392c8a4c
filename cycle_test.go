package gale_test

import (
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/testutil"
	"github.com/gale-stream/gale/internal/worker"
)

// hopSpout always has data: every NextTuple starts a tree whose tuple
// carries hops, the times it goes round the cycle before it ends.
func hopSpout(hops int) func() gale.Spout {
	return func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("hops") },
			next: func(s *funcSpout) {
				if _, err := s.Collector.Emit(s.n, hops); err != nil {
					panic(err)
				}
				s.n++
			},
		}
	}
}

// hopBolt re-emits its input with hops-1, fanout times, anchored on it,
// until hops reaches 0; then it acks.
func hopBolt(fanout int) func() gale.Bolt {
	return func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("hops") },
			execute: func(b *funcBolt, in *gale.Tuple) {
				if h := in.GetInt(0); h > 0 {
					for i := 0; i < fanout; i++ {
						b.Collector.Emit(in, h-1)
					}
				}
				b.Collector.Ack(in)
			},
		}
	}
}

// cycleConf keeps Stop quick whatever state the topology is in.
var cycleConf = gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0}

// waitProgress waits until resolved() reaches want, failing the test if it
// stops growing for stall: a deadlock shows as a count that never moves.
func waitProgress(t *testing.T, what string, want int, stall time.Duration, resolved func() int) {
	t.Helper()
	last, lastAt := -1, time.Now()
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	for {
		n := resolved()
		if n >= want {
			return
		}
		if n != last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > stall {
			t.Fatalf("%s: stuck at %d trees resolved for %v (want %d): the cycle deadlocked", what, n, stall, want)
		}
		<-tk.C
	}
}

// TestSelfLoopCompletes: a bolt subscribing to its own stream, fed by a
// spout that always has data, keeps completing trees. Each tree goes
// round the loop 20 times; the queues fill with small batches, which once
// stalled every executor on the loop with a few dozen trees in flight.
func TestSelfLoopCompletes(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", hopSpout(20), 1)
	b.SetBolt("loop", hopBolt(1), 2).ShuffleGrouping("src").ShuffleGrouping("loop")
	lt, rec, _ := startLocal(t, build(t, b), cycleConf, nil)
	waitProgress(t, "self loop", 1000, 10*time.Second, func() int { return len(rec.Acked("src")) })
	if f := rec.Failed("src"); len(f) > 0 {
		t.Errorf("%d trees failed, the first with %v; want none (the clock never moved)", len(f), f[0].reason)
	}
	if p := lt.Pending(); p > 100 {
		t.Errorf("%d trees pending, want at most the in-flight cap of 100", p)
	}
}

// TestTwoBoltCycleCompletes: ping → pong → ping, under sustained load,
// keeps completing trees.
func TestTwoBoltCycleCompletes(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", hopSpout(20), 2)
	b.SetBolt("ping", hopBolt(1), 2).ShuffleGrouping("src").ShuffleGrouping("pong")
	b.SetBolt("pong", hopBolt(1), 2).ShuffleGrouping("ping")
	_, rec, _ := startLocal(t, build(t, b), cycleConf, nil)
	waitProgress(t, "two-bolt cycle", 1000, 10*time.Second, func() int { return len(rec.Acked("src")) })
	if f := rec.Failed("src"); len(f) > 0 {
		t.Errorf("%d trees failed, the first with %v; want none (the clock never moved)", len(f), f[0].reason)
	}
}

// TestAmplifyingCycleFailsTrees: a cycle whose every hop doubles the
// tuples (2^30 per tree) cannot complete a tree; it must keep failing
// them, naming the reason, instead of stalling or growing without bound.
func TestAmplifyingCycleFailsTrees(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", hopSpout(30), 1)
	b.SetBolt("loop", hopBolt(2), 1).ShuffleGrouping("src").ShuffleGrouping("loop")
	lt, rec, _ := startLocal(t, build(t, b), cycleConf, nil)
	waitProgress(t, "amplifying loop", 300, 10*time.Second, func() int { return len(rec.Failed("src")) })
	if errs, _ := lt.Errors(); len(errs) == 0 || errs[0].Component != "loop" || !errors.Is(errs[0].Err, gale.ErrFeedbackFull) {
		t.Errorf("errors %v, want loop's ErrFeedbackFull", errs)
	}
	f := rec.Failed("src")[0]
	var fe *gale.FailedError
	if !errors.As(f.reason, &fe) || fe.Component != "loop" || !errors.Is(f.reason, gale.ErrFeedbackFull) {
		t.Fatalf("tree failed with %v, want a *FailedError from loop wrapping ErrFeedbackFull", f.reason)
	}
}

// TestBlockedSpoutTimesOut: a spout blocked on a full output queue (its
// only bolt is stuck) still fails its trees when they time out.
func TestBlockedSpoutTimesOut(t *testing.T) {
	release := make(chan struct{})
	var stuck atomic.Bool
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", hopSpout(0), 1)
	b.SetBolt("stuck", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			stuck.Store(true)
			<-release
			b.Collector.Ack(in)
		}}
	}, 1).ShuffleGrouping("src")
	// A cap far above what the queues hold, so the spout blocks on the
	// queue rather than at max pending.
	conf := gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0, gale.TopologyMaxSpoutPending: 1_000_000,
		gale.TopologyMessageTimeoutSecs: 10}
	lt, rec, clk := startLocal(t, build(t, b), conf, nil)
	defer close(release) // before Stop (Cleanup): the bolt must return
	testutil.Eventually(t, 10*time.Second, "the bolt to be stuck", stuck.Load)
	// The spout has filled the queue and waits on it when its pending
	// count stops moving.
	last := -1
	testutil.EventuallyEvery(t, 10*time.Second, 20*time.Millisecond, "the spout to block", func() bool {
		p := lt.Pending()
		ok := p == last && p > 0
		last = p
		return ok
	})
	pending := lt.Pending()
	// Move time one timeout tick per poll until the trees have failed (the
	// manual clock drops a tick the spout has not taken yet, so a tick per
	// poll rather than 1.1 timeouts at once).
	step := bridge.LocalOf(lt).TimeoutTick()
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, "the blocked spout to fail its trees", func() bool {
		if len(rec.Failed("src")) >= pending {
			return true
		}
		clk.Advance(step)
		return false
	})
	timeout := 10 * time.Second
	for _, f := range rec.Failed("src")[:pending] {
		if !errors.Is(f.reason, gale.ErrTimeout) {
			t.Fatalf("tree %v failed with %v, want ErrTimeout", f.id, f.reason)
		}
		if age := f.at.Sub(testEpoch); age < timeout {
			t.Fatalf("tree %v failed %v after its emit, before the %v timeout", f.id, age, timeout)
		}
	}
}

// TestWorkersCycleCompletes: a two-bolt cycle whose executors are spread
// over two workers, so that its tuples cross between them both ways, keeps
// completing trees under sustained load: sends on the edge closing the
// cycle take no credit, and the receiving worker queues them as feedback.
func TestWorkersCycleCompletes(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", hopSpout(20), 2)
	b.SetBolt("ping", hopBolt(1), 2).ShuffleGrouping("src").ShuffleGrouping("pong")
	b.SetBolt("pong", hopBolt(1), 2).ShuffleGrouping("ping")
	var acked, failed atomic.Int64
	obs := &bridge.Observer{
		Ack:  func(string, int, any) { acked.Add(1) },
		Fail: func(string, int, any, error) { failed.Add(1) },
	}
	startWorkers(t, 2, build(t, b), cycleConf, obs, nil)
	waitProgress(t, "two-bolt cycle over two workers", 1000, 10*time.Second, func() int { return int(acked.Load()) })
	if n := failed.Load(); n > 0 {
		t.Errorf("%d trees failed, want none", n)
	}
}

// TestSelfLoopAckingOff: with acking off nothing caps the trees in flight;
// the loop still makes progress (tuples keep reaching the end of their
// hops), its feedback queues bounded by an input queue's worth.
func TestSelfLoopAckingOff(t *testing.T) {
	var ended atomic.Int64
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", hopSpout(20), 1)
	b.SetBolt("loop", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("hops") },
			execute: func(b *funcBolt, in *gale.Tuple) {
				if h := in.GetInt(0); h > 0 {
					b.Collector.Emit(in, h-1)
				} else {
					ended.Add(1)
				}
				b.Collector.Ack(in)
			},
		}
	}, 2).ShuffleGrouping("src").ShuffleGrouping("loop")
	lt, _, _ := startLocal(t, build(t, b), gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0, gale.TopologyAckerExecutors: 0}, nil)
	waitProgress(t, "self loop, acking off", 5000, 10*time.Second, func() int { return int(ended.Load()) })
	if errs, n := lt.Errors(); n > 0 {
		t.Fatalf("%d errors, the first %v; want none (a loop that does not multiply its tuples loses none)", n, errs[0].Err)
	}
}

// TestWorkersBlockedSpoutTimesOut: a spout waiting for credit to send to a
// stuck bolt in another worker still fails its trees when they time out.
// Components in id order round-robin over the workers: src in worker 0,
// stuck in worker 1.
func TestWorkersBlockedSpoutTimesOut(t *testing.T) {
	release := make(chan struct{})
	var stuck atomic.Bool
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", hopSpout(0), 1)
	b.SetBolt("stuck", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			stuck.Store(true)
			<-release
			b.Collector.Ack(in)
		}}
	}, 1).ShuffleGrouping("src")
	topo := build(t, b)
	conf := gale.Config{gale.TopologyShutdownDrainTimeoutSecs: 0, gale.TopologyMaxSpoutPending: 1_000_000,
		gale.TopologyMessageTimeoutSecs: 10}
	clk := galetest.NewClock(testEpoch)
	rec := newRecorder(clk)
	var lns []net.Listener
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns, addrs = append(lns, ln), append(addrs, ln.Addr().String())
	}
	var ws []worker.Handle
	defer func() {
		close(release)
		for _, w := range ws {
			w.Stop()
		}
	}()
	for i := range 2 {
		w, err := bridge.StartWorker("test", conf, topo, worker.Assignment{Worker: i, Workers: addrs},
			worker.Options{Logger: testLogger(t).With("worker", i), Listener: lns[i]},
			bridge.Hooks{Observer: rec.observer(), Clock: clk})
		if err != nil {
			lns[1].Close()
			t.Fatalf("StartWorker %d: %v", i, err)
		}
		ws = append(ws, w)
	}
	testutil.Eventually(t, 10*time.Second, "the bolt to be stuck", stuck.Load)
	last := -1
	testutil.EventuallyEvery(t, 10*time.Second, 20*time.Millisecond, "the spout to block", func() bool {
		p := ws[0].Status().Pending
		ok := p == last && p > 0
		last = p
		return ok
	})
	pending := last
	step := time.Second // the timeout tick: 10 s / (11 - 1)
	testutil.EventuallyEvery(t, 10*time.Second, time.Millisecond, "the blocked spout to fail its trees", func() bool {
		if len(rec.Failed("src")) >= pending {
			return true
		}
		clk.Advance(step)
		return false
	})
	for _, f := range rec.Failed("src")[:pending] {
		if !errors.Is(f.reason, gale.ErrTimeout) {
			t.Fatalf("tree %v failed with %v, want ErrTimeout", f.id, f.reason)
		}
	}
}

// TestCompleteCycle: galetest.Complete runs a topology with a cycle to
// its end: every tree goes round its hops and is acked.
func TestCompleteCycle(t *testing.T) {
	const n = 500
	src := make([]gale.Values, n)
	for i := range src {
		src[i] = gale.Values{i % 25}
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", hopSpout(0), 1)
	b.SetBolt("ping", hopBolt(1), 2).ShuffleGrouping("src").ShuffleGrouping("pong")
	b.SetBolt("pong", hopBolt(1), 3).ShuffleGrouping("ping")
	res := complete(t, build(t, b), galetest.Options{Sources: map[string][]gale.Values{"src": src}})
	if got := ints(res.Acked("src")); !slices.Equal(got, rangeInts(0, n)) {
		t.Errorf("acked %d trees, want all %d", len(got), n)
	}
	if f := res.Failed("src"); len(f) > 0 {
		t.Errorf("%d trees failed, the first with %v", len(f), f[0].Reason)
	}
	hops := len(res.Emitted("ping")) + len(res.Emitted("pong"))
	want := 0
	for i := range n {
		want += i % 25
	}
	if hops != want {
		t.Errorf("the cycle carried %d tuples, want %d (each tree its hops)", hops, want)
	}
}
