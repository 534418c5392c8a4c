package metrics

import (
	"cmp"
	"slices"
	"time"
)

// Bolt is one bolt component's counters in one process, summed over its
// tasks there, since the topology started. Tick tuples are not counted.
type Bolt struct {
	Component string `json:"component"`
	// Tasks is the number of the component's tasks counted.
	Tasks int `json:"tasks"`
	// Executed counts the input tuples handed to Execute; Acked and
	// Failed those the bolt acked and failed (a tuple whose Execute
	// panicked, under the panic policy, counts as failed).
	Executed int64 `json:"executed"`
	Acked    int64 `json:"acked"`
	Failed   int64 `json:"failed"`
	// Emitted counts the tuples the bolt emitted; Transferred the copies
	// of them sent to a task in another worker.
	Emitted     int64 `json:"emitted"`
	Transferred int64 `json:"transferred,omitempty"`
	// ExecuteSamples is how many Execute calls were timed (one in
	// ExecuteSampleEvery), ExecuteSampledNanos their total time: the
	// mean execute latency is their quotient (ExecuteLatency).
	ExecuteSamples      int64 `json:"execute_samples,omitempty"`
	ExecuteSampledNanos int64 `json:"execute_sampled_nanos,omitempty"`
	// Capacity is the share of wall time the busiest executor of the
	// component spent busy with input (Execute, ticks, wakeups, less the
	// time it waited to emit on a full queue) over the last window: what
	// Storm's capacity estimates (executed × mean execute latency /
	// window), measured, so between 0 and 1; near 1, the bolt is
	// saturated. Summed over processes it is the largest.
	Capacity float64 `json:"capacity,omitempty"`
	// ProcessSamples is how many input tuples were timed from their
	// arrival at the executor (its taking their batch off its queue) to
	// their ack, ProcessSampledNanos their total time: the mean process
	// latency is their quotient (ProcessLatency). The tuples timed are
	// those whose Execute is timed, when they are acked.
	ProcessSamples      int64 `json:"process_samples,omitempty"`
	ProcessSampledNanos int64 `json:"process_sampled_nanos,omitempty"`
	// QueueDepth is the tuples waiting in the executors' input queues
	// when the counters were read (a batch whose sender waits for room
	// included); QueueCapacity the tuples those queues hold in full
	// batches (topology.executor.receive.buffer.size each, rounded to
	// whole batches of topology.producer.batch.size, and a queue of its
	// own for the tuples from other workers in a worker of several).
	QueueDepth    int64 `json:"queue_depth,omitempty"`
	QueueCapacity int64 `json:"queue_capacity,omitempty"`
	// BackpressureNanos is the time the executors spent waiting to send
	// their emits on a full queue (downstream backpressure), on the
	// topology's clock.
	BackpressureNanos int64 `json:"backpressure_nanos,omitempty"`
	// Retries and DeadLetters are what a bolt that retries reports
	// (gale.RetryReporter: a sink).
	Retries     int64 `json:"retries,omitempty"`
	DeadLetters int64 `json:"dead_letters,omitempty"`
	// Errors are the component's last errors in this process, oldest
	// first, at most MaxErrors.
	Errors []Error `json:"errors,omitempty"`
	// Executors are the same counters per executor, in task order.
	Executors []Executor `json:"executors,omitempty"`
	// Inputs are the counters per input stream, Outputs per output
	// stream, each in component and stream order.
	Inputs  []Stream `json:"inputs,omitempty"`
	Outputs []Stream `json:"outputs,omitempty"`
}

// ExecuteSampleEvery is the rate at which Execute calls are timed by
// default (topology.stats.sample.rate unset): one in this many, the
// first one included.
const ExecuteSampleEvery = 64

// ProcessLatency is the mean process latency of the tuples timed, or 0
// if none was.
func (b *Bolt) ProcessLatency() time.Duration {
	return Mean(b.ProcessSamples, b.ProcessSampledNanos)
}

// ExecuteLatency is the mean time of the Execute calls timed, or 0 if
// none was.
func (b *Bolt) ExecuteLatency() time.Duration {
	return Mean(b.ExecuteSamples, b.ExecuteSampledNanos)
}

func (o *Bolt) add(b *Bolt) {
	o.Tasks += b.Tasks
	o.Executed += b.Executed
	o.Acked += b.Acked
	o.Failed += b.Failed
	o.Emitted += b.Emitted
	o.Transferred += b.Transferred
	o.ExecuteSamples += b.ExecuteSamples
	o.ExecuteSampledNanos += b.ExecuteSampledNanos
	o.Capacity = max(o.Capacity, b.Capacity)
	o.ProcessSamples += b.ProcessSamples
	o.ProcessSampledNanos += b.ProcessSampledNanos
	o.QueueDepth += b.QueueDepth
	o.QueueCapacity += b.QueueCapacity
	o.BackpressureNanos += b.BackpressureNanos
	o.Retries += b.Retries
	o.DeadLetters += b.DeadLetters
	o.Errors = MergeErrors(o.Errors, b.Errors, MaxErrors)
	o.Executors = append(o.Executors, b.Executors...)
	o.Inputs = AddStreams(o.Inputs, b.Inputs)
	o.Outputs = AddStreams(o.Outputs, b.Outputs)
}

// AddBolts sums b into a by component, keeping the result in component
// order; the capacity is the larger.
func AddBolts(a, b []Bolt) []Bolt {
	out := slices.Clone(a)
	for _, s := range b {
		i, found := slices.BinarySearchFunc(out, s.Component, func(x Bolt, c string) int { return cmp.Compare(x.Component, c) })
		if !found {
			out = slices.Insert(out, i, Bolt{Component: s.Component})
		}
		out[i].add(&s)
	}
	return out
}

// TotalBolts sums every component's counters into one, with no component
// name; the capacity is the largest.
func TotalBolts(bs []Bolt) Bolt {
	var t Bolt
	for _, b := range bs {
		t.add(&b)
	}
	return t
}
