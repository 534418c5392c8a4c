package gale

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gale-stream/gale/internal/bridge"
	"github.com/gale-stream/gale/internal/plan"
	"github.com/gale-stream/gale/internal/worker"
)

// The worker-process layer and the test hooks are not topology API: they
// change with the supervisor and the tests. Gale's internal packages reach
// them through internal/bridge, whose variables are set here.
func init() {
	bridge.StartWorker = func(name string, conf map[string]any, topo any, asg worker.Assignment, opts worker.Options, h bridge.Hooks) (worker.Handle, error) {
		t, ok := topo.(*Topology)
		if !ok {
			return nil, fmt.Errorf("gale: StartWorker wants a *gale.Topology, got %T", topo)
		}
		ro := RunOptions{Logger: opts.Logger, file: opts.FileConfig, hooks: h}
		if h.Clock != nil {
			c, ok := h.Clock.(Clock)
			if !ok {
				return nil, fmt.Errorf("gale: StartWorker wants a gale.Clock, got %T", h.Clock)
			}
			ro.Clock = c
		}
		ro.spoutMirrors = opts.SpoutMirrors
		w, err := startWorker(name, conf, t, asg, ro, opts.Listener)
		if err != nil {
			return nil, err // not a nil *workerShare in a non-nil Handle
		}
		return w, nil
	}
	bridge.PlanTopology = func(topo any, conf, file map[string]any, workers int) (plan.Topology, error) {
		return planWorkers(topo, conf, file, workers, nil)
	}
	bridge.PlanTopologyWith = planWorkers
	bridge.SetHooks = func(opts any, h bridge.Hooks) { opts.(*RunOptions).hooks = h }
	bridge.SetFileConfig = func(opts any, file map[string]any) { opts.(*RunOptions).file = file }
	bridge.LocalOf = func(lt any) bridge.Local { return localHooks{lt.(*LocalTopology)} }
	bridge.ReplaceSpout = func(topo any, id string, factory any) (any, error) {
		t, err := topo.(*Topology).replaceSpout(id, factory.(func() Spout))
		if err != nil {
			return nil, err
		}
		return t, nil
	}
}

// planWorkers is bridge.PlanTopologyWith: the plan's input of topo as
// workers workers would run it, with the executor counts parallelism
// overrides (nil: none).
func planWorkers(topo any, conf, file map[string]any, workers int, parallelism map[string]int) (plan.Topology, error) {
	t, ok := topo.(*Topology)
	if !ok {
		return plan.Topology{}, fmt.Errorf("gale: PlanTopology wants a *gale.Topology, got %T", topo)
	}
	if workers < 1 {
		return plan.Topology{}, fmt.Errorf("gale: PlanTopology: %d workers, want ≥ 1", workers)
	}
	addrs := make([]string, workers)
	for i := range addrs {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(i+1)
	}
	rt, err := newRuntimeWith("plan", t, conf, RunOptions{file: file}, &worker.Assignment{Workers: addrs, Parallelism: parallelism})
	if err != nil {
		return plan.Topology{}, err
	}
	defer rt.cancel()
	pt, _, err := rt.planTopology()
	return pt, err
}

// localHooks is a LocalTopology's bridge.Local.
type localHooks struct{ lt *LocalTopology }

func (l localHooks) WaitQuiet(ctx context.Context) (int, error) { return l.lt.waitQuiet(ctx) }
func (l localHooks) TimeoutTick() time.Duration                 { return l.lt.timeoutTick() }
func (l localHooks) TaskIDs(component string) []int             { return l.lt.taskIDs(component) }
