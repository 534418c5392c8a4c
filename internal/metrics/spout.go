package metrics

import (
	"cmp"
	"slices"
)

// Spout is one spout component's counters in one process, summed over its
// tasks there, since the topology started.
type Spout struct {
	Component string `json:"component"`
	// Tasks is the number of the component's tasks counted.
	Tasks int `json:"tasks"`
	// Emitted counts tuples emitted, with a message id or without.
	Emitted int64 `json:"emitted"`
	// Transferred counts the copies of those tuples sent to a task in
	// another worker.
	Transferred int64 `json:"transferred,omitempty"`
	// Acked counts trees completed (with acking off, every tuple emitted
	// with a message id), Failed trees failed by a bolt, by timeout or at
	// shutdown; Pending the trees in flight.
	Acked   int64 `json:"acked"`
	Failed  int64 `json:"failed"`
	Pending int64 `json:"pending"`
	// FailedByBolt, TimedOut and FailedShutdown split Failed by reason:
	// a bolt failed the tree (Fail, or a panic under the panic policy),
	// it outlived topology.message.timeout.secs, or it was in flight
	// when the topology stopped.
	FailedByBolt   int64 `json:"failed_by_bolt,omitempty"`
	TimedOut       int64 `json:"timed_out,omitempty"`
	FailedShutdown int64 `json:"failed_shutdown,omitempty"`
	// MaxPending is the most trees the tasks may have in flight, summed:
	// topology.max.spout.pending, fixed or as the auto-tuner last chose it
	// (topology.max.spout.pending.autotune); over Tasks, the value per
	// task. It is 0 when the key is unset and the runtime limits the
	// trees in flight by itself, and with acking off.
	MaxPending int64 `json:"max_pending,omitempty"`
	// Latency is the complete latency of the trees acked.
	Latency Latency `json:"latency,omitzero"`
	// BackpressureNanos is the time the executors spent waiting to send
	// their emits on a full queue (downstream backpressure);
	// ThrottledNanos the time they held back because every task's trees
	// in flight were at MaxPending (or the runtime's own limit), as read
	// from the topology's clock.
	BackpressureNanos int64 `json:"backpressure_nanos,omitempty"`
	ThrottledNanos    int64 `json:"throttled_nanos,omitempty"`
	// Retries and DeadLetters are what a spout that retries reports
	// (gale.RetryReporter): retries scheduled and messages given up to
	// its dead-letter sink.
	Retries     int64 `json:"retries,omitempty"`
	DeadLetters int64 `json:"dead_letters,omitempty"`
	// Errors are the component's last errors in this process, oldest
	// first, at most MaxErrors.
	Errors []Error `json:"errors,omitempty"`
	// Executors are the same counters per executor, in task order.
	Executors []Executor `json:"executors,omitempty"`
	// Outputs are the tuples emitted and transferred per output stream,
	// in stream order.
	Outputs []Stream `json:"outputs,omitempty"`
}

// Stream is one stream's counters: for an output stream (Component: the
// emitter), the tuples emitted on it and the copies transferred to
// another worker; for a bolt's input stream (Component: the stream's
// source), the tuples executed, acked and failed, with their sampled
// execute and process latencies.
type Stream struct {
	Component           string `json:"component"`
	Stream              string `json:"stream"`
	Emitted             int64  `json:"emitted,omitempty"`
	Transferred         int64  `json:"transferred,omitempty"`
	Executed            int64  `json:"executed,omitempty"`
	Acked               int64  `json:"acked,omitempty"`
	Failed              int64  `json:"failed,omitempty"`
	ExecuteSamples      int64  `json:"execute_samples,omitempty"`
	ExecuteSampledNanos int64  `json:"execute_sampled_nanos,omitempty"`
	ProcessSamples      int64  `json:"process_samples,omitempty"`
	ProcessSampledNanos int64  `json:"process_sampled_nanos,omitempty"`
}

// AddStreams sums b into a by component and stream, keeping the result
// in that order.
func AddStreams(a, b []Stream) []Stream {
	out := slices.Clone(a)
	for _, s := range b {
		i, found := slices.BinarySearchFunc(out, s, func(x, y Stream) int {
			return cmp.Or(cmp.Compare(x.Component, y.Component), cmp.Compare(x.Stream, y.Stream))
		})
		if !found {
			out = slices.Insert(out, i, Stream{Component: s.Component, Stream: s.Stream})
		}
		o := &out[i]
		o.Emitted += s.Emitted
		o.Transferred += s.Transferred
		o.Executed += s.Executed
		o.Acked += s.Acked
		o.Failed += s.Failed
		o.ExecuteSamples += s.ExecuteSamples
		o.ExecuteSampledNanos += s.ExecuteSampledNanos
		o.ProcessSamples += s.ProcessSamples
		o.ProcessSampledNanos += s.ProcessSampledNanos
	}
	return out
}

// Executor is one executor's counters: its tasks FirstTask to LastTask.
// A spout's has no Executed, latencies or queue.
type Executor struct {
	FirstTask           int     `json:"first_task"`
	LastTask            int     `json:"last_task"`
	Emitted             int64   `json:"emitted"`
	Transferred         int64   `json:"transferred,omitempty"`
	Acked               int64   `json:"acked"`
	Failed              int64   `json:"failed"`
	Executed            int64   `json:"executed,omitempty"`
	Capacity            float64 `json:"capacity,omitempty"`
	ExecuteSamples      int64   `json:"execute_samples,omitempty"`
	ExecuteSampledNanos int64   `json:"execute_sampled_nanos,omitempty"`
	ProcessSamples      int64   `json:"process_samples,omitempty"`
	ProcessSampledNanos int64   `json:"process_sampled_nanos,omitempty"`
	QueueDepth          int64   `json:"queue_depth,omitempty"`
}

// Error is an error a component's task reported (ReportError) or caused
// (a panic in its code, a rejected emit).
type Error struct {
	Task int `json:"task"`
	// TimeUnixMs is when, on the topology's clock.
	TimeUnixMs int64  `json:"time_unix_ms"`
	Error      string `json:"error"`
}

// MaxErrors is how many errors of a component a process keeps.
const MaxErrors = 10

// MergeErrors returns a's and b's errors, each oldest first, merged in
// time order (a's first at the same time) and cut to the newest max.
func MergeErrors(a, b []Error, max int) []Error {
	out := make([]Error, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.SortStableFunc(out, func(x, y Error) int { return cmp.Compare(x.TimeUnixMs, y.TimeUnixMs) })
	if len(out) > max {
		out = out[len(out)-max:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// AddSpouts sums b into a by component, keeping the result in component order.
func AddSpouts(a, b []Spout) []Spout {
	out := slices.Clone(a)
	for _, s := range b {
		i, found := slices.BinarySearchFunc(out, s.Component, func(x Spout, c string) int { return cmp.Compare(x.Component, c) })
		if !found {
			out = slices.Insert(out, i, Spout{Component: s.Component})
		}
		o := &out[i]
		o.Tasks += s.Tasks
		o.add(&s)
	}
	return out
}

func (o *Spout) add(s *Spout) {
	o.Emitted += s.Emitted
	o.Transferred += s.Transferred
	o.Acked += s.Acked
	o.Failed += s.Failed
	o.Pending += s.Pending
	o.FailedByBolt += s.FailedByBolt
	o.TimedOut += s.TimedOut
	o.FailedShutdown += s.FailedShutdown
	o.MaxPending += s.MaxPending
	o.Latency.Add(&s.Latency)
	o.BackpressureNanos += s.BackpressureNanos
	o.ThrottledNanos += s.ThrottledNanos
	o.Retries += s.Retries
	o.DeadLetters += s.DeadLetters
	o.Errors = MergeErrors(o.Errors, s.Errors, MaxErrors)
	o.Executors = append(o.Executors, s.Executors...)
	o.Outputs = AddStreams(o.Outputs, s.Outputs)
}

// TotalSpouts sums every component's counters into one, with no component name.
func TotalSpouts(ss []Spout) Spout {
	var t Spout
	for _, s := range ss {
		t.Tasks += s.Tasks
		t.add(&s)
	}
	return t
}
