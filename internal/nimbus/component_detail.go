package nimbus

import (
	"cmp"
	"slices"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// maxComponentErrors bounds the errors a component's sum keeps: the most
// recent ones over all its workers.
const maxComponentErrors = 20

// addDetail adds to the component's sum s a worker's counters of the
// component, c, that sumComponents does not: the process latency
// samples, queue depths and bounds, time backpressured and throttled,
// retries and dead letters add up; a stream's counters add up by (source
// component, stream); executors and errors are listed (sortDetail orders
// and bounds them).
func addDetail(s, c *nimbuspb.ComponentStats) {
	s.ProcessSamples += c.GetProcessSamples()
	s.ProcessSampledNanos += c.GetProcessSampledNanos()
	s.QueueDepth += c.GetQueueDepth()
	s.QueueCapacity += c.GetQueueCapacity()
	s.BackpressureNanos += c.GetBackpressureNanos()
	s.ThrottledNanos += c.GetThrottledNanos()
	s.Retries += c.GetRetries()
	s.DeadLetters += c.GetDeadLetters()
	s.Errors = append(s.Errors, c.GetErrors()...)
	s.Executors = append(s.Executors, c.GetExecutors()...)
	s.Inputs = addStreams(s.Inputs, c.GetInputs())
	s.Outputs = addStreams(s.Outputs, c.GetOutputs())
}

func addStreams(sum, add []*nimbuspb.StreamStats) []*nimbuspb.StreamStats {
	for _, a := range add {
		i := slices.IndexFunc(sum, func(x *nimbuspb.StreamStats) bool {
			return x.GetComponent() == a.GetComponent() && x.GetStream() == a.GetStream()
		})
		if i < 0 {
			sum = append(sum, &nimbuspb.StreamStats{Stream: a.GetStream(), Component: a.GetComponent()})
			i = len(sum) - 1
		}
		x := sum[i]
		x.Emitted += a.GetEmitted()
		x.Transferred += a.GetTransferred()
		x.Executed += a.GetExecuted()
		x.Acked += a.GetAcked()
		x.Failed += a.GetFailed()
		x.ExecuteSamples += a.GetExecuteSamples()
		x.ExecuteSampledNanos += a.GetExecuteSampledNanos()
		x.ProcessSamples += a.GetProcessSamples()
		x.ProcessSampledNanos += a.GetProcessSampledNanos()
	}
	return sum
}

// sortDetail orders a component sum's detail: streams by source
// component and stream, executors by their first task, errors oldest
// first, keeping the latest maxComponentErrors.
func sortDetail(s *nimbuspb.ComponentStats) {
	byStream := func(a, b *nimbuspb.StreamStats) int {
		return cmp.Or(cmp.Compare(a.GetComponent(), b.GetComponent()), cmp.Compare(a.GetStream(), b.GetStream()))
	}
	slices.SortFunc(s.Inputs, byStream)
	slices.SortFunc(s.Outputs, byStream)
	slices.SortFunc(s.Executors, func(a, b *nimbuspb.ExecutorStats) int { return cmp.Compare(a.GetFirstTask(), b.GetFirstTask()) })
	slices.SortStableFunc(s.Errors, func(a, b *nimbuspb.ComponentError) int {
		return cmp.Or(cmp.Compare(a.GetTimeUnixMs(), b.GetTimeUnixMs()), cmp.Compare(a.GetTask(), b.GetTask()))
	})
	if n := len(s.Errors); n > maxComponentErrors {
		s.Errors = slices.Clone(s.Errors[n-maxComponentErrors:])
	}
}
