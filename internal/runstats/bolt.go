package runstats

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
	// component spent in Execute over the last window (Storm's capacity:
	// executed × mean execute latency / window); near 1, the bolt is
	// saturated. Summed over processes it is the largest.
	Capacity float64 `json:"capacity,omitempty"`
}

// ExecuteSampleEvery is the rate at which Execute calls are timed: one
// in this many, the first one included.
const ExecuteSampleEvery = 64

// ExecuteLatency is the mean time of the Execute calls timed, or 0 if
// none was.
func (b *Bolt) ExecuteLatency() time.Duration {
	if b.ExecuteSamples == 0 {
		return 0
	}
	return time.Duration(b.ExecuteSampledNanos / b.ExecuteSamples)
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
