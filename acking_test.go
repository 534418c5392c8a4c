package gale_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/testutil"
)

var errBoom = errors.New("boom")

// TestBoltFailReachesSpout: a bolt two levels down fails a tuple; the
// spout's Fail gets a *FailedError naming that bolt and wrapping its error.
func TestBoltFailReachesSpout(t *testing.T) {
	const n = 40
	var leafTasks list[int]
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", seqSpout(n), 1)
	b.SetBolt("mid", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			execute: func(b *funcBolt, in *gale.Tuple) {
				b.Collector.Emit(in, in.Value(0))
				b.Collector.Ack(in)
			},
		}
	}, 2).ShuffleGrouping("src")
	b.SetBolt("leaf", func() gale.Bolt {
		return &funcBolt{
			prepare: func(b *funcBolt) error { leafTasks.add(b.tc.TaskID()); return nil },
			execute: func(b *funcBolt, in *gale.Tuple) {
				switch seq := in.GetInt(0); seq % 4 {
				case 1:
					b.Collector.Fail(in, fmt.Errorf("seq %d: %w", seq, errBoom))
				case 3:
					b.Collector.Fail(in, nil)
				default:
					b.Collector.Ack(in)
				}
			},
		}
	}, 3).ShuffleGrouping("mid")
	b.SetBolt("other", sinkBolt, 1).ShuffleGrouping("src")
	res := complete(t, build(t, b), galetest.Options{})

	var wantAcked []int
	for i := 0; i < n; i += 2 {
		wantAcked = append(wantAcked, i)
	}
	if got := ints(res.Acked("src")); !slices.Equal(got, wantAcked) {
		t.Errorf("acked %v, want %v", got, wantAcked)
	}
	failed := res.Failed("src")
	if len(failed) != n/2 {
		t.Fatalf("got %d failures, want %d", len(failed), n/2)
	}
	tasks := leafTasks.all()
	for _, f := range failed {
		seq := f.MsgID.(int)
		var fe *gale.FailedError
		if !errors.As(f.Reason, &fe) {
			t.Fatalf("msg %d failed with %v (%T), want a *gale.FailedError", seq, f.Reason, f.Reason)
		}
		if fe.Component != "leaf" || !slices.Contains(tasks, fe.Task) {
			t.Errorf("msg %d: FailedError names %s task %d, want leaf, one of tasks %v", seq, fe.Component, fe.Task, tasks)
		}
		if !strings.Contains(f.Reason.Error(), "leaf") {
			t.Errorf("msg %d: reason %q does not name the bolt", seq, f.Reason)
		}
		switch seq % 4 {
		case 1:
			if !errors.Is(f.Reason, errBoom) || !strings.Contains(f.Reason.Error(), fmt.Sprintf("seq %d", seq)) {
				t.Errorf("msg %d: reason %q does not wrap the bolt's error", seq, f.Reason)
			}
		case 3:
			if fe.Err != nil {
				t.Errorf("msg %d: FailedError.Err = %v, want nil (the bolt gave none)", seq, fe.Err)
			}
		default:
			t.Errorf("msg %d failed, want acked", seq)
		}
	}
}

// TestMaxSpoutPending: a spout task never has more than
// topology.max.spout.pending trees in flight, and NextTuple is not called
// while it is at the cap. The bolt holds each spout task's tuples until it
// has maxPending of them, so the cap is reached on every batch.
func TestMaxSpoutPending(t *testing.T) {
	const perTask, maxPending = 15, 3
	type obs struct {
		maxBefore int // most trees pending before an emit
		atCap     int // NextTuple calls while at the cap
		emitted   int
	}
	var mu sync.Mutex
	perSpoutTask := map[int]*obs{}
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		o := &obs{}
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("id") },
			open: func(s *funcSpout) error {
				mu.Lock()
				perSpoutTask[s.tc.TaskID()] = o
				mu.Unlock()
				return nil
			},
			next: func(s *funcSpout) {
				mu.Lock()
				defer mu.Unlock()
				p := s.Collector.Pending()
				if p >= maxPending {
					o.atCap++
				}
				if s.n >= perTask {
					return
				}
				o.maxBefore = max(o.maxBefore, p)
				id := fmt.Sprintf("%d-%d", s.tc.TaskID(), s.n)
				if _, err := s.Collector.Emit(id, id); err != nil {
					panic(err)
				}
				s.n++
				o.emitted++
			},
		}
	}, 2).SetMaxSpoutPending(maxPending)
	b.SetBolt("hold", func() gale.Bolt {
		held := map[int][]*gale.Tuple{} // by spout task
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			src := in.SourceTask()
			held[src] = append(held[src], in)
			if len(held[src]) == maxPending {
				for _, h := range held[src] {
					b.Collector.Ack(h)
				}
				held[src] = nil
			}
		}}
	}, 1).ShuffleGrouping("src")
	_, rec, _ := startLocal(t, build(t, b), nil, nil)
	testutil.Eventually(t, 10*time.Second, "every message acked", func() bool { return len(rec.Acked("src")) == 2*perTask })

	if f := rec.Failed("src"); len(f) > 0 {
		t.Errorf("failed %v, want none", f)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(perSpoutTask) != 2 {
		t.Fatalf("saw %d spout tasks, want 2", len(perSpoutTask))
	}
	for task, o := range perSpoutTask {
		if o.atCap > 0 {
			t.Errorf("task %d: NextTuple called %d times at max pending", task, o.atCap)
		}
		if o.maxBefore != maxPending-1 {
			t.Errorf("task %d: most trees pending before an emit = %d, want %d (the cap reached, never passed)", task, o.maxBefore, maxPending-1)
		}
		if o.emitted != perTask {
			t.Errorf("task %d emitted %d, want %d", task, o.emitted, perTask)
		}
	}
}

// TestAckingOff: with topology.acker.executors 0 every message id is acked
// at once, whatever the bolts do; nothing is failed and no time passes.
func TestAckingOff(t *testing.T) {
	const n = 50
	var pendingSeen, boltCalls counter[string]
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		s := seqSpout(n)().(*funcSpout)
		next := s.next
		s.next = func(s *funcSpout) {
			if p := s.Collector.Pending(); p != 0 {
				pendingSeen.inc(fmt.Sprint(p))
			}
			next(s)
		}
		return s
	}, 2)
	b.SetBolt("failer", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			execute: func(b *funcBolt, in *gale.Tuple) {
				boltCalls.inc("failer")
				b.Collector.Emit(in, in.Value(0))
				b.Collector.Fail(in, errBoom)
			},
		}
	}, 2).ShuffleGrouping("src")
	b.SetBolt("hold", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			boltCalls.inc("hold")
			b.held = append(b.held, in) // never acked
		}}
	}, 1).ShuffleGrouping("failer")
	b.SetBolt("acker-ish", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			boltCalls.inc("acker-ish")
			b.Collector.ResetTimeout(in)
			b.Collector.Ack(in)
			b.Collector.Ack(in)
		}}
	}, 1).ShuffleGrouping("src")
	res := complete(t, build(t, b), galetest.Options{Config: gale.Config{gale.TopologyAckerExecutors: 0}})

	// Two spout tasks each emit 0..n-1.
	want := append(rangeInts(0, n), rangeInts(0, n)...)
	slices.Sort(want)
	if got := ints(res.Acked("src")); !slices.Equal(got, want) {
		t.Errorf("acked %v, want every emitted id once", got)
	}
	if f := res.Failed("src"); len(f) > 0 {
		t.Errorf("failed %d messages (first %v), want none with acking off", len(f), f[0])
	}
	if res.Elapsed != 0 {
		t.Errorf("simulated clock moved %s, want 0: acks must not wait for trees", res.Elapsed)
	}
	if p := pendingSeen.snapshot(); len(p) > 0 {
		t.Errorf("Pending() was non-zero with acking off: %v", p)
	}
	for _, bolt := range []string{"failer", "hold", "acker-ish"} {
		if got := boltCalls.get(bolt); got != 2*n {
			t.Errorf("bolt %s executed %d tuples, want %d", bolt, got, 2*n)
		}
	}
}

// TestUnreliableEmits: tuples emitted without a message id are never acked
// or failed, and max.spout.pending does not throttle them.
func TestUnreliableEmits(t *testing.T) {
	const n = 30
	var spoutCalls list[string]
	var got counter[string]
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			next: func(s *funcSpout) {
				if s.n < n {
					if _, err := s.Collector.Emit(nil, s.n); err != nil {
						panic(err)
					}
					s.n++
				}
			},
			ack:  func(_ *funcSpout, id any) { spoutCalls.add(fmt.Sprint("ack ", id)) },
			fail: func(_ *funcSpout, id any, err error) { spoutCalls.add(fmt.Sprint("fail ", id, err)) },
		}
	}, 1).SetMaxSpoutPending(1)
	b.SetBolt("mixed", func() gale.Bolt {
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("seq") },
			execute: func(b *funcBolt, in *gale.Tuple) {
				got.inc("mixed")
				b.Collector.Emit(in, in.Value(0))
				if in.GetInt(0)%2 == 0 {
					b.Collector.Fail(in, errBoom)
				} else {
					b.Collector.Ack(in)
				}
			},
		}
	}, 2).ShuffleGrouping("src")
	b.SetBolt("hold", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			got.inc("hold")
			b.held = append(b.held, in)
		}}
	}, 1).ShuffleGrouping("mixed").ShuffleGrouping("src")
	res := complete(t, build(t, b), galetest.Options{})
	if c := spoutCalls.all(); len(c) > 0 {
		t.Errorf("spout got %v, want no Ack or Fail for unreliable emits", c)
	}
	if res.Elapsed != 0 {
		t.Errorf("simulated clock moved %s, want 0: nothing to time out", res.Elapsed)
	}
	if got, want := got.get("mixed"), n; got != want {
		t.Errorf("bolt mixed got %d tuples, want %d (max pending must not apply)", got, want)
	}
	if got, want := got.get("hold"), 2*n; got != want {
		t.Errorf("bolt hold got %d tuples, want %d", got, want)
	}
}

// TestMultiAnchoring joins tuples from two spouts by key and emits the
// join anchored on both: each spout's message completes only after the
// joined tuple is acked, and failing the joined tuple fails both.
func TestMultiAnchoring(t *testing.T) {
	const n = 20
	var mu sync.Mutex
	sinkDone := map[int]bool{} // joined tuple of key acked or failed by the sink
	var early list[string]
	keySpout := func(side string) func() gale.Spout {
		return func() gale.Spout {
			return &funcSpout{
				declare: func(d gale.OutputDeclarer) { d.Declare("key", "side") },
				next: func(s *funcSpout) {
					if s.n < n {
						s.Collector.Emit(s.n, s.n, side)
						s.n++
					}
				},
				ack: func(_ *funcSpout, id any) {
					mu.Lock()
					defer mu.Unlock()
					if !sinkDone[id.(int)] {
						early.add(fmt.Sprintf("%s %v acked before the joined tuple", side, id))
					}
				},
			}
		}
	}
	b := gale.NewTopologyBuilder()
	b.SetSpout("a", keySpout("a"), 1)
	b.SetSpout("b", keySpout("b"), 1)
	b.SetBolt("join", func() gale.Bolt {
		pending := map[int]*gale.Tuple{}
		return &funcBolt{
			declare: func(d gale.OutputDeclarer) { d.Declare("key") },
			execute: func(b *funcBolt, in *gale.Tuple) {
				k := in.GetInt(0)
				other, ok := pending[k]
				if !ok {
					pending[k] = in
					return
				}
				delete(pending, k)
				if _, err := b.Collector.EmitStream(gale.DefaultStream, []*gale.Tuple{other, in}, k); err != nil {
					panic(err)
				}
				b.Collector.Ack(other)
				b.Collector.Ack(in)
			},
		}
	}, 2).FieldsGrouping("a", "key").FieldsGrouping("b", "key")
	b.SetBolt("sink", func() gale.Bolt {
		return &funcBolt{
			execute: func(b *funcBolt, in *gale.Tuple) {
				// Hold every joined tuple until all are here.
				b.held = append(b.held, in)
				if len(b.held) < n {
					return
				}
				for _, h := range b.held {
					k := h.GetInt(0)
					mu.Lock()
					sinkDone[k] = true
					mu.Unlock()
					if k%2 == 0 {
						b.Collector.Ack(h)
					} else {
						b.Collector.Fail(h, errBoom)
					}
				}
				b.held = b.held[:0]
			},
		}
	}, 1).ShuffleGrouping("join")
	res := complete(t, build(t, b), galetest.Options{})

	for _, e := range early.all() {
		t.Error(e)
	}
	var even, odd []int
	for k := range n {
		if k%2 == 0 {
			even = append(even, k)
		} else {
			odd = append(odd, k)
		}
	}
	for _, spout := range []string{"a", "b"} {
		if got := ints(res.Acked(spout)); !slices.Equal(got, even) {
			t.Errorf("spout %s acked %v, want %v", spout, got, even)
		}
		var failed []any
		for _, f := range res.Failed(spout) {
			failed = append(failed, f.MsgID)
			var fe *gale.FailedError
			if !errors.As(f.Reason, &fe) || fe.Component != "sink" || !errors.Is(f.Reason, errBoom) {
				t.Errorf("spout %s msg %v failed with %v, want a FailedError from sink wrapping %v", spout, f.MsgID, f.Reason, errBoom)
			}
		}
		if got := ints(failed); !slices.Equal(got, odd) {
			t.Errorf("spout %s failed %v, want %v", spout, got, odd)
		}
	}
}

// TestResetTimeout: a bolt that holds a tuple for 2.5 message timeouts
// keeps its tree alive by calling ResetTimeout on every tick; without the
// resets the tree times out after T to 1.1T (plus a tick). The test drives
// the simulated clock itself, one second at a time, waiting each time for
// the bolt's tick and for the spout to have run.
func TestResetTimeout(t *testing.T) {
	const timeoutSecs, holdTicks = 10, 25
	tests := []struct {
		name  string
		reset bool
	}{
		{"with resets the tree survives", true},
		{"without resets it times out", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ticks, nexts, held counter[string]
			b := gale.NewTopologyBuilder()
			b.SetSpout("src", func() gale.Spout {
				s := seqSpout(1)().(*funcSpout)
				next := s.next
				s.next = func(s *funcSpout) { nexts.inc("src"); next(s) }
				return s
			}, 1)
			b.SetBolt("slow", func() gale.Bolt {
				return &funcBolt{
					execute: func(b *funcBolt, in *gale.Tuple) {
						if !in.IsTick() {
							b.held = append(b.held, in)
							held.inc("slow")
							return
						}
						b.n++
						for _, h := range b.held {
							if b.n >= holdTicks {
								b.Collector.Ack(h)
							} else if tc.reset {
								b.Collector.ResetTimeout(h)
							}
						}
						if b.n >= holdTicks {
							b.held = nil
						}
						ticks.inc("slow")
					},
				}
			}, 1).ShuffleGrouping("src").AddConfiguration(gale.TopologyTickTupleFreqSecs, 1)
			_, rec, clk := startLocal(t, build(t, b), gale.Config{gale.TopologyMessageTimeoutSecs: timeoutSecs}, nil)
			testutil.Eventually(t, 10*time.Second, "the bolt to hold the tuple", func() bool { return held.get("slow") == 1 })
			for i := 1; i <= holdTicks; i++ {
				n := nexts.get("src")
				clk.Advance(time.Second)
				testutil.Eventually(t, 10*time.Second, fmt.Sprintf("tick %d", i), func() bool {
					return ticks.get("slow") == i && nexts.get("src") >= n+2
				})
			}
			T := timeoutSecs * time.Second
			if tc.reset {
				testutil.Eventually(t, 10*time.Second, "the ack", func() bool { return len(rec.Acked("src")) == 1 })
				if f := rec.Failed("src"); len(f) > 0 {
					t.Fatalf("failed %v, want the tree kept alive", f)
				}
				if at := rec.ackAt["src"][0].Sub(testEpoch); at < holdTicks*time.Second {
					t.Errorf("tree completed after %s, want ≥ %s", at, holdTicks*time.Second)
				}
				return
			}
			f := rec.Failed("src")
			if len(f) != 1 || !errors.Is(f[0].reason, gale.ErrTimeout) {
				t.Fatalf("failed %v, acked %v; want message 0 failed with ErrTimeout", f, rec.Acked("src"))
			}
			if at := f[0].at.Sub(testEpoch); at < T || at > T*11/10+time.Second {
				t.Errorf("timed out after %s, want between %s and %s", at, T, T*11/10+time.Second)
			}
			if a := rec.Acked("src"); len(a) > 0 {
				t.Errorf("acked %v after it timed out, want no Ack", a)
			}
		})
	}
}

// TestTickTuples: bolts get tick tuples at the topology's
// topology.tick.tuple.freq.secs or their own override, on every task, from
// __system on stream __tick; a bolt that unsets the key gets none.
func TestTickTuples(t *testing.T) {
	const seconds = 11
	var ticks, hellos counter[int] // by task
	var bad list[string]
	tickBolt := func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			if in.SourceComponent() == "src" {
				hellos.inc(b.tc.TaskID())
				return
			}
			freq, _ := b.tc.Config().Int(gale.TopologyTickTupleFreqSecs)
			if !in.IsTick() || in.SourceComponent() != gale.SystemComponent || in.SourceStream() != gale.TickStream ||
				in.Len() != 1 || in.Value(0) != freq {
				bad.add(fmt.Sprintf("%s task %d got %v (tick %t), want a tick tuple from %s:%s with value %d",
					b.tc.ComponentID(), b.tc.TaskID(), in, in.IsTick(), gale.SystemComponent, gale.TickStream, freq))
			}
			ticks.inc(b.tc.TaskID())
		}}
	}
	b := gale.NewTopologyBuilder()
	// The spout says hello once to every task: a task that got it is
	// running, so its tick timer exists and counts from the start.
	b.SetSpout("src", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("x") },
			next: func(s *funcSpout) {
				if s.n == 0 {
					s.n++
					s.Collector.Emit(nil, "hello")
				}
			},
		}
	}, 1)
	b.SetBolt("global", tickBolt, 2).AllGrouping("src")
	b.SetBolt("override", tickBolt, 1).SetNumTasks(2).AllGrouping("src").AddConfiguration(gale.TopologyTickTupleFreqSecs, 5)
	b.SetBolt("off", tickBolt, 1).AllGrouping("src").AddConfiguration(gale.TopologyTickTupleFreqSecs, nil)
	lt, _, clk := startLocal(t, build(t, b), gale.Config{gale.TopologyTickTupleFreqSecs: 2}, nil)
	testutil.Eventually(t, 10*time.Second, "every task to start", func() bool { return len(hellos.snapshot()) == 5 })
	freqs := map[string]int{"global": 2, "override": 5, "off": 0}
	want := func(s int) map[int]int {
		m := map[int]int{}
		for comp, f := range freqs {
			for _, task := range bridge.LocalOf(lt).TaskIDs(comp) {
				if f > 0 {
					m[task] = s / f
				} else {
					m[task] = 0
				}
			}
		}
		return m
	}
	equal := func(got, want map[int]int) bool {
		for task, n := range want {
			if got[task] != n {
				return false
			}
		}
		return true
	}
	for s := 1; s <= seconds; s++ {
		clk.Advance(time.Second)
		w := want(s)
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("ticks after %ds: want %v", s, w), func() bool { return equal(ticks.snapshot(), w) })
	}
	if got, w := ticks.snapshot(), want(seconds); !equal(got, w) || len(got) != 4 {
		t.Errorf("ticks per task %v, want %v", got, w)
	}
	for _, e := range bad.all() {
		t.Error(e)
	}
}

// TestPanicFailsTheTuple: under the default panic policy a bolt's panic
// fails only the tuple it was executing, with a *gale.PanicError holding
// the stack; a spout's panic in NextTuple is recovered and it goes on.
func TestPanicFailsTheTuple(t *testing.T) {
	const n, bad = 20, 3
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		panicked := false
		s := seqSpout(n)().(*funcSpout)
		next := s.next
		s.next = func(s *funcSpout) {
			if s.n == 7 && !panicked {
				panicked = true
				panic("spout hiccup")
			}
			next(s)
		}
		return s
	}, 1)
	b.SetBolt("bolt", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
			if in.GetInt(0) == bad {
				panic(fmt.Sprintf("cannot handle %d", bad))
			}
			b.Collector.Ack(in)
		}}
	}, 1).ShuffleGrouping("src")
	res := complete(t, build(t, b), galetest.Options{})

	var want []int
	for i := range n {
		if i != bad {
			want = append(want, i)
		}
	}
	if got := ints(res.Acked("src")); !slices.Equal(got, want) {
		t.Errorf("acked %v, want every message but %d", got, bad)
	}
	f := res.Failed("src")
	if len(f) != 1 || f[0].MsgID != bad {
		t.Fatalf("failed %v, want only message %d", f, bad)
	}
	var pe *gale.PanicError
	if !errors.As(f[0].Reason, &pe) {
		t.Fatalf("reason %v (%T) does not wrap a *gale.PanicError", f[0].Reason, f[0].Reason)
	}
	var fe *gale.FailedError
	if !errors.As(f[0].Reason, &fe) || fe.Component != "bolt" {
		t.Errorf("reason %v is not a FailedError from bolt", f[0].Reason)
	}
	if pe.Component != "bolt" || pe.Value != fmt.Sprintf("cannot handle %d", bad) {
		t.Errorf("PanicError names %s with value %v, want bolt and the panic value", pe.Component, pe.Value)
	}
	if !strings.Contains(pe.Stack, "TestPanicFailsTheTuple") {
		t.Errorf("PanicError stack does not show the panicking function:\n%s", pe.Stack)
	}
}

// TestAutoPendingRaisedBeforeFirstTick: with topology.max.spout.pending
// unset, a spout starts at the automatic limit's floor (100 trees per
// task). When it is held there while its trees complete quickly, the limit
// is raised from what completed as soon as 2 ms have passed, not at the
// first tune tick 250 ms in: a spout paced at a high rate must not build a
// backlog in its first quarter second.
func TestAutoPendingRaisedBeforeFirstTick(t *testing.T) {
	var mu sync.Mutex
	var stop bool
	maxPending := 0 // most trees pending before an emit
	b := gale.NewTopologyBuilder()
	b.SetSpout("src", func() gale.Spout {
		return &funcSpout{
			declare: func(d gale.OutputDeclarer) { d.Declare("id") },
			next: func(s *funcSpout) {
				mu.Lock()
				defer mu.Unlock()
				if stop {
					return
				}
				maxPending = max(maxPending, s.Collector.Pending())
				if _, err := s.Collector.Emit(s.n, s.n); err != nil {
					panic(err)
				}
				s.n++
			},
		}
	}, 1)
	b.SetBolt("ack", func() gale.Bolt {
		return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) { b.Collector.Ack(in) }}
	}, 1).ShuffleGrouping("src")
	_, rec, clk := startLocal(t, build(t, b), nil, nil)
	t.Cleanup(func() {
		mu.Lock()
		stop = true
		mu.Unlock()
	})
	peak := func() int {
		mu.Lock()
		defer mu.Unlock()
		return maxPending
	}

	// No time passes: the spout cycles at the floor.
	testutil.Eventually(t, 10*time.Second, "1,000 trees acked", func() bool { return len(rec.Acked("src")) >= 1000 })
	if p := peak(); p != 99 {
		t.Fatalf("before any time passed, most trees pending before an emit = %d, want 99 (held at the floor of 100)", p)
	}
	// 20 ms later, far from the 250 ms tune tick, the next capped round
	// raises the limit from the trees completed meanwhile.
	clk.Advance(20 * time.Millisecond)
	testutil.Eventually(t, 10*time.Second, "more than 100 trees in flight", func() bool { return peak() >= 100 })
	if f := rec.Failed("src"); len(f) > 0 {
		t.Errorf("failed %v, want none", f)
	}
}
