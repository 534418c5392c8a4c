package bench

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram bucket layout, log-linear like HdrHistogram: values (in nanoseconds) below
// 2^subBits are their own bucket; above, each power-of-two range [2^e, 2^(e+1)) is cut
// into 2^subBits equal buckets. 128 buckets per octave bound the relative bucket width by
// 1/128, so a quantile read at the bucket midpoint is within 0.4% of the exact value —
// better than two significant digits.
const (
	subBits  = 7
	subCount = 1 << subBits

	// HistogramMin and HistogramMax bound the range the histogram is meant for; values
	// below HistogramMin are still recorded (with at least the same precision), values
	// above HistogramMax are recorded as HistogramMax.
	HistogramMin = time.Microsecond
	HistogramMax = 5 * time.Minute

	maxExp     = 38 // bits.Len64(HistogramMax in ns) - 1
	numBuckets = subCount + (maxExp-subBits+1)*subCount
)

// Histogram records durations into fixed log-linear buckets. Record, Merge, AddCounts
// and the readers (Count, Counts, Quantile) are lock-free and safe for concurrent use;
// readers see a consistent-enough view for monitoring (counts recorded during a read may
// or may not be included).
// The zero value is an empty histogram. A Histogram must not be copied after first use.
type Histogram struct {
	counts [numBuckets]atomic.Int64
}

func bucketOf(ns int64) int {
	if ns < subCount {
		if ns < 0 {
			return 0
		}
		return int(ns)
	}
	if ns > int64(HistogramMax) {
		ns = int64(HistogramMax)
	}
	e := bits.Len64(uint64(ns)) - 1 // ≥ subBits
	shift := e - subBits
	return subCount + shift*subCount + int(ns>>shift) - subCount
}

// bucketRange returns the smallest value of bucket i and its width, in nanoseconds.
func bucketRange(i int) (low, width int64) {
	if i < subCount {
		return int64(i), 1
	}
	shift := (i - subCount) / subCount
	sub := (i - subCount) % subCount
	return int64(subCount+sub) << shift, int64(1) << shift
}

// Record adds one observation of d. It does not allocate or block.
func (h *Histogram) Record(d time.Duration) {
	h.counts[bucketOf(int64(d))].Add(1)
}

// Count returns the number of recorded observations.
func (h *Histogram) Count() int64 {
	var n int64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Merge adds every observation recorded in other to h. other may be recorded to
// concurrently; observations made during the merge may or may not be included.
func (h *Histogram) Merge(other *Histogram) {
	for i := range other.counts {
		if c := other.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
}

// Counts returns a copy of the bucket counts, one per bucket in bucket order (its length
// is the number of buckets). With AddCounts it carries a histogram across a process
// boundary: a worker sends Counts, the launcher adds them (or their change since the
// last send) to its own histogram.
func (h *Histogram) Counts() []int64 {
	c := make([]int64, numBuckets)
	for i := range h.counts {
		c[i] = h.counts[i].Load()
	}
	return c
}

// AddCounts adds c to h bucket by bucket, as Merge does for a Histogram. c must have
// one count per bucket (the length Counts returns), none negative; otherwise AddCounts
// returns an error and adds nothing.
func (h *Histogram) AddCounts(c []int64) error {
	if len(c) != numBuckets {
		return fmt.Errorf("bench: histogram counts have %d buckets, want %d", len(c), numBuckets)
	}
	for i, n := range c {
		if n < 0 {
			return fmt.Errorf("bench: histogram count of bucket %d is %d, want ≥ 0", i, n)
		}
	}
	for i, n := range c {
		if n != 0 {
			h.counts[i].Add(n)
		}
	}
	return nil
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of the recorded durations: the value of
// rank ⌈q·n⌉ (at least 1), read at the middle of its bucket. It returns 0 when the
// histogram is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	var c histCounts
	h.load(&c)
	return c.quantile(q)
}

// histCounts is a point-in-time copy of a Histogram's buckets, used by the live view to
// compute quantiles over one interval.
type histCounts [numBuckets]int64

func (h *Histogram) load(dst *histCounts) {
	for i := range h.counts {
		dst[i] = h.counts[i].Load()
	}
}

// sub sets c to cur − prev, bucket by bucket.
func (c *histCounts) sub(cur, prev *histCounts) {
	for i := range c {
		c[i] = cur[i] - prev[i]
	}
}

func (c *histCounts) quantile(q float64) time.Duration {
	var total int64
	for _, n := range c {
		total += n
	}
	if total == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := max(int64(math.Ceil(q*float64(total))), 1)
	var seen int64
	for i, n := range c {
		seen += n
		if seen >= rank {
			low, width := bucketRange(i)
			return time.Duration(low + (width-1)/2)
		}
	}
	panic("unreachable: rank ≤ total")
}
