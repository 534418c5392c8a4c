package gale_test

import (
	"fmt"
	"runtime/debug"
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
			complete(t, build(t, b), galetest.Options{Config: conf})

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
