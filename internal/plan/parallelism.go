package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrParallelism is wrapped by the errors WithParallelism returns.
var ErrParallelism = errors.New("plan: invalid executor count")

// WithParallelism returns a copy of t in which each component that p
// names runs p's number of executors (a rebalance's -e component=N), as
// Storm's rebalance does: the tasks are fixed when the topology is
// submitted, and the executors can only be spread over them, so each
// number must be between 1 and the component's tasks (after its
// MaxTaskParallelism cap). A name that is not a component of t, or a
// number out of range, is an error wrapping ErrParallelism that names the
// component, the number and the tasks; the first one in name order is
// reported. t is not changed.
func (t Topology) WithParallelism(p map[string]int) (Topology, error) {
	if len(p) == 0 {
		return t, nil
	}
	out := t
	out.Components = slices.Clone(t.Components)
	for _, id := range slices.Sorted(maps.Keys(p)) {
		n := p[id]
		i := slices.IndexFunc(out.Components, func(c Component) bool { return c.ID == id })
		if i < 0 {
			return Topology{}, fmt.Errorf("%w: %s=%d: the topology has no component %q", ErrParallelism, id, n, id)
		}
		c := &out.Components[i]
		tasks := c.Tasks
		if c.MaxTaskParallelism > 0 {
			tasks = min(tasks, c.MaxTaskParallelism)
		}
		if n < 1 || n > tasks {
			return Topology{}, fmt.Errorf("%w: %s=%d: component %q has %d tasks, so it runs 1 to %d executors (its tasks are fixed at submit)",
				ErrParallelism, id, n, id, tasks, tasks)
		}
		c.Parallelism = n
	}
	return out, nil
}
