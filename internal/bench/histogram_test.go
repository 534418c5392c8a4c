package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBucketLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	check := func(ns int64) {
		t.Helper()
		i := bucketOf(ns)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d, want in [0, %d)", ns, i, numBuckets)
		}
		low, width := bucketRange(i)
		if ns < low || ns >= low+width {
			t.Fatalf("value %d in bucket %d = [%d, %d)", ns, i, low, low+width)
		}
		if ns >= subCount && float64(width)/float64(low) > 1.0/subCount {
			t.Fatalf("bucket %d = [%d, %d) is wider than 1/%d of its low end", i, low, low+width, subCount)
		}
	}
	for ns := range int64(5000) {
		check(ns)
	}
	for range 100_000 {
		check(rng.Int64N(int64(HistogramMax) + 1))
	}
	check(int64(HistogramMax))
	if got, want := bucketOf(int64(HistogramMax)), numBuckets-1; got > want {
		t.Errorf("bucketOf(HistogramMax) = %d, want ≤ %d", got, want)
	}
	if got, want := bucketOf(math.MaxInt64), bucketOf(int64(HistogramMax)); got != want {
		t.Errorf("bucketOf(MaxInt64) = %d, want the HistogramMax bucket %d", got, want)
	}
	if got := bucketOf(-5); got != 0 {
		t.Errorf("bucketOf(-5) = %d, want 0", got)
	}
}

// exactQuantile uses the same definition as Histogram.Quantile: the value of rank
// ⌈q·n⌉ (at least 1) in sorted order.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return sorted[rank-1]
}

func TestHistogramQuantileAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 2))

	dists := []struct {
		name string
		draw func() time.Duration
	}{
		{"log-uniform 1µs..5min", func() time.Duration {
			lo, hi := math.Log(float64(HistogramMin)), math.Log(float64(HistogramMax))
			return time.Duration(math.Exp(lo + rng.Float64()*(hi-lo)))
		}},
		{"uniform 1µs..10ms", func() time.Duration {
			return HistogramMin + time.Duration(rng.Int64N(int64(10*time.Millisecond)))
		}},
		{"exponential mean 200µs", func() time.Duration {
			return HistogramMin + time.Duration(rng.ExpFloat64()*float64(200*time.Microsecond))
		}},
	}
	qs := []float64{0, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1}
	for _, d := range dists {
		t.Run(d.name, func(t *testing.T) {
			var h Histogram
			vals := make([]time.Duration, 200_000)
			for i := range vals {
				vals[i] = d.draw()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			if got, want := h.Count(), int64(len(vals)); got != want {
				t.Fatalf("Count() = %d, want %d", got, want)
			}
			for _, q := range qs {
				got, want := h.Quantile(q), exactQuantile(vals, q)
				if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.01 {
					t.Errorf("Quantile(%v) = %v, want %v ± 1%% (off by %.2f%%)", q, got, want, 100*rel)
				}
			}
		})
	}
}

func TestHistogramEmptyAndClamp(t *testing.T) {
	var h Histogram
	if got := h.Quantile(0.5); got != 0 {
		t.Errorf("empty Quantile(0.5) = %v, want 0", got)
	}
	if got := h.Count(); got != 0 {
		t.Errorf("empty Count() = %d, want 0", got)
	}
	h.Record(time.Hour)
	if got := h.Quantile(1); math.Abs(float64(got-HistogramMax))/float64(HistogramMax) > 0.01 {
		t.Errorf("after Record(1h): Quantile(1) = %v, want ≈ HistogramMax %v", got, HistogramMax)
	}
	h.Record(0)
	if got := h.Quantile(0); got != 0 {
		t.Errorf("after Record(0): Quantile(0) = %v, want 0", got)
	}
}

func TestHistogramConcurrentRecordAndMerge(t *testing.T) {
	const writers, each = 4, 50_000
	var a, b Histogram
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				a.Record(time.Duration(w*each+i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	if got, want := a.Count(), int64(writers*each); got != want {
		t.Fatalf("Count() after concurrent Record = %d, want %d", got, want)
	}
	b.Record(time.Millisecond)
	b.Merge(&a)
	if got, want := b.Count(), int64(writers*each+1); got != want {
		t.Errorf("Count() after Merge = %d, want %d", got, want)
	}
	want := time.Duration(writers*each/2) * time.Microsecond
	if got := b.Quantile(0.5); math.Abs(float64(got-want))/float64(want) > 0.01 {
		t.Errorf("Quantile(0.5) after Merge = %v, want %v ± 1%%", got, want)
	}
}

func TestHistCountsIntervalQuantile(t *testing.T) {
	var h Histogram
	var prev, cur, delta histCounts
	for range 1000 {
		h.Record(time.Millisecond)
	}
	h.load(&prev)
	for range 10 {
		h.Record(time.Second)
	}
	h.load(&cur)
	delta.sub(&cur, &prev)
	if got := delta.quantile(0.5); math.Abs(float64(got-time.Second))/float64(time.Second) > 0.01 {
		t.Errorf("interval Quantile(0.5) = %v, want ≈ 1s (only the interval's observations)", got)
	}
}

func TestHistogramCountsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	var src Histogram
	for range 10_000 {
		src.Record(time.Duration(rng.Int64N(int64(time.Second))))
	}
	src.Record(0)
	src.Record(HistogramMax)

	c := src.Counts()
	if len(c) != numBuckets {
		t.Fatalf("len(Counts()) = %d, want %d (one per bucket)", len(c), numBuckets)
	}
	var sum int64
	for _, n := range c {
		sum += n
	}
	if sum != src.Count() {
		t.Errorf("Counts() sums to %d, want Count() = %d", sum, src.Count())
	}
	c[bucketOf(0)] += 1000 // a copy: changing it leaves src alone
	if got := src.Counts()[bucketOf(0)]; got != 1 {
		t.Errorf("after changing the returned slice, bucket of 0 holds %d, want 1", got)
	}
	c[bucketOf(0)] -= 1000

	var dst Histogram
	dst.Record(time.Millisecond)
	if err := dst.AddCounts(c); err != nil {
		t.Fatalf("AddCounts(Counts()) = %v", err)
	}
	var want Histogram
	want.Merge(&src)
	want.Record(time.Millisecond)
	if got, w := dst.Counts(), want.Counts(); !slices.Equal(got, w) {
		t.Errorf("AddCounts(src.Counts()) differs from Merge(src)")
	}
	for _, q := range []float64{0, 0.5, 0.99, 0.999, 1} {
		if got, w := dst.Quantile(q), want.Quantile(q); got != w {
			t.Errorf("Quantile(%v) after AddCounts = %v, want %v (as after Merge)", q, got, w)
		}
	}
}

func TestHistogramAddCountsErrors(t *testing.T) {
	negative := make([]int64, numBuckets)
	negative[7], negative[9] = 5, -1
	tests := []struct {
		name    string
		counts  []int64
		wantErr string
	}{
		{"nil", nil, fmt.Sprintf("0 buckets, want %d", numBuckets)},
		{"short", make([]int64, numBuckets-1), fmt.Sprintf("%d buckets, want %d", numBuckets-1, numBuckets)},
		{"long", make([]int64, numBuckets+1), fmt.Sprintf("%d buckets, want %d", numBuckets+1, numBuckets)},
		{"negative", negative, "bucket 9 is -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			h.Record(time.Millisecond)
			before := h.Counts()
			err := h.AddCounts(tt.counts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("AddCounts() = %v, want an error containing %q", err, tt.wantErr)
			}
			if !slices.Equal(h.Counts(), before) {
				t.Errorf("AddCounts() failed but changed the histogram (bucket 7: %d)", h.Counts()[7])
			}
		})
	}
}

func TestHistogramAddCountsConcurrent(t *testing.T) {
	const adders, rounds = 4, 200
	one := make([]int64, numBuckets)
	one[bucketOf(int64(time.Millisecond))] = 1
	var h Histogram
	var wg sync.WaitGroup
	for range adders {
		wg.Go(func() {
			for range rounds {
				if err := h.AddCounts(one); err != nil {
					t.Error(err)
					return
				}
				h.Record(time.Second)
			}
		})
	}
	wg.Wait()
	if got, want := h.Count(), int64(2*adders*rounds); got != want {
		t.Errorf("Count() after concurrent AddCounts and Record = %d, want %d", got, want)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := 123 * time.Microsecond
		for pb.Next() {
			h.Record(d)
			d += 7
		}
	})
}
