package galetest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// bolt is a Bolt made of a function; a nil execute acks.
type bolt struct {
	gale.BaseBolt
	fields  []string
	execute func(b *bolt, in *gale.Tuple)
	held    []*gale.Tuple
}

func (b *bolt) DeclareOutputFields(d gale.OutputDeclarer) {
	if b.fields != nil {
		d.Declare(b.fields...)
	}
}

func (b *bolt) Execute(in *gale.Tuple) {
	if b.execute == nil {
		b.Collector.Ack(in)
		return
	}
	b.execute(b, in)
}

// fixed returns a FixedSpout factory emitting n one-field tuples 0..n-1.
func fixed(n int) func() gale.Spout {
	vals := make([]gale.Values, n)
	for i := range vals {
		vals[i] = gale.Values{i}
	}
	return func() gale.Spout { return &galetest.FixedSpout{Fields: []string{"n"}, Values: vals} }
}

func ints(ids []any) []int {
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		out = append(out, id.(int))
	}
	slices.Sort(out)
	return out
}

func rangeInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func run(t *testing.T, b *gale.TopologyBuilder, opts galetest.Options) (*galetest.Result, error) {
	t.Helper()
	topo, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	opts.Logger = testLogger(t)
	if opts.Timeout == 0 {
		opts.Timeout = 20 * time.Second
	}
	return galetest.Complete(context.Background(), topo, opts)
}

// TestCompleteTimesOut: trees a bolt never acks fail with ErrTimeout once
// the simulated clock passes topology.message.timeout.secs T, between T and
// 1.1T (plus one timeout tick of slack).
func TestCompleteTimesOut(t *testing.T) {
	for _, secs := range []int{10, 30} {
		t.Run(fmt.Sprintf("T=%ds", secs), func(t *testing.T) {
			b := gale.NewTopologyBuilder()
			b.SetSpout("s", fixed(5), 1)
			b.SetBolt("sink", func() gale.Bolt {
				return &bolt{execute: func(b *bolt, in *gale.Tuple) { b.held = append(b.held, in) }}
			}, 2).ShuffleGrouping("s")
			res, err := run(t, b, galetest.Options{Config: gale.Config{gale.TopologyMessageTimeoutSecs: secs}})
			if err != nil {
				t.Fatal(err)
			}
			if a := res.Acked("s"); len(a) > 0 {
				t.Errorf("acked %v, want none", a)
			}
			f := res.Failed("s")
			var ids []any
			for _, x := range f {
				ids = append(ids, x.MsgID)
				if !errors.Is(x.Reason, gale.ErrTimeout) {
					t.Errorf("msg %v failed with %v, want ErrTimeout", x.MsgID, x.Reason)
				}
			}
			if got := ints(ids); !slices.Equal(got, rangeInts(5)) {
				t.Errorf("failed %v, want 0..4 once each", got)
			}
			T := time.Duration(secs) * time.Second
			tick := T / 10
			if res.Elapsed < T || res.Elapsed > T*11/10+tick {
				t.Errorf("Elapsed %s, want between %s and %s", res.Elapsed, T, T*11/10+tick)
			}
		})
	}
}

// TestCompleteNoTimePassesWhenAllAcked: a topology that acks everything
// completes without moving the simulated clock.
func TestCompleteNoTimePassesWhenAllAcked(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", fixed(100), 2)
	b.SetBolt("echo", func() gale.Bolt {
		return &bolt{fields: []string{"n"}, execute: func(b *bolt, in *gale.Tuple) {
			b.Collector.Emit(in, in.Value(0))
			b.Collector.Ack(in)
		}}
	}, 3).ShuffleGrouping("s")
	b.SetBolt("sink", func() gale.Bolt { return &bolt{} }, 2).ShuffleGrouping("echo")
	res, err := run(t, b, galetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The two spout tasks share 0..99 between them.
	if got := ints(res.Acked("s")); !slices.Equal(got, rangeInts(100)) {
		t.Errorf("acked %d ids, want each of 0..99 once", len(got))
	}
	if len(res.Emitted("echo")) != 100 || len(res.Emitted("s")) != 100 {
		t.Errorf("emitted %d by s and %d by echo, want 100 each", len(res.Emitted("s")), len(res.Emitted("echo")))
	}
	if res.Elapsed != 0 {
		t.Errorf("Elapsed %s, want 0", res.Elapsed)
	}
}

// TestCompleteSources: Sources replaces a spout with fixed input; bad
// sources are errors naming the spout.
func TestCompleteSources(t *testing.T) {
	newBuilder := func() *gale.TopologyBuilder {
		b := gale.NewTopologyBuilder()
		b.SetSpout("s", fixed(0), 1)
		b.SetBolt("sink", func() gale.Bolt { return &bolt{} }, 1).ShuffleGrouping("s")
		return b
	}
	tests := []struct {
		name    string
		sources map[string][]gale.Values
		wantErr string
	}{
		{"fed", map[string][]gale.Values{"s": {{"a"}, {"b"}}}, ""},
		{"unknown spout", map[string][]gale.Values{"ghost": {{"a"}}}, `"ghost"`},
		{"wrong arity", map[string][]gale.Values{"s": {{"a"}, {"b", "c"}}}, `"s"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := run(t, newBuilder(), galetest.Options{Sources: tc.sources})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Emitted("s"); !slices.EqualFunc(got, tc.sources["s"], slices.Equal) {
				t.Errorf("spout emitted %v, want %v", got, tc.sources["s"])
			}
			if got := ints(res.Acked("s")); !slices.Equal(got, []int{0, 1}) {
				t.Errorf("acked %v, want [0 1]", got)
			}
		})
	}
}

// TestCompleteSourcesParallelSpout: a spout with several tasks emits each
// source value once in all, split across its tasks (Storm's
// FixedTupleSpout), and every value's tree is acked once.
func TestCompleteSourcesParallelSpout(t *testing.T) {
	for _, tc := range []struct{ tasks, values int }{{5, 2}, {5, 12}, {3, 3}} {
		t.Run(fmt.Sprintf("%d_tasks_%d_values", tc.tasks, tc.values), func(t *testing.T) {
			b := gale.NewTopologyBuilder()
			b.SetSpout("s", fixed(0), tc.tasks)
			b.SetBolt("double", func() gale.Bolt {
				return &bolt{fields: []string{"n"}, execute: func(b *bolt, in *gale.Tuple) {
					b.Collector.Emit(in, 2*in.GetInt(0))
					b.Collector.Ack(in)
				}}
			}, 2).ShuffleGrouping("s")
			src := make([]gale.Values, tc.values)
			var wantDoubled []int
			for i := range src {
				src[i] = gale.Values{100 + i}
				wantDoubled = append(wantDoubled, 2*(100+i))
			}
			res, err := run(t, b, galetest.Options{Sources: map[string][]gale.Values{"s": src}})
			if err != nil {
				t.Fatal(err)
			}
			var emitted []int
			for _, v := range res.Emitted("s") {
				emitted = append(emitted, v[0].(int))
			}
			slices.Sort(emitted)
			var want []int
			for _, v := range src {
				want = append(want, v[0].(int))
			}
			if !slices.Equal(emitted, want) {
				t.Errorf("spout emitted %v, want each of %v once", emitted, want)
			}
			if got := ints(res.Acked("s")); !slices.Equal(got, rangeInts(tc.values)) {
				t.Errorf("acked %v, want each of 0..%d once", got, tc.values-1)
			}
			var doubled []int
			for _, v := range res.Emitted("double") {
				doubled = append(doubled, v[0].(int))
			}
			slices.Sort(doubled)
			if !slices.Equal(doubled, wantDoubled) {
				t.Errorf("bolt emitted %v, want %v", doubled, wantDoubled)
			}
			if f := res.Failed("s"); len(f) > 0 {
				t.Errorf("failed %v, want none", f)
			}
		})
	}
}

// TestCompleteHorizon: with a horizon, Complete runs that much simulated
// time, the clock driving tick tuples, even once no tree is pending;
// without one it returns as soon as the input is done.
func TestCompleteHorizon(t *testing.T) {
	for _, tc := range []struct {
		horizon   time.Duration
		wantTicks int
	}{{0, 0}, {60 * time.Second, 6}, {65 * time.Second, 6}, {5 * time.Second, 0}} {
		t.Run(fmt.Sprint(tc.horizon), func(t *testing.T) {
			b := gale.NewTopologyBuilder()
			b.SetSpout("s", fixed(3), 1)
			b.SetBolt("ticker", func() gale.Bolt {
				return &bolt{fields: []string{"secs"}, execute: func(b *bolt, in *gale.Tuple) {
					if in.IsTick() {
						b.Collector.Emit(nil, in.Value(0))
						return
					}
					b.Collector.Ack(in)
				}}
			}, 2).ShuffleGrouping("s").AddConfiguration(gale.TopologyTickTupleFreqSecs, 10)
			res, err := run(t, b, galetest.Options{Horizon: tc.horizon})
			if err != nil {
				t.Fatal(err)
			}
			if got := ints(res.Acked("s")); !slices.Equal(got, rangeInts(3)) {
				t.Errorf("acked %v, want 0..2", got)
			}
			// Each of the two tasks sees every tick.
			if got := len(res.Emitted("ticker")); got != 2*tc.wantTicks {
				t.Errorf("%d ticks seen by 2 tasks, want %d each", got, tc.wantTicks)
			}
			if res.Elapsed != tc.horizon {
				t.Errorf("Elapsed %s, want the horizon, %s", res.Elapsed, tc.horizon)
			}
		})
	}
}

// TestCompleteKillWorker: under the kill-worker policy a bolt's panic makes
// Complete return a *gale.PanicError.
func TestCompleteKillWorker(t *testing.T) {
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", fixed(10), 1)
	b.SetBolt("bad", func() gale.Bolt {
		return &bolt{execute: func(b *bolt, in *gale.Tuple) {
			if in.GetInt(0) == 4 {
				panic("four")
			}
			b.Collector.Ack(in)
		}}
	}, 1).ShuffleGrouping("s")
	_, err := run(t, b, galetest.Options{Config: gale.Config{gale.TopologyComponentPanicPolicy: gale.PanicPolicyKillWorker}})
	var pe *gale.PanicError
	if !errors.As(err, &pe) || pe.Component != "bad" {
		t.Fatalf("Complete returned %v, want a *gale.PanicError from bolt bad", err)
	}
}

// TestCompleteCappedSpout: a spout at topology.max.spout.pending whose
// trees complete must go on emitting; Complete must not return before it is
// exhausted. The bolt acks each batch once it holds maxPending tuples.
func TestCompleteCappedSpout(t *testing.T) {
	const n, maxPending = 30, 3
	for range 20 {
		b := gale.NewTopologyBuilder()
		b.SetSpout("s", fixed(n), 1).SetMaxSpoutPending(maxPending)
		b.SetBolt("batch", func() gale.Bolt {
			return &bolt{execute: func(b *bolt, in *gale.Tuple) {
				b.held = append(b.held, in)
				if len(b.held) == maxPending {
					for _, h := range b.held {
						b.Collector.Ack(h)
					}
					b.held = b.held[:0]
				}
			}}
		}, 1).ShuffleGrouping("s")
		res, err := run(t, b, galetest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ints(res.Acked("s")); !slices.Equal(got, rangeInts(n)) {
			t.Fatalf("acked %v, failed %v; want all of 0..%d acked", got, res.Failed("s"), n-1)
		}
	}
}

// TestCompleteTickDrivenAcks: a bolt that acks what it holds on every tick
// (1s) never lets a tree reach the 30s timeout, however Complete moves the
// simulated clock.
func TestCompleteTickDrivenAcks(t *testing.T) {
	const n = 12
	b := gale.NewTopologyBuilder()
	b.SetSpout("s", fixed(n), 1).SetMaxSpoutPending(3)
	b.SetBolt("hold", func() gale.Bolt {
		return &bolt{execute: func(b *bolt, in *gale.Tuple) {
			if !in.IsTick() {
				b.held = append(b.held, in)
				return
			}
			for _, h := range b.held {
				b.Collector.Ack(h)
			}
			b.held = b.held[:0]
		}}
	}, 1).ShuffleGrouping("s").AddConfiguration(gale.TopologyTickTupleFreqSecs, 1)
	res, err := run(t, b, galetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ints(res.Acked("s")); !slices.Equal(got, rangeInts(n)) {
		t.Fatalf("acked %v, failed %v; want all of 0..%d acked", got, res.Failed("s"), n-1)
	}
	if res.Elapsed > 30*time.Second {
		t.Errorf("Elapsed %s for %d batches acked on 1s ticks, want well under the 30s timeout", res.Elapsed, n/3)
	}
}
