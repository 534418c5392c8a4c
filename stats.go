package gale

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/runstats"
)

func init() {
	bridge.SpoutStats = func(running any) []runstats.Spout {
		switch r := running.(type) {
		case *LocalTopology:
			return r.rt.spoutStats()
		case *workerShare:
			return r.rt.spoutStats()
		}
		panic(fmt.Sprintf("runstats: %T is not a running topology", running))
	}
}

// spoutStats sums the counters of this process's spout executors by
// component, in component id order. Executors publish them after each
// round and each batch of acks, and a last time when they stop; the
// complete latencies as each tree is acked, from its emit (the clock
// read at the start of the emitting round) to the handling of its ack.
func (rt *runtime) spoutStats() []runstats.Spout {
	byComp := make(map[string]*runstats.Spout)
	for _, x := range rt.spoutExecs {
		s := byComp[x.comp.id]
		if s == nil {
			s = &runstats.Spout{Component: x.comp.id}
			byComp[x.comp.id] = s
		}
		s.Tasks += len(x.tasks)
		s.Emitted += x.pubEmitted.Load()
		s.Acked += x.pubAcked.Load()
		s.Failed += x.pubFailed.Load()
		s.Pending += x.pendingCount.Load()
		s.MaxPending += x.pubMaxPending.Load()
		x.latency.AddTo(&s.Latency)
	}
	out := make([]runstats.Spout, 0, len(byComp))
	for _, s := range byComp {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b runstats.Spout) int { return cmp.Compare(a.Component, b.Component) })
	return out
}
