package gale

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/metrics"
)

func init() {
	bridge.SpoutStats = func(running any) []metrics.Spout {
		switch r := running.(type) {
		case *LocalTopology:
			return r.rt.spoutStats()
		case *workerShare:
			return r.rt.spoutStats()
		}
		panic(fmt.Sprintf("metrics: %T is not a running topology", running))
	}
	bridge.BoltStats = func(running any) []metrics.Bolt {
		switch r := running.(type) {
		case *LocalTopology:
			return r.rt.boltStats()
		case *workerShare:
			return r.rt.boltStats()
		}
		panic(fmt.Sprintf("metrics: %T is not a running topology", running))
	}
}

// RetryReporter is implemented by a spout or bolt that retries the
// messages it handles and gives some up to a dead-letter sink (package
// retry's Tracker counts both): the runtime shows them in the
// component's counters (the nimbus API's ComponentStats retries and
// dead_letters). RetryStats returns the retries scheduled and the
// messages given up since the task opened. The runtime calls it on the
// task's own goroutine, between calls of the component's other methods,
// each time it publishes the task's counters (after each round of
// NextTuple or batch of input): it must be cheap and must not block.
type RetryReporter interface {
	RetryStats() (retries, deadLetters int64)
}

// spoutStats sums the counters of this process's spout executors by
// component, in component id order. Executors publish them after each
// round and each batch of acks, and a last time when they stop; the
// complete latencies as each tree is acked, from its emit (the clock
// read at the start of the emitting round) to the handling of its ack.
func (rt *runtime) spoutStats() []metrics.Spout {
	byComp := make(map[string]*metrics.Spout)
	for _, x := range rt.spoutExecs {
		s := byComp[x.comp.id]
		if s == nil {
			s = &metrics.Spout{Component: x.comp.id}
			byComp[x.comp.id] = s
		}
		s.Tasks += len(x.tasks)
		s.Emitted += x.pubEmitted.Load()
		s.Transferred += x.pubTransferred.Load()
		s.Acked += x.pubAcked.Load()
		s.Failed += x.pubFailed.Load()
		s.FailedByBolt += x.pubFailedBy[failedByBolt].Load()
		s.TimedOut += x.pubFailedBy[failedTimeout].Load()
		s.FailedShutdown += x.pubFailedBy[failedShutdown].Load()
		s.Pending += x.pendingCount.Load()
		s.MaxPending += x.pubMaxPending.Load()
		x.latency.AddTo(&s.Latency)
		s.BackpressureNanos += x.pubBackpressure.Load()
		s.ThrottledNanos += x.pubThrottled.Load()
		s.Retries += x.pubRetries.Load()
		s.DeadLetters += x.pubDeadLetters.Load()
		if rt.stats {
			for _, t := range x.tasks {
				s.Outputs = metrics.AddStreams(s.Outputs, t.em.outputs())
			}
			s.Executors = append(s.Executors, metrics.Executor{
				FirstTask: int(x.first), LastTask: int(x.first) + len(x.tasks) - 1,
				Emitted: x.pubEmitted.Load(), Transferred: x.pubTransferred.Load(),
				Acked: x.pubAcked.Load(), Failed: x.pubFailed.Load(),
			})
		}
	}
	out := make([]metrics.Spout, 0, len(byComp))
	for _, s := range byComp {
		s.Errors = rt.componentErrors(s.Component)
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b metrics.Spout) int { return cmp.Compare(a.Component, b.Component) })
	return out
}

// boltStats sums the counters of this process's bolt executors by
// component, in component id order. Executors publish them after each
// unit of work (a batch of input, a tick, a wakeup) and a last time when
// they stop. A component's capacity is its busiest executor's.
func (rt *runtime) boltStats() []metrics.Bolt {
	now := rt.clock.Now().UnixNano()
	byComp := make(map[string]*metrics.Bolt)
	for _, x := range rt.boltExecs {
		b := byComp[x.comp.id]
		if b == nil {
			b = &metrics.Bolt{Component: x.comp.id}
			byComp[x.comp.id] = b
		}
		p := &x.pub
		executed, samples, sampledNanos := p.executed.Load(), p.samples.Load(), p.sampledNanos.Load()
		b.Tasks += len(x.tasks)
		b.Executed += executed
		b.Acked += p.acked.Load()
		b.Failed += p.failed.Load()
		b.Emitted += p.emitted.Load()
		b.Transferred += p.transferred.Load()
		b.ExecuteSamples += samples
		b.ExecuteSampledNanos += sampledNanos
		capacity := x.capacity.At(now, x.busyUntil(now))
		b.Capacity = max(b.Capacity, capacity)
		b.ProcessSamples += p.procSamples.Load()
		b.ProcessSampledNanos += p.procNanos.Load()
		b.BackpressureNanos += p.backpressure.Load()
		b.Retries += p.retries.Load()
		b.DeadLetters += p.deadLetters.Load()
		b.QueueCapacity += int64((cap(x.in) + cap(x.rin)) * rt.batchSize)
		if rt.stats {
			e := metrics.Executor{
				FirstTask: int(x.first), LastTask: int(x.first) + len(x.tasks) - 1,
				Emitted: p.emitted.Load(), Transferred: p.transferred.Load(), Acked: p.acked.Load(), Failed: p.failed.Load(),
				Executed: executed, Capacity: capacity, ExecuteSamples: samples, ExecuteSampledNanos: sampledNanos,
				ProcessSamples: p.procSamples.Load(), ProcessSampledNanos: p.procNanos.Load(),
				QueueDepth: max(rt.execs[x.idx].queued.Load(), 0),
			}
			b.QueueDepth += e.QueueDepth
			b.Executors = append(b.Executors, e)
			b.Inputs = x.inputs.addTo(b.Inputs)
			for _, t := range x.tasks {
				b.Outputs = metrics.AddStreams(b.Outputs, t.em.outputs())
			}
		}
	}
	out := make([]metrics.Bolt, 0, len(byComp))
	for _, b := range byComp {
		b.Errors = rt.componentErrors(b.Component)
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b metrics.Bolt) int { return cmp.Compare(a.Component, b.Component) })
	return out
}
