package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// LatencyBuckets is the number of buckets of a Latency.
//
// The buckets are log-linear in microseconds, eight to each power of
// two, as HdrHistogram's: bucket b < 8 holds the latencies in
// [b, b+1) µs; bucket b ≥ 8 holds [(8 + b%8)·2^(b/8−1), (9 + b%8)·2^(b/8−1)) µs,
// so a bucket is at most 1/8 of its lower bound wide. The last bucket,
// 215, [15·2^25, 2^29) µs (503–537 s), also holds everything longer.
// The layout is part of the wire format (the nimbus API's
// LatencyHistogram): it must not change.
const LatencyBuckets = 216

const latencySubBits = 3

// LatencyBucket is the bucket of a latency of d (a negative d counts as 0).
func LatencyBucket(d time.Duration) int {
	us := int64(d / time.Microsecond)
	if us < 1<<latencySubBits {
		return int(max(us, 0))
	}
	shift := bits.Len64(uint64(us)) - 1 - latencySubBits
	b := shift<<latencySubBits + int(us>>shift)
	return min(b, LatencyBuckets-1)
}

// latencyRange is bucket b's lower bound and width, in microseconds.
func latencyRange(b int) (low, width int64) {
	if b < 1<<latencySubBits {
		return int64(b), 1
	}
	shift := b>>latencySubBits - 1
	return int64(1<<latencySubBits+b%(1<<latencySubBits)) << shift, 1 << shift
}

// LatencyBucketRange is bucket b's bounds in microseconds, [low, high).
func LatencyBucketRange(b int) (low, high float64) {
	lo, width := latencyRange(b)
	return float64(lo), float64(lo + width)
}

// Latency counts complete latencies, the time from a spout's emit of a
// tree to its ack, in LatencyBuckets fixed buckets. Histograms merge by
// adding (Add) and a later one of the same counters less an earlier one
// is what happened in between (Since). The zero value is empty. It is a
// value: not safe for concurrent use (LatencyRecorder is).
type Latency struct {
	counts [LatencyBuckets]int64
}

// Record counts one tree of latency d.
func (l *Latency) Record(d time.Duration) { l.counts[LatencyBucket(d)]++ }

// Add adds o's counts to l's.
func (l *Latency) Add(o *Latency) {
	for i, n := range o.counts {
		l.counts[i] += n
	}
}

// Since returns l less prev, bucket by bucket: the trees counted between
// the two if both are the same counters, l the later. A bucket that went
// down (counters that restarted: a worker started again) counts 0.
func (l *Latency) Since(prev *Latency) Latency {
	var d Latency
	for i := range l.counts {
		d.counts[i] = max(l.counts[i]-prev.counts[i], 0)
	}
	return d
}

// Count is the number of trees counted.
func (l *Latency) Count() int64 {
	var n int64
	for _, c := range l.counts {
		n += c
	}
	return n
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of the latencies counted:
// the middle of the bucket of rank ⌈q·n⌉ (at least 1), within 1/16 of the
// exact value. It returns 0 when l is empty.
func (l *Latency) Quantile(q float64) time.Duration {
	total := l.Count()
	if total == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := max(int64(math.Ceil(q*float64(total))), 1)
	var seen int64
	for b, n := range l.counts {
		seen += n
		if seen >= rank {
			low, width := latencyRange(b)
			return time.Duration(2*low+width) * time.Microsecond / 2
		}
	}
	panic("unreachable: rank ≤ total")
}

// Raise makes each of l's buckets at least o's: the larger of two
// readings of the same counters, one of which may be behind.
func (l *Latency) Raise(o *Latency) {
	for i, n := range o.counts {
		l.counts[i] = max(l.counts[i], n)
	}
}

// SumMicros is the total latency counted, in microseconds, each tree at
// its bucket's middle (within 1/16 of its latency): over Count, the
// mean latency.
func (l *Latency) SumMicros() float64 {
	var sum float64
	for b, n := range l.counts {
		if n > 0 {
			low, high := LatencyBucketRange(b)
			sum += float64(n) * (low + high) / 2
		}
	}
	return sum
}

// MeanMillis is the mean latency counted, in milliseconds, each tree at
// its bucket's middle; 0 when l is empty.
func (l *Latency) MeanMillis() float64 {
	n := l.Count()
	if n == 0 {
		return 0
	}
	return l.SumMicros() / float64(n) / 1000
}

// Each calls f with each bucket that is not empty, in order: its upper
// bound in microseconds (exclusive) and its count.
func (l *Latency) Each(f func(highMicros float64, n int64)) {
	for b, n := range l.counts {
		if n > 0 {
			_, high := LatencyBucketRange(b)
			f(high, n)
		}
	}
}

// Sparse returns l's buckets that are not empty, in order, and their
// counts: the wire form.
func (l *Latency) Sparse() (buckets []int32, counts []int64) {
	for b, n := range l.counts {
		if n != 0 {
			buckets = append(buckets, int32(b))
			counts = append(counts, n)
		}
	}
	return buckets, counts
}

// LatencyFromSparse is the histogram of a wire form: counts[i] trees in
// bucket buckets[i]. It fails, naming what is wrong, on lists of
// different lengths, a bucket out of range or given twice, or a negative
// count.
func LatencyFromSparse(buckets []int32, counts []int64) (Latency, error) {
	var l Latency
	if len(buckets) != len(counts) {
		return l, fmt.Errorf("latency histogram: %d buckets but %d counts", len(buckets), len(counts))
	}
	var seen [LatencyBuckets]bool
	for i, b := range buckets {
		switch {
		case b < 0 || int(b) >= LatencyBuckets:
			return Latency{}, fmt.Errorf("latency histogram: bucket %d is out of range 0–%d", b, LatencyBuckets-1)
		case seen[b]:
			return Latency{}, fmt.Errorf("latency histogram: bucket %d is given twice", b)
		case counts[i] < 0:
			return Latency{}, fmt.Errorf("latency histogram: bucket %d has a negative count %d", b, counts[i])
		}
		seen[b] = true
		l.counts[b] = counts[i]
	}
	return l, nil
}

type sparseLatency struct {
	Buckets []int32 `json:"buckets"`
	Counts  []int64 `json:"counts"`
}

// MarshalJSON writes l in its wire form, {"buckets":[…],"counts":[…]}.
func (l Latency) MarshalJSON() ([]byte, error) {
	var s sparseLatency
	s.Buckets, s.Counts = l.Sparse()
	return json.Marshal(s)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Latency) UnmarshalJSON(b []byte) error {
	var s sparseLatency
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := LatencyFromSparse(s.Buckets, s.Counts)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// LatencyRecorder is a Latency that one goroutine records into while
// others read it. The zero value is empty.
type LatencyRecorder struct {
	counts [LatencyBuckets]atomic.Int64
}

// Record counts one tree of latency d. It does not allocate or block.
func (r *LatencyRecorder) Record(d time.Duration) { r.counts[LatencyBucket(d)].Add(1) }

// AddTo adds the counts recorded so far to l. Each bucket is read once:
// a tree recorded meanwhile may or may not be counted.
func (r *LatencyRecorder) AddTo(l *Latency) {
	for i := range r.counts {
		l.counts[i] += r.counts[i].Load()
	}
}
