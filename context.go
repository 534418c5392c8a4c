package gale

import "slices"

// The topology's structure, as Storm's TopologyContext gives it: what a
// join needs to know of its inputs (Sources, OutputFields), what a
// multilang handshake passes on (ComponentIDs, TaskToComponent) and where
// this task stands among its component's (ComponentTasks, TaskIndex). The
// answers are the same in every task and every worker process of the
// topology, since each worker plans the whole topology (internal/plan)
// and only runs its share of it. Every method returns a new value that
// the caller may modify without changing the runtime, and is safe for
// concurrent use.

// StreamID names a stream of a component, as Storm's GlobalStreamId.
type StreamID struct {
	Component string
	Stream    string
}

// String returns "component:stream".
func (s StreamID) String() string { return s.Component + ":" + s.Stream }

// ComponentIDs returns the ids of the topology's spouts and bolts, sorted.
// Unlike Storm's getComponentIds it lists no system component: Gale has
// no acker bolt (each spout task keeps its own trees), and the ticks'
// "__system" component has no task.
func (tc *TopologyContext) ComponentIDs() []string {
	out := make([]string, 0, len(tc.rt.plan.Components))
	for _, c := range tc.rt.plan.Components { // in id order
		out = append(out, c.ID)
	}
	return out
}

// Sources returns this component's inputs: each stream it subscribes to,
// with the grouping it subscribes with. A spout has none (an empty map).
// Ticks (topology.tick.tuple.freq.secs) are not inputs and are not listed.
func (tc *TopologyContext) Sources() map[StreamID]GroupingDef {
	out := map[StreamID]GroupingDef{}
	d, ok := tc.rt.topo.Def.Component(tc.componentID)
	if !ok {
		return out
	}
	for _, in := range d.Inputs {
		out[StreamID{in.Component, in.Stream}] = cloneGrouping(in.Grouping)
	}
	return out
}

// Targets returns where this component's output goes: by output stream,
// each subscribing bolt and the grouping it subscribes with. A stream no
// bolt subscribes to is not listed.
func (tc *TopologyContext) Targets() map[string]map[string]GroupingDef {
	out := map[string]map[string]GroupingDef{}
	for _, b := range tc.rt.topo.Def.Bolts {
		for _, in := range b.Inputs {
			if in.Component != tc.componentID {
				continue
			}
			if out[in.Stream] == nil {
				out[in.Stream] = map[string]GroupingDef{}
			}
			out[in.Stream][b.ID] = cloneGrouping(in.Grouping)
		}
	}
	return out
}

// OutputFields returns the fields a component declared for a stream, in
// order, or nil if the topology has no such component or the component no
// such stream. A stream declared with no fields gives an empty, non-nil
// slice.
func (tc *TopologyContext) OutputFields(component, stream string) []string {
	d, ok := tc.rt.topo.Def.Component(component)
	if !ok {
		return nil
	}
	s, ok := d.Stream(stream)
	if !ok {
		return nil
	}
	return append([]string{}, s.Fields...)
}

// ComponentTasks returns the task ids of a component, sorted, or nil for a
// component the topology does not have.
func (tc *TopologyContext) ComponentTasks(component string) []int {
	c := tc.rt.comps[component]
	if c == nil {
		return nil
	}
	out := make([]int, c.numTasks)
	for i := range out {
		out[i] = c.firstTask + i
	}
	return out
}

// ThisComponentTasks returns the task ids of this task's component.
func (tc *TopologyContext) ThisComponentTasks() []int { return tc.ComponentTasks(tc.componentID) }

// TaskToComponent maps every task id of the topology to its component's
// id.
func (tc *TopologyContext) TaskToComponent() map[int]string {
	out := make(map[int]string, tc.rt.plan.Tasks)
	for _, c := range tc.rt.plan.Components {
		for t := c.FirstTask; t < c.FirstTask+c.Tasks; t++ {
			out[t] = c.ID
		}
	}
	return out
}

// cloneGrouping returns g with its own copy of the fields.
func cloneGrouping(g GroupingDef) GroupingDef {
	g.Fields = slices.Clone(g.Fields)
	return g
}
