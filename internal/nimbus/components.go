package nimbus

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// sumComponents sums the workers' per-component counters by component,
// in component id order: every counter and histogram is added, the
// capacity is the largest (the busiest executor's).
func sumComponents(ws []*nimbuspb.WorkerReport) []*nimbuspb.ComponentStats {
	byComp := make(map[string]*nimbuspb.ComponentStats)
	lat := make(map[string]*metrics.Latency)
	for _, w := range ws {
		for _, c := range w.GetComponents() {
			s := byComp[c.GetComponent()]
			if s == nil {
				s = &nimbuspb.ComponentStats{Component: c.GetComponent(), Kind: c.GetKind()}
				byComp[c.GetComponent()] = s
				lat[c.GetComponent()] = &metrics.Latency{}
			}
			s.Tasks += c.GetTasks()
			s.Emitted += c.GetEmitted()
			s.Transferred += c.GetTransferred()
			s.Acked += c.GetAcked()
			s.Failed += c.GetFailed()
			s.FailedByBolt += c.GetFailedByBolt()
			s.TimedOut += c.GetTimedOut()
			s.FailedShutdown += c.GetFailedShutdown()
			s.Pending += c.GetPending()
			s.MaxPending += c.GetMaxPending()
			s.Executed += c.GetExecuted()
			s.ExecuteSamples += c.GetExecuteSamples()
			s.ExecuteSampledNanos += c.GetExecuteSampledNanos()
			s.Capacity = max(s.Capacity, c.GetCapacity())
			addDetail(s, c)
			if h := c.GetCompleteLatency(); h != nil {
				// Checked when the report came (checkReport).
				l, _ := metrics.LatencyFromSparse(h.GetBuckets(), h.GetCounts())
				lat[c.GetComponent()].Add(&l)
			}
		}
	}
	out := make([]*nimbuspb.ComponentStats, 0, len(byComp))
	for id, s := range byComp {
		if l := lat[id]; l.Count() > 0 {
			s.CompleteLatency = &nimbuspb.LatencyHistogram{}
			s.CompleteLatency.Buckets, s.CompleteLatency.Counts = l.Sparse()
		}
		sortDetail(s)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *nimbuspb.ComponentStats) int { return cmp.Compare(a.GetComponent(), b.GetComponent()) })
	return out
}

// checkReport checks a worker report's latency histograms, naming the
// one at fault.
func checkReport(w *nimbuspb.WorkerReport) error {
	hs := []*nimbuspb.LatencyHistogram{w.GetCompleteLatency()}
	names := []string{"complete_latency"}
	for _, c := range w.GetComponents() {
		hs = append(hs, c.GetCompleteLatency())
		names = append(names, fmt.Sprintf("component %q complete_latency", c.GetComponent()))
	}
	for i, h := range hs {
		if h == nil {
			continue
		}
		if _, err := metrics.LatencyFromSparse(h.GetBuckets(), h.GetCounts()); err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
	}
	return nil
}
