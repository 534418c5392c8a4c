package supervisor

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gale-stream/gale/internal/metrics"
	"github.com/gale-stream/gale/internal/nimbuspb"
)

// TestComponentStatsMapping: every counter of a heartbeat's spouts and
// bolts lands in its field of the report, in component order, and the
// errors name the worker's host and port.
func TestComponentStatsMapping(t *testing.T) {
	spouts := []metrics.Spout{{
		Component: "s", Tasks: 2, Emitted: 1, Transferred: 2, Acked: 3, Failed: 4, Pending: 5,
		FailedByBolt: 6, TimedOut: 7, FailedShutdown: 8, MaxPending: 9,
		BackpressureNanos: 10, ThrottledNanos: 11, Retries: 12, DeadLetters: 13,
		Errors:    []metrics.Error{{Task: 3, TimeUnixMs: 1000, Error: "boom"}},
		Executors: []metrics.Executor{{FirstTask: 3, LastTask: 4, Emitted: 1, Transferred: 2, Acked: 3, Failed: 4}},
		Outputs:   []metrics.Stream{{Component: "s", Stream: "default", Emitted: 1, Transferred: 2}},
	}}
	bolts := []metrics.Bolt{{
		Component: "b", Tasks: 1, Executed: 21, Acked: 22, Failed: 23, Emitted: 24, Transferred: 25,
		ExecuteSamples: 26, ExecuteSampledNanos: 27, Capacity: 0.5,
		ProcessSamples: 28, ProcessSampledNanos: 29, QueueDepth: 30, QueueCapacity: 31, BackpressureNanos: 32,
		Retries: 33, DeadLetters: 34,
		Errors: []metrics.Error{{Task: 1, TimeUnixMs: 2000, Error: "bad"}, {Task: 1, TimeUnixMs: 3000, Error: "worse"}},
		Executors: []metrics.Executor{{FirstTask: 1, LastTask: 1, Emitted: 24, Transferred: 25, Acked: 22, Failed: 23, Executed: 21,
			Capacity: 0.5, ExecuteSamples: 26, ExecuteSampledNanos: 27, ProcessSamples: 28, ProcessSampledNanos: 29, QueueDepth: 30}},
		Inputs: []metrics.Stream{{Component: "s", Stream: "default", Executed: 21, Acked: 22, Failed: 23,
			ExecuteSamples: 26, ExecuteSampledNanos: 27, ProcessSamples: 28, ProcessSampledNanos: 29}},
		Outputs: []metrics.Stream{{Component: "b", Stream: "out", Emitted: 24, Transferred: 25}},
	}}
	got := componentStats(spouts, bolts, "h1", 6701)
	want := []*nimbuspb.ComponentStats{
		{
			Component: "b", Kind: "bolt", Tasks: 1, Executed: 21, Acked: 22, Failed: 23, Emitted: 24, Transferred: 25,
			ExecuteSamples: 26, ExecuteSampledNanos: 27, Capacity: 0.5,
			ProcessSamples: 28, ProcessSampledNanos: 29, QueueDepth: 30, QueueCapacity: 31, BackpressureNanos: 32,
			Retries: 33, DeadLetters: 34,
			Errors: []*nimbuspb.ComponentError{
				{Task: 1, TimeUnixMs: 2000, Error: "bad", Host: "h1", Port: 6701},
				{Task: 1, TimeUnixMs: 3000, Error: "worse", Host: "h1", Port: 6701},
			},
			Executors: []*nimbuspb.ExecutorStats{{FirstTask: 1, LastTask: 1, Host: "h1", Port: 6701, Emitted: 24, Transferred: 25,
				Acked: 22, Failed: 23, Executed: 21, Capacity: 0.5, ExecuteSamples: 26, ExecuteSampledNanos: 27,
				ProcessSamples: 28, ProcessSampledNanos: 29, QueueDepth: 30}},
			Inputs: []*nimbuspb.StreamStats{{Component: "s", Stream: "default", Executed: 21, Acked: 22, Failed: 23,
				ExecuteSamples: 26, ExecuteSampledNanos: 27, ProcessSamples: 28, ProcessSampledNanos: 29}},
			Outputs: []*nimbuspb.StreamStats{{Component: "b", Stream: "out", Emitted: 24, Transferred: 25}},
		},
		{
			Component: "s", Kind: "spout", Tasks: 2, Emitted: 1, Transferred: 2, Acked: 3, Failed: 4, Pending: 5,
			FailedByBolt: 6, TimedOut: 7, FailedShutdown: 8, MaxPending: 9,
			BackpressureNanos: 10, ThrottledNanos: 11, Retries: 12, DeadLetters: 13,
			Errors:    []*nimbuspb.ComponentError{{Task: 3, TimeUnixMs: 1000, Error: "boom", Host: "h1", Port: 6701}},
			Executors: []*nimbuspb.ExecutorStats{{FirstTask: 3, LastTask: 4, Host: "h1", Port: 6701, Emitted: 1, Transferred: 2, Acked: 3, Failed: 4}},
			Outputs:   []*nimbuspb.StreamStats{{Component: "s", Stream: "default", Emitted: 1, Transferred: 2}},
		},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d components, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("component %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}
