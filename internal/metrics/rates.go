package metrics

import (
	"slices"
	"time"
)

// Rates between two readings of the same counters. A counter lower in
// the later reading than in the earlier one was counted by another
// process (a worker started again, from 0): what happened between them
// is unknown, and counts as 0, never as a negative number.

// Delta is cur less prev, at least 0.
func Delta[N ~int64 | ~float64](cur, prev N) N { return max(cur-prev, 0) }

// Rate is the counter's change from prev to cur (Delta) per second over
// secs; 0 when secs is not positive.
func Rate[N ~int64 | ~float64](cur, prev N, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(Delta(cur, prev)) / secs
}

// Mean is the mean of n sampled durations totalling nanos, to the
// nanosecond below; 0 when none was sampled.
func Mean(n, nanos int64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(nanos / n)
}

// MeanNanos is Mean in nanoseconds, unrounded, for display.
func MeanNanos(n, nanos int64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(nanos) / float64(n)
}

// MeanSince is the mean of the durations sampled between two readings
// (n and nanos now, prevN and prevNanos before), or of all of now's when
// none was sampled between them (or the counters went down).
func MeanSince(n, nanos, prevN, prevNanos int64) time.Duration {
	if d := n - prevN; d > 0 && nanos >= prevNanos {
		return time.Duration((nanos - prevNanos) / d)
	}
	return Mean(n, nanos)
}

// LatencySince is the histogram of the trees counted between two
// readings, prev and cur, or all of cur when none was counted between
// them.
func LatencySince(cur, prev *Latency) Latency {
	if d := cur.Since(prev); d.Count() > 0 {
		return d
	}
	return *cur
}

// Median is the middle value of xs (the mean of the two middle ones for
// an even count), 0 for none. xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
