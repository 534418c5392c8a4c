package kafka

import (
	"math/rand/v2"
	"testing"

	"github.com/gale-stream/gale/internal/testutil"
)

func TestOffsetTrackerCommitPoint(t *testing.T) {
	type step struct {
		track []int64
		ack   []int64
		want  int64 // commit point; -1: none yet
		open  int   // not acked
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"nothing tracked has no commit point", []step{{want: -1}}},
		{"tracked, none acked: the first offset", []step{{track: []int64{5, 6, 7}, want: 5, open: 3}}},
		{"in-order acks move the point", []step{
			{track: []int64{5, 6, 7}, ack: []int64{5}, want: 6, open: 2},
			{ack: []int64{6, 7}, want: 8, open: 0},
		}},
		{"an ack behind a held-back one holds the point", []step{
			{track: []int64{0, 1, 2, 3}, ack: []int64{1, 2, 3}, want: 0, open: 1},
			{ack: []int64{0}, want: 4, open: 0},
		}},
		{"gaps in offsets are not waited for", []step{
			{track: []int64{10, 13, 20}, ack: []int64{10, 13}, want: 20, open: 1},
			{ack: []int64{20}, want: 21},
		}},
		{"tracking after a drained prefix", []step{
			{track: []int64{0, 1}, ack: []int64{0, 1}, want: 2},
			{track: []int64{2, 3}, ack: []int64{3}, want: 2, open: 1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newOffsetTracker()
			for i, s := range tc.steps {
				for _, o := range s.track {
					if !tr.track(o) {
						t.Fatalf("step %d: track(%d) refused", i, o)
					}
				}
				for _, o := range s.ack {
					if !tr.ack(o) {
						t.Fatalf("step %d: ack(%d) refused", i, o)
					}
				}
				got, ok := tr.commitPoint()
				if !ok {
					got = -1
				}
				if got != s.want || tr.openCount() != s.open {
					t.Errorf("step %d: commit point %d, open %d; want %d, %d", i, got, tr.openCount(), s.want, s.open)
				}
			}
		})
	}
}

func TestOffsetTrackerRefuses(t *testing.T) {
	tr := newOffsetTracker()
	tr.track(5)
	if tr.track(4) {
		t.Error("track(4) after 5 accepted; offsets of a partition come in order")
	}
	if tr.ack(6) {
		t.Error("ack(6) of an offset never tracked accepted")
	}
	tr.track(6)
	if !tr.ack(6) || tr.ack(6) {
		t.Error("second ack(6) accepted")
	}
	if p, _ := tr.commitPoint(); p != 5 {
		t.Errorf("commit point %d, want 5", p)
	}
}

// TestOffsetTrackerRandom acks a random order of offsets with random gaps
// and checks, after every ack, that the commit point is the offset after
// the longest acked prefix and that memory stays proportional to the
// offsets not acked, not to the span past the commit point.
func TestOffsetTrackerRandom(t *testing.T) {
	seed := testutil.Seed(t)
	rnd := rand.New(rand.NewPCG(seed, 0))
	for round := 0; round < 50; round++ {
		tr := newOffsetTracker()
		var offs []int64
		o := int64(rnd.IntN(100))
		acked := map[int64]bool{}
		var pending []int64
		for i := 0; i < 2000; i++ {
			if len(pending) == 0 || rnd.IntN(3) > 0 {
				tr.track(o)
				offs = append(offs, o)
				pending = append(pending, o)
				o += 1 + int64(rnd.IntN(3)/2) // an occasional gap
				continue
			}
			j := rnd.IntN(len(pending))
			a := pending[j]
			pending[j] = pending[len(pending)-1]
			pending = pending[:len(pending)-1]
			if !tr.ack(a) {
				t.Fatalf("round %d: ack(%d) refused", round, a)
			}
			acked[a] = true
			want := offs[len(offs)-1] + 1 // all acked: after the last tracked
			for _, x := range offs {
				if !acked[x] {
					want = x
					break
				}
			}
			open := len(pending)
			if got, _ := tr.commitPoint(); got != want || tr.openCount() != open {
				t.Fatalf("round %d: commit point %d, open %d; want %d, %d", round, got, tr.openCount(), want, open)
			}
			if len(tr.offs)-tr.head > 2*open+256 {
				t.Fatalf("round %d: %d offsets kept for %d open", round, len(tr.offs)-tr.head, open)
			}
		}
	}
}

// BenchmarkOffsetTracker tracks offsets in blocks of 64 and acks each
// block in reverse, so every ack but the last waits behind the first.
func BenchmarkOffsetTracker(b *testing.B) {
	b.ReportAllocs()
	tr := newOffsetTracker()
	const block = 64
	var off int64
	for i := 0; i < b.N; i += block {
		for j := int64(0); j < block; j++ {
			tr.track(off + j)
		}
		for j := int64(block - 1); j >= 0; j-- {
			tr.ack(off + j)
		}
		off += block
	}
}
