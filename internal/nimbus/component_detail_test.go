package nimbus

import (
	"fmt"
	"testing"

	"github.com/gale-stream/gale/internal/nimbuspb"
)

// TestSumComponentsDetail: the per-stream counters add up by stream, the
// executors list in task order, and the errors keep the latest
// maxComponentErrors over the workers, oldest first.
func TestSumComponentsDetail(t *testing.T) {
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
	got := sumComponents(ws)
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
	if len(errs) != maxComponentErrors {
		t.Fatalf("errors: got %d, want the latest %d", len(errs), maxComponentErrors)
	}
	for i, e := range errs {
		if want := int64(30 - maxComponentErrors + i); e.GetTimeUnixMs() != want {
			t.Errorf("errors[%d] at %d, want %d (the latest, oldest first)", i, e.GetTimeUnixMs(), want)
		}
	}
	// The reports themselves are left as they were.
	if n := len(ws[0].GetComponents()[0].GetErrors()); n != 10 {
		t.Errorf("a report's errors: %d after the sum, want its 10", n)
	}
}
