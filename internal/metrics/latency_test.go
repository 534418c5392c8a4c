package metrics

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLatencyBuckets: the buckets tile the range without gaps or
// overlaps, each latency falls in the bucket whose range holds it, and a
// bucket is at most 1/8 of its lower bound wide.
func TestLatencyBuckets(t *testing.T) {
	next := int64(0)
	for b := range LatencyBuckets {
		low, width := latencyRange(b)
		if low != next {
			t.Fatalf("bucket %d starts at %d µs, want %d (the end of the one before)", b, low, next)
		}
		if b >= 8 && width*8 > low {
			t.Errorf("bucket %d is %d µs wide at %d µs: more than 1/8", b, width, low)
		}
		for _, us := range []int64{low, low + width - 1} {
			if got := LatencyBucket(time.Duration(us) * time.Microsecond); got != b {
				t.Errorf("%d µs: bucket %d, want %d", us, got, b)
			}
		}
		next = low + width
	}
	if got := LatencyBucket(time.Hour); got != LatencyBuckets-1 {
		t.Errorf("an hour: bucket %d, want the last, %d", got, LatencyBuckets-1)
	}
	if got := LatencyBucket(-time.Second); got != 0 {
		t.Errorf("a negative latency: bucket %d, want 0", got)
	}
}

// TestLatencyMerge: histograms recorded apart and added give the same
// counts and quantiles as one histogram of every latency, and the
// quantiles are within 1/16 of the exact ones (the seed is printed).
func TestLatencyMerge(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	var all []time.Duration
	var whole Latency
	parts := make([]Latency, 4)
	for i := range 20000 {
		// Mostly ~1 ms, a tail to ~100 ms, as word count's trees.
		d := time.Duration(200+r.IntN(1500)) * time.Microsecond
		if r.IntN(50) == 0 {
			d = time.Duration(r.IntN(100)) * time.Millisecond
		}
		all = append(all, d)
		whole.Record(d)
		parts[i%len(parts)].Record(d)
	}
	var merged Latency
	for i := range parts {
		merged.Add(&parts[i])
	}
	if merged != whole {
		t.Fatalf("merged counts differ from the whole's")
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := all[max(int(q*float64(len(all)))-1, 0)]
		got := merged.Quantile(q)
		if diff := (got - exact).Abs(); diff > exact/16+time.Microsecond {
			t.Errorf("q%v: got %v, exact %v: off by more than 1/16", q, got, exact)
		}
	}
	if n := merged.Count(); n != int64(len(all)) {
		t.Errorf("count %d, want %d", n, len(all))
	}
	var empty Latency
	if got := empty.Quantile(0.99); got != 0 {
		t.Errorf("an empty histogram's p99: %v, want 0", got)
	}
}

// TestLatencySince: a later histogram of the same counters less an
// earlier one is what came in between; counters that restarted (lower
// in a bucket) count nothing there rather than a negative.
func TestLatencySince(t *testing.T) {
	var before, after Latency
	for range 100 {
		before.Record(time.Millisecond)
	}
	after = before
	for range 50 {
		after.Record(10 * time.Millisecond)
	}
	d := after.Since(&before)
	if d.Count() != 50 || d.Quantile(0.5) < 9*time.Millisecond || d.Quantile(0.5) > 11*time.Millisecond {
		t.Errorf("since: %d trees, median %v; want 50 at about 10ms", d.Count(), d.Quantile(0.5))
	}
	var restarted Latency
	restarted.Record(10 * time.Millisecond)
	if d := restarted.Since(&before); d.Count() != 1 {
		t.Errorf("since, after a restart: %d trees, want 1", d.Count())
	}
}

// TestLatencyWire: the sparse form and JSON carry a histogram unchanged,
// and a malformed one is refused, naming what is wrong.
func TestLatencyWire(t *testing.T) {
	var l Latency
	for _, d := range []time.Duration{0, 3 * time.Microsecond, time.Millisecond, time.Millisecond, time.Minute} {
		l.Record(d)
	}
	b, c := l.Sparse()
	if len(b) != 4 || !slices.IsSorted(b) {
		t.Fatalf("sparse buckets %v: want 4, in order", b)
	}
	got, err := LatencyFromSparse(b, c)
	if err != nil || got != l {
		t.Fatalf("from sparse: %v, equal %v", err, got == l)
	}
	j, err := json.Marshal(Spout{Component: "s", Latency: l})
	if err != nil {
		t.Fatal(err)
	}
	var s Spout
	if err := json.Unmarshal(j, &s); err != nil || s.Latency != l {
		t.Fatalf("JSON %s: %v, equal %v", j, err, s.Latency == l)
	}
	if j, _ := json.Marshal(Spout{Component: "s"}); strings.Contains(string(j), "latency") {
		t.Errorf("an empty histogram is written: %s", j)
	}
	for _, c := range []struct {
		name    string
		buckets []int32
		counts  []int64
		want    string
	}{
		{"lengths", []int32{1, 2}, []int64{1}, "2 buckets but 1 counts"},
		{"range", []int32{LatencyBuckets}, []int64{1}, "out of range"},
		{"negative bucket", []int32{-1}, []int64{1}, "out of range"},
		{"twice", []int32{3, 3}, []int64{1, 1}, "given twice"},
		{"negative count", []int32{3}, []int64{-1}, "negative count"},
	} {
		if _, err := LatencyFromSparse(c.buckets, c.counts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// TestAddMergesLatency: AddSpouts and TotalSpouts merge the histograms with the
// counters.
func TestAddMergesLatency(t *testing.T) {
	var a, b Latency
	a.Record(time.Millisecond)
	b.Record(2 * time.Millisecond)
	b.Record(2 * time.Millisecond)
	sum := AddSpouts([]Spout{{Component: "s", Acked: 1, Latency: a}}, []Spout{{Component: "s", Acked: 2, Latency: b}, {Component: "t"}})
	if len(sum) != 2 || sum[0].Latency.Count() != 3 || sum[0].Acked != 3 {
		t.Fatalf("Add: %+v", sum)
	}
	if tot := TotalSpouts(sum); tot.Latency.Count() != 3 || tot.Latency.Quantile(1) < 2*time.Millisecond-time.Millisecond/16 {
		t.Errorf("Total: %d trees, max %v", tot.Latency.Count(), tot.Latency.Quantile(1))
	}
}

// BenchmarkLatencyRecorder is the cost a spout executor pays per acked
// tree.
func BenchmarkLatencyRecorder(b *testing.B) {
	var r LatencyRecorder
	b.ReportAllocs()
	d := 1234 * time.Microsecond
	for i := 0; b.Loop(); i++ {
		r.Record(d + time.Duration(i&1023)*time.Microsecond)
	}
}

// TestLatencySumAndBuckets: the sum takes each tree at its bucket's
// middle, the mean is the sum over the count, Raise keeps the larger
// count of each bucket, and Each lists the non-empty buckets' upper
// bounds in order.
func TestLatencySumAndBuckets(t *testing.T) {
	var l Latency
	l.Record(3 * time.Microsecond)   // bucket [3, 4) µs
	l.Record(3 * time.Microsecond)   //
	l.Record(100 * time.Microsecond) // bucket [96, 104) µs
	if got := l.SumMicros(); got != 3.5*2+100 {
		t.Errorf("sum %v µs, want 107", got)
	}
	if got, want := l.MeanMillis(), 107.0/3/1000; got != want {
		t.Errorf("mean %v ms, want %v", got, want)
	}
	var empty Latency
	if empty.MeanMillis() != 0 || empty.SumMicros() != 0 {
		t.Error("an empty histogram's mean or sum is not 0")
	}
	var highs []float64
	var ns []int64
	l.Each(func(high float64, n int64) { highs = append(highs, high); ns = append(ns, n) })
	if !slices.Equal(highs, []float64{4, 104}) || !slices.Equal(ns, []int64{2, 1}) {
		t.Errorf("Each: bounds %v counts %v, want [4 104] [2 1]", highs, ns)
	}
	var o Latency
	o.Record(3 * time.Microsecond)
	o.Record(time.Second)
	o.Raise(&l)
	if o.Count() != 4 {
		t.Errorf("raised: %d trees, want 4 (2 at 3 µs, 1 at 100 µs, 1 at 1 s)", o.Count())
	}
}
