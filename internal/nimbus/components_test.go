package nimbus

import (
	"fmt"
	"testing"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// TestSumComponentsNewCounters: process latency samples, queue depth
// and capacity, time backpressured and throttled, retries and dead
// letters add up over the workers, the per-stream counters by component
// and stream, the executors list in task order, and the errors merge
// oldest first (TestSumComponentsDetail checks their bound).
func TestSumComponentsNewCounters(t *testing.T) {
	errs := func(host string, port int32, times ...int64) []*nimbuspb.ComponentError {
		var out []*nimbuspb.ComponentError
		for _, at := range times {
			out = append(out, &nimbuspb.ComponentError{Task: 1, TimeUnixMs: at, Error: fmt.Sprintf("e%d", at), Host: host, Port: port})
		}
		return out
	}
	w := func(port int32, n int64, times ...int64) *nimbuspb.WorkerReport {
		return &nimbuspb.WorkerReport{Port: port, Components: []*nimbuspb.ComponentStats{{
			Component: "b", Kind: "bolt", Tasks: 1,
			ProcessSamples: n, ProcessSampledNanos: 10 * n, QueueDepth: 2 * n, QueueCapacity: 1000,
			BackpressureNanos: 3 * n, ThrottledNanos: 4 * n, Retries: 5 * n, DeadLetters: 6 * n,
			Errors:    errs("h", port, times...),
			Executors: []*nimbuspb.ExecutorStats{{FirstTask: 2 - (port - 6700), LastTask: 2 - (port - 6700), Port: port, Executed: n}},
			Inputs: []*nimbuspb.StreamStats{
				{Component: "a", Stream: "default", Executed: n, Acked: n, ProcessSamples: 1},
				{Component: fmt.Sprint("w", port), Stream: "x", Executed: 1},
			},
			Outputs: []*nimbuspb.StreamStats{{Component: "b", Stream: "default", Emitted: 7 * n, Transferred: n}},
		}}}
	}
	got := sumComponents([]*nimbuspb.WorkerReport{
		w(6700, 1, 1, 3, 5, 7, 9, 11, 13),
		w(6701, 2, 2, 4, 6, 8, 10, 12),
	})
	if len(got) != 1 {
		t.Fatalf("components %v, want b", got)
	}
	b := got[0]
	if b.GetProcessSamples() != 3 || b.GetProcessSampledNanos() != 30 || b.GetQueueDepth() != 6 || b.GetQueueCapacity() != 2000 ||
		b.GetBackpressureNanos() != 9 || b.GetThrottledNanos() != 12 || b.GetRetries() != 15 || b.GetDeadLetters() != 18 {
		t.Errorf("sum: %v, want process 3 in 30 ns, queue 6 of 2000, backpressure 9, throttled 12, retries 15, dead letters 18", b)
	}
	if xs := b.GetExecutors(); len(xs) != 2 || xs[0].GetFirstTask() != 1 || xs[0].GetPort() != 6701 || xs[0].GetExecuted() != 2 ||
		xs[1].GetFirstTask() != 2 || xs[1].GetPort() != 6700 {
		t.Errorf("executors %v, want task 1 on 6701, then task 2 on 6700", xs)
	}
	if in := fmt.Sprint(b.GetInputs()); len(b.GetInputs()) != 3 || b.GetInputs()[0].GetExecuted() != 3 || b.GetInputs()[0].GetProcessSamples() != 2 ||
		b.GetInputs()[1].GetComponent() != "w6700" || b.GetInputs()[2].GetComponent() != "w6701" {
		t.Errorf("inputs %s, want a/default with 3 executed and 2 timed, then w6700/x and w6701/x", in)
	}
	if out := b.GetOutputs(); len(out) != 1 || out[0].GetEmitted() != 21 || out[0].GetTransferred() != 3 {
		t.Errorf("outputs %v, want b/default with 21 emitted, 3 transferred", out)
	}
	var times []int64
	for _, e := range b.GetErrors() {
		times = append(times, e.GetTimeUnixMs())
		if want := int32(6700 + 1 - e.GetTimeUnixMs()%2); e.GetPort() != want || e.GetError() != fmt.Sprintf("e%d", e.GetTimeUnixMs()) {
			t.Errorf("error %v: want e%d from port %d", e, e.GetTimeUnixMs(), want)
		}
	}
	if fmt.Sprint(times) != "[1 2 3 4 5 6 7 8 9 10 11 12 13]" {
		t.Errorf("errors at %v, want both workers', oldest first: [1 … 13]", times)
	}
}
