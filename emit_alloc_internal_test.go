package gale

import "testing"

// TestEmitStringAllocatesNoBox checks what EmitString is for: a bolt
// emitting one-string tuples allocates once per chunk of values and tuples
// (box.Strings, tupleSlab), where Emit allocates each string's box.
func TestEmitStringAllocatesNoBox(t *testing.T) {
	for _, acking := range []bool{false, true} {
		r := newEmitRig(t, acking)
		coll := r.split.coll
		const n = 256
		emit := func(f func(i int)) float64 {
			return testing.AllocsPerRun(20, func() {
				for i := range n {
					f(i)
					if i&63 == 63 {
						r.drain()
					}
				}
			})
		}
		str := emit(func(i int) { coll.EmitString(r.anchor, benchWords[i&7][i&1:]) })
		conv := emit(func(i int) { coll.Emit(r.anchor, benchWords[i&7][i&1:]) })
		// Once per chunk is 1 or 2 here; the race detector's build adds a
		// few, never one a call.
		if str > n/32 {
			t.Errorf("acking %v: %d EmitString calls allocated %.1f times, want at most %d", acking, n, str, n/32)
		}
		if conv < n/2 {
			t.Errorf("acking %v: %d Emit calls allocated %.1f times; the comparison assumes Emit boxes each string", acking, n, conv)
		}
	}
}
