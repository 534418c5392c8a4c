package supervisor

import (
	"net"
	"slices"
	"strconv"

	"github.com/gale-stream/gale/internal/coord"
	"github.com/gale-stream/gale/internal/worker"
)

// DesiredFor returns the workers that assignments place on supervisor
// id: one per slot of its, with that worker's share of the assignment.
func DesiredFor(id string, assignments []coord.Assignment) []Desired {
	var ds []Desired
	for _, a := range assignments {
		addrs := make([]string, len(a.Workers))
		for i, s := range a.Workers {
			addrs[i] = net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
		}
		for i, s := range a.Workers {
			if s.Supervisor != id {
				continue
			}
			ds = append(ds, Desired{
				Port: s.Port, Topology: a.Topology, Name: a.Name, Version: a.Version, Active: a.Active,
				Artifact: Artifact(a.Artifact),
				Factory:  a.Factory, Params: a.Params, Config: a.Config,
				Assignment: worker.Assignment{Worker: i, Workers: slices.Clone(addrs), Executors: a.Executors,
					Parallelism: a.Parallelism, Secret: a.Secret, Version: a.Version},
			})
		}
	}
	return ds
}
