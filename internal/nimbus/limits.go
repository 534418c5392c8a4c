package nimbus

import (
	"fmt"

	"github.com/gale-stream/gale/internal/config"
	"github.com/gale-stream/gale/internal/plan"
)

// maxRecordBytes bounds a topology's record in etcd (its definition,
// config and parameters as JSON), well under etcd's request limit
// (1.5 MiB by default), so that the record and its updates are always
// written.
const maxRecordBytes = 512 << 10

// limits bound what one topology may plan: nimbus.tasks.perTopology and
// nimbus.executors.perTopology. The zero value bounds nothing.
type limits struct {
	tasks, executors int
}

func limitsOf(e *config.Effective) limits {
	return limits{tasks: intKey(e, config.NimbusTasksPerTopology), executors: intKey(e, config.NimbusExecutorsPerTopology)}
}

// check refuses a definition with more tasks or executors than the
// bounds, counting them as the plan would (a component's tasks capped by
// its max task parallelism, its executors by its tasks)
// without building the plan: a definition of 20,000,000 tasks costs
// nothing to refuse. The counts are int64 sums of int32 numbers from the
// wire, of fewer components than a gRPC message holds bytes: they cannot
// overflow.
func (l limits) check(d plan.Topology) error {
	var tasks, executors int64
	for _, c := range d.Components {
		t := int64(max(c.Tasks, 0))
		if c.MaxTaskParallelism > 0 {
			t = min(t, int64(c.MaxTaskParallelism))
		}
		tasks += t
		executors += min(int64(max(c.Parallelism, 0)), t)
	}
	switch {
	case l.tasks > 0 && tasks > int64(l.tasks):
		return fmt.Errorf("it has %d tasks, over the bound of %d tasks per topology (%s): "+
			"declare fewer tasks (SetNumTasks, topology.max.task.parallelism), or raise %s in the cluster's gale.yaml",
			tasks, l.tasks, config.NimbusTasksPerTopology, config.NimbusTasksPerTopology)
	case l.executors > 0 && executors > int64(l.executors):
		return fmt.Errorf("it has %d executors, over the bound of %d executors per topology (%s): "+
			"lower the parallelism hints, or raise %s in the cluster's gale.yaml",
			executors, l.executors, config.NimbusExecutorsPerTopology, config.NimbusExecutorsPerTopology)
	}
	return nil
}
