package gale

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/gale-stream/gale/internal/metrics"
)

// Per-stream counters, kept with topology.stats.enabled. A bolt
// executor counts its inputs by the stream they came on, in a slot found
// by the tuple's stream number (streamInfo.wireID) in a table built at
// the start: no map lookup per tuple, and none at all for a bolt with a
// single input stream. Emitters count their outputs in their outStream.

// inCount is one input stream's counters, kept by the executor's
// goroutine.
type inCount struct {
	executed, acked, failed   int64
	samples, sampledNanos     int64
	procSamples, procNanos    int64
	pubExecuted, pubAcked     atomic.Int64
	pubFailed, pubSamples     atomic.Int64
	pubSampledNanos, pubProcS atomic.Int64
	pubProcNanos              atomic.Int64
}

// inputStats are a bolt executor's inputs: counts[slot[wireID]] for a
// tuple on stream wireID; keys[i] names counts[i].
type inputStats struct {
	slot    []int32 // by stream number; -1: not an input
	counts  []inCount
	keys    []metrics.Stream // Component and Stream only
	discard inCount          // what fits no slot: tick tuples
}

// newInputStats returns the input table of a bolt component, nil with
// the metrics off.
func newInputStats(rt *runtime, c *compInfo) *inputStats {
	if !rt.stats {
		return nil
	}
	in := &inputStats{slot: make([]int32, len(rt.wireStreams))}
	for i := range in.slot {
		in.slot[i] = -1
	}
	type key struct {
		wire  uint32
		input metrics.Stream
	}
	var keys []key
	for _, ws := range rt.wireStreams {
		for _, sub := range ws.comp.subs[ws.info.stream] {
			if sub.consumer == c {
				keys = append(keys, key{ws.info.wireID, metrics.Stream{Component: ws.comp.id, Stream: ws.info.stream}})
				break
			}
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.input.Component, b.input.Component), cmp.Compare(a.input.Stream, b.input.Stream))
	})
	in.counts = make([]inCount, len(keys))
	for i, k := range keys {
		in.slot[k.wire] = int32(i)
		in.keys = append(in.keys, k.input)
	}
	return in
}

// of returns the counters of t's input stream.
func (in *inputStats) of(t *Tuple) *inCount {
	if t.src == tickInfo {
		return &in.discard
	}
	if len(in.counts) == 1 {
		return &in.counts[0]
	}
	if s := in.slot[t.src.wireID]; s >= 0 {
		return &in.counts[s]
	}
	return &in.discard
}

// executed counts a batch's tuples as executed on their streams.
func (in *inputStats) executed(ts []*Tuple) {
	if len(in.counts) == 1 {
		in.counts[0].executed += int64(len(ts))
		return
	}
	for _, t := range ts {
		in.of(t).executed++
	}
}

func (in *inputStats) publish() {
	for i := range in.counts {
		c := &in.counts[i]
		c.pubExecuted.Store(c.executed)
		c.pubAcked.Store(c.acked)
		c.pubFailed.Store(c.failed)
		c.pubSamples.Store(c.samples)
		c.pubSampledNanos.Store(c.sampledNanos)
		c.pubProcS.Store(c.procSamples)
		c.pubProcNanos.Store(c.procNanos)
	}
}

// addTo adds the published counters to a component's inputs, by key.
func (in *inputStats) addTo(out []metrics.Stream) []metrics.Stream {
	var mine []metrics.Stream
	for i := range in.counts {
		c := &in.counts[i]
		s := in.keys[i]
		s.Executed, s.Acked, s.Failed = c.pubExecuted.Load(), c.pubAcked.Load(), c.pubFailed.Load()
		s.ExecuteSamples, s.ExecuteSampledNanos = c.pubSamples.Load(), c.pubSampledNanos.Load()
		s.ProcessSamples, s.ProcessSampledNanos = c.pubProcS.Load(), c.pubProcNanos.Load()
		mine = append(mine, s)
	}
	return metrics.AddStreams(out, mine)
}

// outputs returns the published output counters of an emitter's streams.
func (e *emitter) outputs() []metrics.Stream {
	var out []metrics.Stream
	for _, os := range e.outList {
		out = append(out, metrics.Stream{Component: e.comp.id, Stream: os.info.stream,
			Emitted: os.pubEmitted.Load(), Transferred: os.pubTransferred.Load()})
	}
	return out
}

// publishOutputs makes the emitter's per-stream counters visible.
func (e *emitter) publishOutputs() {
	for _, os := range e.outList {
		os.pubEmitted.Store(os.emitted)
		os.pubTransferred.Store(os.transferred)
	}
}
