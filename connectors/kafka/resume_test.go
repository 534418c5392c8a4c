package kafka

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/testutil"
)

// TestResumeMetadataRoundTrip: for random trackers, the metadata of a
// commit at the commit point says exactly which records from it on may
// be skipped: every finished one up to the newest tracked, never an open
// one; when the open offsets do not fit, the range ends at the first
// left out, and the metadata stays under Kafka's 4096 bytes.
func TestResumeMetadataRoundTrip(t *testing.T) {
	seed := testutil.Seed(t)
	rnd := rand.New(rand.NewPCG(seed, 1))
	tp := topicPartition{"orders.v1", 7}
	for round := range 200 {
		tr := newOffsetTracker()
		n := 1 + rnd.IntN(20000)
		openShare := rnd.Float64()
		o := int64(rnd.IntN(1000))
		var offs []int64
		open := map[int64]bool{}
		for range n {
			tr.track(o)
			offs = append(offs, o)
			open[o] = true
			o += 1 + int64(rnd.IntN(4)/3)
		}
		for _, x := range offs {
			if rnd.Float64() > openShare {
				tr.ack(x)
				delete(open, x)
			}
		}
		meta := resumeMetadata(tp, &tr)
		from, _ := tr.commitPoint()
		if len(open) == 0 {
			if meta != "" {
				t.Fatalf("round %d: metadata %q with nothing open", round, meta)
			}
			continue
		}
		if len(meta) > 4096 {
			t.Fatalf("round %d: %d bytes of metadata for %d open, want ≤ 4096", round, len(meta), len(open))
		}
		gotTP, r, err := parseResume(meta, from)
		if err != nil || gotTP != tp {
			t.Fatalf("round %d: parse %q: %v, %v", round, meta, gotTP, err)
		}
		if r.from != from || r.to > tr.next || r.to <= from {
			t.Fatalf("round %d: range [%d, %d), want from %d to at most %d", round, r.from, r.to, from, tr.next)
		}
		for _, x := range offs {
			if x < r.from {
				continue
			}
			want := x < r.to && !open[x]
			if skip := r.skip(x); skip != want {
				t.Fatalf("round %d: offset %d (open %v) skip %v in [%d, %d)", round, x, open[x], skip, r.from, r.to)
			}
		}
		if r.to < tr.next && !open[r.to] {
			t.Fatalf("round %d: the range ends at %d, not an open offset", round, r.to)
		}
	}
}

// TestParseResumeRefuses: metadata the spout did not write, or torn, is
// not taken for a range.
func TestParseResumeRefuses(t *testing.T) {
	tr := newOffsetTracker()
	for o := int64(0); o < 10; o++ {
		tr.track(o)
	}
	tr.ack(1)
	good := resumeMetadata(topicPartition{"t", 0}, &tr)
	for _, m := range []string{"", "some other client's", "gale1:t/0", "gale1:t/x:AAA", "gale1:t/0:!!", good[:len(good)-2],
		strings.Replace(good, "gale1:", "gale2:", 1)} {
		if _, r, err := parseResume(m, 0); err == nil {
			t.Errorf("parseResume(%q) = %+v, want an error", m, r)
		}
	}
	if _, r, err := parseResume(good, 0); err != nil || !r.skip(1) || r.skip(0) || r.skip(2) || r.skip(10) {
		t.Errorf("parseResume(%q) = %+v, %v; want 1 skipped, 0, 2 and 10 not", good, r, err)
	}
}
