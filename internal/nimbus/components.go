package nimbus

import (
	"cmp"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/gale-stream/gale/internal/nimbuspb"
	"github.com/gale-stream/gale/internal/runstats"
)

// sumComponents sums the workers' per-component counters by component,
// in component id order: every counter and histogram is added, the
// capacity is the largest (the busiest executor's), the errors are
// merged oldest first, keeping the newest maxErrors, the per-stream
// counters add by component and stream, and the executors of every
// worker are listed in task order.
func sumComponents(ws []*nimbuspb.WorkerReport) []*nimbuspb.ComponentStats {
	byComp := make(map[string]*nimbuspb.ComponentStats)
	lat := make(map[string]*runstats.Latency)
	for _, w := range ws {
		for _, c := range w.GetComponents() {
			s := byComp[c.GetComponent()]
			if s == nil {
				s = &nimbuspb.ComponentStats{Component: c.GetComponent(), Kind: c.GetKind()}
				byComp[c.GetComponent()] = s
				lat[c.GetComponent()] = &runstats.Latency{}
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
			s.ProcessSamples += c.GetProcessSamples()
			s.ProcessSampledNanos += c.GetProcessSampledNanos()
			s.QueueDepth += c.GetQueueDepth()
			s.QueueCapacity += c.GetQueueCapacity()
			s.BackpressureNanos += c.GetBackpressureNanos()
			s.ThrottledNanos += c.GetThrottledNanos()
			s.Retries += c.GetRetries()
			s.DeadLetters += c.GetDeadLetters()
			s.Inputs = addStreams(s.Inputs, c.GetInputs())
			s.Outputs = addStreams(s.Outputs, c.GetOutputs())
			for _, x := range c.GetExecutors() {
				s.Executors = append(s.Executors, proto.CloneOf(x))
			}
			for _, e := range c.GetErrors() {
				s.Errors = append(s.Errors, &nimbuspb.ComponentError{Task: e.GetTask(), TimeUnixMs: e.GetTimeUnixMs(),
					Error: e.GetError(), Host: e.GetHost(), Port: e.GetPort()})
			}
			if h := c.GetCompleteLatency(); h != nil {
				// Checked when the report came (checkReport).
				l, _ := runstats.LatencyFromSparse(h.GetBuckets(), h.GetCounts())
				lat[c.GetComponent()].Add(&l)
			}
		}
	}
	out := make([]*nimbuspb.ComponentStats, 0, len(byComp))
	for id, s := range byComp {
		// Oldest first; at the same time, by worker, then as reported.
		slices.SortStableFunc(s.Errors, func(a, b *nimbuspb.ComponentError) int {
			return cmp.Or(cmp.Compare(a.GetTimeUnixMs(), b.GetTimeUnixMs()), cmp.Compare(a.GetHost(), b.GetHost()), cmp.Compare(a.GetPort(), b.GetPort()))
		})
		slices.SortFunc(s.Executors, func(a, b *nimbuspb.ExecutorStats) int { return cmp.Compare(a.GetFirstTask(), b.GetFirstTask()) })
		if n := len(s.Errors); n > maxErrors {
			s.Errors = s.Errors[n-maxErrors:]
		}
		if l := lat[id]; l.Count() > 0 {
			s.CompleteLatency = &nimbuspb.LatencyHistogram{}
			s.CompleteLatency.Buckets, s.CompleteLatency.Counts = l.Sparse()
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *nimbuspb.ComponentStats) int { return cmp.Compare(a.GetComponent(), b.GetComponent()) })
	return out
}

// addStreams adds b's per-stream counters to a's, by component and
// stream, keeping a in that order.
func addStreams(a, b []*nimbuspb.StreamStats) []*nimbuspb.StreamStats {
	for _, s := range b {
		i, found := slices.BinarySearchFunc(a, s, func(x, y *nimbuspb.StreamStats) int {
			return cmp.Or(cmp.Compare(x.GetComponent(), y.GetComponent()), cmp.Compare(x.GetStream(), y.GetStream()))
		})
		if !found {
			a = slices.Insert(a, i, &nimbuspb.StreamStats{Component: s.GetComponent(), Stream: s.GetStream()})
		}
		o := a[i]
		o.Emitted += s.GetEmitted()
		o.Transferred += s.GetTransferred()
		o.Executed += s.GetExecuted()
		o.Acked += s.GetAcked()
		o.Failed += s.GetFailed()
		o.ExecuteSamples += s.GetExecuteSamples()
		o.ExecuteSampledNanos += s.GetExecuteSampledNanos()
		o.ProcessSamples += s.GetProcessSamples()
		o.ProcessSampledNanos += s.GetProcessSampledNanos()
	}
	return a
}

// maxErrors is how many errors of a component Get returns: the newest.
const maxErrors = 10

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
		if _, err := runstats.LatencyFromSparse(h.GetBuckets(), h.GetCounts()); err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
	}
	return nil
}
