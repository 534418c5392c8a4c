package gale_test

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/gale-stream/gale"
	"github.com/gale-stream/gale/galetest"
)

// TestTupleReuse runs tuples through bolts with and without
// topology.tuple.reuse: with it, the tuples a bolt acked come back as
// later tuples (few distinct addresses), every value still arrives intact,
// and tuples a bolt keeps without acking are never reused.
func TestTupleReuse(t *testing.T) {
	// No collections during the runs: an address seen twice is then reuse,
	// not the GC freeing a block and the allocator handing it out again.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))

	const n = 20000
	for _, tt := range []struct {
		reuse, acking bool
	}{{true, true}, {true, false}, {false, true}} {
		t.Run(fmt.Sprintf("reuse=%v,acking=%v", tt.reuse, tt.acking), func(t *testing.T) {
			var (
				addrs       = map[uintptr]bool{}
				seen        = make([]int, n)
				held        []*gale.Tuple
				heldWant    []int
				heldCorrupt int
			)
			b := gale.NewTopologyBuilder()
			b.SetSpout("src", seqSpout(n), 1)
			b.SetBolt("relay", func() gale.Bolt {
				return &funcBolt{
					declare: func(d gale.OutputDeclarer) { d.Declare("seq", "copy") },
					execute: func(b *funcBolt, in *gale.Tuple) {
						v := in.GetInt(0)
						b.Collector.Emit(in, v, v)
						b.Collector.Ack(in)
					},
				}
			}, 1).ShuffleGrouping("src").AddConfiguration(gale.TopologyTupleReuse, tt.reuse)
			b.SetBolt("check", func() gale.Bolt {
				return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
					addrs[uintptr(unsafe.Pointer(in))] = true
					v, c := in.GetInt(0), in.GetInt(1)
					if v >= 0 && v < n && v == c {
						seen[v]++
					}
					b.Collector.Ack(in)
				}}
			}, 1).ShuffleGrouping("relay").AddConfiguration(gale.TopologyTupleReuse, tt.reuse)
			b.SetBolt("hold", func() gale.Bolt {
				return &funcBolt{execute: func(b *funcBolt, in *gale.Tuple) {
					if v := in.GetInt(0); v%100 == 0 {
						held, heldWant = append(held, in), append(heldWant, v) // kept, never acked
						return
					}
					b.Collector.Ack(in)
				}}
			}, 1).ShuffleGrouping("relay").AddConfiguration(gale.TopologyTupleReuse, tt.reuse)
			conf := gale.Config{}
			if !tt.acking {
				conf[gale.TopologyAckerExecutors] = 0
			}
			complete(t, build(t, b), galetest.Options{Config: conf, RecycleTuples: true})

			intact := func(h *gale.Tuple, want int) (ok bool) {
				defer func() { _ = recover() }() // a zeroed tuple has no stream
				return h.GetInt(0) == want && h.GetInt(1) == want
			}
			for i, h := range held {
				if !intact(h, heldWant[i]) {
					heldCorrupt++
				}
			}
			for v, k := range seen {
				if k != 1 {
					t.Fatalf("value %d reached check %d times intact, want once", v, k)
				}
			}
			if len(held) != n/100 || heldCorrupt > 0 {
				t.Errorf("hold kept %d tuples, %d of them changed after Execute; want %d, none changed", len(held), heldCorrupt, n/100)
			}
			switch {
			case tt.reuse && len(addrs) > n/2:
				t.Errorf("check saw %d distinct tuple addresses for %d tuples, want reuse to bring them well under %d", len(addrs), n, n/2)
			case !tt.reuse && len(addrs) != n:
				t.Errorf("check saw %d distinct tuple addresses for %d tuples without reuse, want %d", len(addrs), n, n)
			}
		})
	}
}

// TestTupleReuseCheck: under galetest, a bolt with topology.tuple.reuse
// that uses a tuple after acking it is caught (bridge.Hooks.
// CheckTupleReuse): reading the tuple or anchoring on it panics naming the
// bolt, and a kept Values slice shows placeholders. The same bolt without
// reuse runs clean.
func TestTupleReuseCheck(t *testing.T) {
	const n = 50
	misuses := []struct {
		name string
		use  func(b *funcBolt, in, prev *gale.Tuple, prevVals []any)
	}{
		{"reads the tuple", func(b *funcBolt, in, prev *gale.Tuple, _ []any) {
			b.Collector.Emit(in, fmt.Sprint(prev.GetInt(0)))
		}},
		{"anchors on the tuple", func(b *funcBolt, in, prev *gale.Tuple, _ []any) {
			b.Collector.EmitStream(gale.DefaultStream, []*gale.Tuple{in, prev}, fmt.Sprint(in.GetInt(0)-1))
		}},
		{"keeps the values", func(b *funcBolt, in, _ *gale.Tuple, prevVals []any) {
			b.Collector.Emit(in, fmt.Sprint(prevVals[0]))
		}},
	}
	for _, m := range misuses {
		for _, reuse := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/reuse=%v", m.name, reuse), func(t *testing.T) {
				b := gale.NewTopologyBuilder()
				b.SetSpout("src", seqSpout(n), 1)
				b.SetBolt("relay", func() gale.Bolt {
					var prev *gale.Tuple
					var prevVals []any
					return &funcBolt{
						declare: func(d gale.OutputDeclarer) { d.Declare("prev") },
						execute: func(b *funcBolt, in *gale.Tuple) {
							if prev != nil {
								m.use(b, in, prev, prevVals)
							}
							prev, prevVals = in, in.Values()
							b.Collector.Ack(in)
						},
					}
				}, 1).ShuffleGrouping("src").AddConfiguration(gale.TopologyTupleReuse, reuse)
				// Quiet: every misuse logs a panic with its stack.
				res := complete(t, build(t, b), galetest.Options{Logger: slog.New(slog.DiscardHandler)})

				emitted := res.Emitted("relay")
				if !reuse {
					if got := ints(res.Acked("src")); len(got) != n || len(res.Failed("src")) != 0 {
						t.Fatalf("without reuse: acked %d, failed %v; want all %d acked", len(got), res.Failed("src"), n)
					}
					for i, v := range emitted {
						if want := fmt.Sprint(i); v[0] != want {
							t.Fatalf("without reuse: emitted %v at %d, want %s", v[0], i, want)
						}
					}
					return
				}
				if m.name == "keeps the values" {
					// Nothing panics, but every value the bolt read from
					// an acked tuple is a placeholder naming it.
					if len(emitted) != n-1 {
						t.Fatalf("emitted %d tuples, want %d", len(emitted), n-1)
					}
					for _, v := range emitted {
						if s := v[0].(string); !strings.Contains(s, `tuple reused: bolt "relay"`) {
							t.Fatalf("emitted %q from a kept Values slice, want the reuse placeholder", s)
						}
					}
					return
				}
				failed := res.Failed("src")
				if len(failed) != n-1 {
					t.Fatalf("failed %d messages, want %d (all but the first)", len(failed), n-1)
				}
				for _, f := range failed {
					var pe *gale.PanicError
					if !errors.As(f.Reason, &pe) || pe.Component != "relay" {
						t.Fatalf("message %v failed with %v, want a panic in relay", f.MsgID, f.Reason)
					}
					if s := fmt.Sprint(pe.Value); !strings.Contains(s, `bolt "relay" used a tuple after acking or failing it`) {
						t.Fatalf("panic %q does not explain the misuse", s)
					}
				}
			})
		}
	}
}
