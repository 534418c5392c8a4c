package gale

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// LocalTopology is a topology running in this process, started with
// StartLocal. Its methods are safe for concurrent use.
type LocalTopology struct {
	rt       *runtime
	stopOnce sync.Once
}

// StartLocal starts a topology in this process and returns once every
// spout is open and every bolt prepared. conf is the topology config layer.
func StartLocal(name string, conf Config, topo *Topology, opts RunOptions) (*LocalTopology, error) {
	rt, err := newRuntime(name, topo, conf, opts)
	if err != nil {
		return nil, err
	}
	if err := rt.start(); err != nil {
		return nil, err
	}
	return &LocalTopology{rt: rt}, nil
}

// Failed yields at most one error: the one that should stop the topology
// (a component panic under the kill-worker policy). Call Stop after it.
func (lt *LocalTopology) Failed() <-chan error { return lt.rt.fatal }

// Stop shuts the topology down in order: spouts are deactivated, in-flight
// trees get up to topology.shutdown.drain.timeout.secs to complete (the
// rest are failed with ErrShutdown), then every task is closed or cleaned
// up exactly once. Stop is idempotent and waits for every goroutine.
func (lt *LocalTopology) Stop() {
	lt.stopOnce.Do(func() {
		secs, _ := lt.rt.conf.Int(TopologyShutdownDrainTimeoutSecs)
		lt.rt.stop(time.Duration(secs) * time.Second)
	})
}

// Errors returns the most recent errors components reported (ReportError)
// or caused (panics, rejected emits), oldest first, and how many there were
// in all.
func (lt *LocalTopology) Errors() ([]ComponentError, int64) {
	lt.rt.errMu.Lock()
	defer lt.rt.errMu.Unlock()
	return slices.Clone(lt.rt.lastErrs), lt.rt.errCount.Load()
}

// Pending is the number of spout tuple trees in flight.
func (lt *LocalTopology) Pending() int { return int(lt.rt.pending()) }

// taskIDs returns the task ids of a component (bridge.Local).
func (lt *LocalTopology) taskIDs(component string) []int {
	return (&TopologyContext{rt: lt.rt}).ComponentTasks(component)
}

// waitQuiet waits until the topology has nothing left to do by itself
// (bridge.Local).
//
// It reads the in-flight count and each spout's flags one after the
// other while the executors run, so a spout freed by an ack and capped
// again by its next emits between two reads would look capped with
// nothing in flight, and its pending count could read 0 from between the
// two. A spout counts its wakes (unquiet) for that: a look is only
// believed if no spout woke while it was taken. A spout that stays capped
// cannot emit, and one that stays idle has had two more rounds emit
// nothing, so with nothing in flight the topology is quiet.
func (lt *LocalTopology) waitQuiet(ctx context.Context) (int, error) {
	rt := lt.rt
	poll := time.NewTicker(200 * time.Microsecond)
	defer poll.Stop()
	wait := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
			return nil
		}
	}
	type snap struct{ rounds, idle int64 }
	for {
		wakes := rt.spoutWakes()
		if rt.inflight.Load() == 0 && rt.spoutsQuiet() {
			// Confirm over two more rounds of every spout that nothing
			// was emitted meanwhile.
			before := make([]snap, len(rt.spoutExecs))
			for i, x := range rt.spoutExecs {
				before[i] = snap{x.rounds.Load(), x.idleRounds.Load()}
			}
			ok := true
			for i, x := range rt.spoutExecs {
				for x.rounds.Load() < before[i].rounds+2 && !x.capped.Load() {
					if err := wait(); err != nil {
						return 0, err
					}
				}
				if x.capped.Load() {
					continue
				}
				if x.idleRounds.Load() < before[i].idle+2 {
					ok = false
				}
			}
			if ok && rt.inflight.Load() == 0 && rt.spoutsQuiet() {
				pending := rt.pending()
				if rt.spoutWakes() == wakes {
					return int(pending), nil
				}
			}
		}
		if err := wait(); err != nil {
			return 0, err
		}
	}
}

func (rt *runtime) spoutsQuiet() bool {
	for _, x := range rt.spoutExecs {
		if x.idleRounds.Load() < 2 && !x.capped.Load() {
			return false
		}
	}
	return true
}

// spoutWakes sums the spouts' wakes (spoutExec.unquiet).
func (rt *runtime) spoutWakes() int64 {
	var n int64
	for _, x := range rt.spoutExecs {
		n += x.wakes.Load()
	}
	return n
}

// timeoutTick is the interval at which spouts check for timed-out trees:
// topology.message.timeout.secs / 10.
func (lt *LocalTopology) timeoutTick() time.Duration {
	return lt.rt.timeout / (pendingBuckets - 1)
}

// RunLocal runs a topology in this process until ctx ends, then shuts it
// down in order (see LocalTopology.Stop). It returns nil after a clean
// shutdown, or the error that stopped it: a failed Open or Prepare, or a
// component's panic under the kill-worker panic policy.
func RunLocal(ctx context.Context, name string, conf Config, topo *Topology, opts RunOptions) error {
	rt, err := newRuntime(name, topo, conf, opts)
	if err != nil {
		return err
	}
	// An Open or Prepare that waits on its TopologyContext's Context
	// gives up when ctx ends during start-up.
	stopCancel := context.AfterFunc(ctx, rt.cancel)
	err = rt.start()
	stopCancel()
	if err != nil {
		return err
	}
	lt := &LocalTopology{rt: rt}
	var fatal error
	select {
	case <-ctx.Done():
	case fatal = <-lt.rt.fatal:
	}
	if fatal != nil {
		lt.rt.stop(0)
		return fatal
	}
	lt.Stop()
	return nil
}

// replaceSpout returns a copy of the topology whose spout id is made by
// factory instead; the new spout must declare the same streams. galetest
// uses it (bridge.ReplaceSpout) to feed fixed inputs.
func (t *Topology) replaceSpout(id string, factory func() Spout) (*Topology, error) {
	if _, ok := t.spouts[id]; !ok {
		return nil, fmt.Errorf("%w: no spout %q to replace", ErrInvalidTopology, id)
	}
	b := NewTopologyBuilder()
	s := factory()
	if s == nil {
		return nil, fmt.Errorf("%w: replacement for spout %q: factory returned nil", ErrInvalidTopology, id)
	}
	streams := b.declare(id, s.DeclareOutputFields)
	if len(b.errs) > 0 {
		return nil, b.errs[0]
	}
	def, _ := t.Def.Component(id)
	if !slices.EqualFunc(streams, def.Streams, func(a, b StreamDef) bool {
		return a.ID == b.ID && a.Direct == b.Direct && slices.Equal(a.Fields, b.Fields)
	}) {
		return nil, fmt.Errorf("%w: replacement for spout %q declares streams %v, the topology's spout declares %v", ErrInvalidTopology, id, streams, def.Streams)
	}
	cp := &Topology{Def: cloneDef(t.Def), spouts: make(map[string]func() Spout), bolts: t.bolts, customs: t.customs, types: t.types}
	for k, v := range t.spouts {
		cp.spouts[k] = v
	}
	cp.spouts[id] = factory
	return cp, nil
}
