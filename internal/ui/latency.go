package ui

import "github.com/gale-stream/gale/internal/nimbuspb"

// bucketRange is bucket b's bounds in microseconds, [low, high), in the
// layout of the nimbus API's LatencyHistogram (internal/metrics.Latency).
func bucketRange(b int32) (low, high float64) {
	if b < 8 {
		return float64(b), float64(b + 1)
	}
	unit := float64(int64(1) << (b/8 - 1))
	return float64(8+b%8) * unit, float64(9+b%8) * unit
}

// latencyMillis is the mean of h, in milliseconds, taking each tree at
// its bucket's middle (within 1/16 of its latency); 0 when h is empty.
func latencyMillis(h *nimbuspb.LatencyHistogram) float64 {
	sum, n := latencySum(h)
	if n == 0 {
		return 0
	}
	return sum / float64(n) / 1000
}

// latencySum is h's total latency in microseconds, each tree at its
// bucket's middle, and its number of trees.
func latencySum(h *nimbuspb.LatencyHistogram) (sumMicros float64, n uint64) {
	counts := h.GetCounts()
	for i, b := range h.GetBuckets() {
		if i >= len(counts) || counts[i] <= 0 {
			continue
		}
		lo, hi := bucketRange(b)
		sumMicros += float64(counts[i]) * (lo + hi) / 2
		n += uint64(counts[i])
	}
	return sumMicros, n
}
