package components

import (
	"fmt"
	"testing"
	"time"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// sum is Sum of the workers' components.
func sum(ws []*nimbuspb.WorkerReport) []*nimbuspb.ComponentStats {
	var lists [][]*nimbuspb.ComponentStats
	for _, w := range ws {
		lists = append(lists, w.GetComponents())
	}
	return Sum(lists...)
}

// TestSumNewCounters: process latency samples, queue depth
// and capacity, time backpressured and throttled, retries and dead
// letters add up over the workers, the per-stream counters by component
// and stream, the executors list in task order, and the errors merge
// oldest first (TestSumDetail checks their bound).
func TestSumNewCounters(t *testing.T) {
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
	got := sum([]*nimbuspb.WorkerReport{
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

// TestSumDetail: the per-stream counters add up by stream, the
// executors list in task order, and the errors keep the latest
// MaxErrors over the workers, oldest first.
func TestSumDetail(t *testing.T) {
	var ws []*nimbuspb.WorkerReport
	for w := range 3 {
		c := &nimbuspb.ComponentStats{Component: "split", Kind: "bolt",
			ProcessSamples: 2, ProcessSampledNanos: 10, QueueDepth: 3, Retries: 1,
			Inputs: []*nimbuspb.StreamStats{
				{Component: "src", Stream: "default", Executed: 10, Acked: 9, Failed: 1},
				{Component: "src", Stream: "side", Executed: 1},
			},
			Outputs:   []*nimbuspb.StreamStats{{Stream: "default", Emitted: 20, Transferred: 5}},
			Executors: []*nimbuspb.ExecutorStats{{FirstTask: int32(10 - w), LastTask: int32(10 - w), Port: int32(6700 + w)}},
		}
		for i := range 10 {
			// Worker w's errors at w, w+3, w+6, …: interleaved in time.
			c.Errors = append(c.Errors, &nimbuspb.ComponentError{Task: int32(10 - w), TimeUnixMs: int64(w + 3*i), Error: fmt.Sprint(w + 3*i)})
		}
		ws = append(ws, &nimbuspb.WorkerReport{Components: []*nimbuspb.ComponentStats{c}})
	}
	got := sum(ws)
	if len(got) != 1 {
		t.Fatalf("got %d components, want split", len(got))
	}
	s := got[0]
	if s.GetProcessSamples() != 6 || s.GetProcessSampledNanos() != 30 || s.GetQueueDepth() != 9 || s.GetRetries() != 3 {
		t.Errorf("process samples %d/%d, queue depth %d, retries %d: want 6/30, 9, 3", s.GetProcessSamples(), s.GetProcessSampledNanos(), s.GetQueueDepth(), s.GetRetries())
	}
	if in := s.GetInputs(); len(in) != 2 || in[0].GetStream() != "default" || in[0].GetExecuted() != 30 || in[0].GetAcked() != 27 || in[1].GetExecuted() != 3 {
		t.Errorf("inputs: got %v, want default 30 executed (27 acked), side 3", in)
	}
	if out := s.GetOutputs(); len(out) != 1 || out[0].GetEmitted() != 60 || out[0].GetTransferred() != 15 {
		t.Errorf("outputs: got %v, want default 60 emitted, 15 transferred", out)
	}
	if ex := s.GetExecutors(); len(ex) != 3 || ex[0].GetFirstTask() != 8 || ex[2].GetFirstTask() != 10 {
		t.Errorf("executors: got %v, want tasks 8, 9, 10 in order", ex)
	}
	errs := s.GetErrors()
	if len(errs) != MaxErrors {
		t.Fatalf("errors: got %d, want the latest %d", len(errs), MaxErrors)
	}
	for i, e := range errs {
		if want := int64(30 - MaxErrors + i); e.GetTimeUnixMs() != want {
			t.Errorf("errors[%d] at %d, want %d (the latest, oldest first)", i, e.GetTimeUnixMs(), want)
		}
	}
	// The reports themselves are left as they were.
	if n := len(ws[0].GetComponents()[0].GetErrors()); n != 10 {
		t.Errorf("a report's errors: %d after the sum, want its 10", n)
	}
}

// A window subtracts every counter, per stream and per bucket, and keeps
// the gauges.
func TestSinceSubtractsCountersStreamsAndHistograms(t *testing.T) {
	hist := func(ms ...int) *nimbuspb.LatencyHistogram {
		var l metrics.Latency
		for _, m := range ms {
			l.Record(time.Duration(m) * time.Millisecond)
		}
		h := &nimbuspb.LatencyHistogram{}
		h.Buckets, h.Counts = l.Sparse()
		return h
	}
	then := &nimbuspb.ComponentStats{Component: "b", Kind: "bolt", Tasks: 3, Executed: 10, ProcessSampledNanos: 500, Capacity: 0.2,
		CompleteLatency: hist(1, 1, 5),
		Inputs: []*nimbuspb.StreamStats{
			{Stream: "default", Component: "a", Executed: 4},
			{Stream: "default", Component: "c", Executed: 6},
		}}
	now := &nimbuspb.ComponentStats{Component: "b", Kind: "bolt", Tasks: 3, Executed: 25, ProcessSampledNanos: 800, Capacity: 0.9,
		CompleteLatency: hist(1, 1, 1, 5, 9),
		Inputs: []*nimbuspb.StreamStats{
			{Stream: "default", Component: "a", Executed: 10},
			{Stream: "default", Component: "c", Executed: 6},
			{Stream: "other", Component: "a", Executed: 9},
		}}
	got := Since([]*nimbuspb.ComponentStats{now}, []*nimbuspb.ComponentStats{then})[0]
	if got.GetExecuted() != 15 || got.GetProcessSampledNanos() != 300 || got.GetTasks() != 3 || got.GetCapacity() != 0.9 {
		t.Errorf("since: executed %d, process nanos %d, tasks %d, capacity %v; want 15, 300, 3, 0.9",
			got.GetExecuted(), got.GetProcessSampledNanos(), got.GetTasks(), got.GetCapacity())
	}
	in := got.GetInputs()
	if len(in) != 3 || in[0].GetExecuted() != 6 || in[1].GetExecuted() != 0 || in[2].GetExecuted() != 9 {
		t.Errorf("since: inputs %v, want 6 from a, 0 from c, 9 on other", in)
	}
	l, err := metrics.LatencyFromSparse(got.GetCompleteLatency().GetBuckets(), got.GetCompleteLatency().GetCounts())
	if err != nil || l.Count() != 2 || l.Quantile(0) < 900*time.Microsecond || l.Quantile(1) < 8*time.Millisecond {
		t.Errorf("since: latencies %v (%d trees, %v to %v), want the 1 ms and 9 ms trees", err, l.Count(), l.Quantile(0), l.Quantile(1))
	}
	if now.GetExecuted() != 25 || now.GetInputs()[0].GetExecuted() != 10 {
		t.Errorf("since changed its input: %v", now)
	}
}
